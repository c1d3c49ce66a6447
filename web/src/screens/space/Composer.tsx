/** The composer: a message to the space, or, when it @mentions agents, each of them run on it (`agents.run` for one,
 * `agents.runMany` for several: the message is posted once as the prompt, as the product does for a dispatched
 * agent, and every agent's turn streams into the space). Typing `@` suggests agents. */
import { useId, useLayoutEffect, useMemo, useRef, useState, type KeyboardEvent } from "react";
import type { AgentView } from "../../generated/ops";
import { useAction, useWrite } from "../../data/mutations";
import { complete, mentionAt, mentionedAgents, namesOf, suggest, type MentionQuery } from "./mentions";

interface Props {
  workspaceId: string;
  spaceId: string;
  agents: readonly AgentView[];
  disabled: string | null;
}

export function Composer({ workspaceId, spaceId, agents, disabled }: Props) {
  const write = useWrite();
  const action = useAction();
  const id = useId();
  const box = useRef<HTMLTextAreaElement>(null);
  const [text, setText] = useState("");
  const [mention, setMention] = useState<MentionQuery | null>(null);
  const [active, setActive] = useState(0);
  const sending = action.busy;
  const error = action.error?.message ?? null;
  // Where the caret goes once a picked mention is on screen. Placed as the new text is committed, before the
  // browser handles another key: placed later (say on the next frame), it would land in the middle of whatever
  // was typed since and scramble it.
  const caretAfterPick = useRef<number | null>(null);
  useLayoutEffect(() => {
    const caret = caretAfterPick.current;
    if (caret === null || !box.current) return;
    caretAfterPick.current = null;
    box.current.focus();
    box.current.setSelectionRange(caret, caret);
  }, [text]);

  const options = useMemo(() => (mention ? suggest(mention.query, agents) : []), [mention, agents]);
  const addressed = useMemo(() => mentionedAgents(text, agents), [text, agents]);
  const names = namesOf(addressed);
  const open = options.length > 0;

  const track = (value: string, caret: number) => {
    setText(value);
    setMention(mentionAt(value, caret));
    setActive(0);
  };
  const pick = (agent: AgentView) => {
    if (!mention) return;
    const done = complete(text, mention, agent.name);
    if (done.text === text) box.current?.setSelectionRange(done.caret, done.caret);
    else caretAfterPick.current = done.caret;
    setText(done.text);
    setMention(null);
  };
  const send = () => {
    const content = text.trim();
    if (!content || sending) return;
    const ws = { workspace_id: workspaceId, spaceId };
    const [only] = addressed;
    const sent = (): Promise<unknown> =>
      addressed.length > 1
        ? write("agents.runMany", { ...ws, agentIds: addressed.map((a) => a.id), prompt: content })
        : only
          ? write("agents.run", { ...ws, agentId: only.id, prompt: content })
          : write("messages.post", { ...ws, content });
    void action.run(sent).then((result) => {
      if (result === undefined) return; // refused: the text stays, the error is shown
      setText("");
      setMention(null);
    });
  };
  const onKey = (e: KeyboardEvent<HTMLTextAreaElement>) => {
    if (open) {
      if (e.key === "ArrowDown" || e.key === "ArrowUp") {
        e.preventDefault();
        const step = e.key === "ArrowDown" ? 1 : -1;
        setActive((a) => (a + step + options.length) % options.length);
        return;
      }
      if (e.key === "Enter" || e.key === "Tab") {
        const agent = options[active];
        if (agent) {
          e.preventDefault();
          pick(agent);
          return;
        }
      }
      if (e.key === "Escape") {
        e.preventDefault();
        setMention(null);
        return;
      }
    }
    if (e.key === "Enter" && !e.shiftKey && !e.nativeEvent.isComposing) {
      e.preventDefault();
      send();
    }
  };

  if (disabled) return <p className="composer-off">{disabled}</p>;
  return (
    <form
      className="composer"
      onSubmit={(e) => {
        e.preventDefault();
        send();
      }}
    >
      <label htmlFor={`${id}-text`} className="visually-hidden">
        Message
      </label>
      {open && (
        <ul className="mentions" id={`${id}-agents`} role="listbox" aria-label="Agents to mention">
          {options.map((agent, i) => (
            <li
              key={agent.id}
              id={`${id}-agent-${i}`}
              role="option"
              aria-selected={i === active}
              onMouseDown={(e) => {
                e.preventDefault();
                pick(agent);
              }}
            >
              <span className="author">@{agent.name}</span> <span className="hint">{agent.role}</span>
            </li>
          ))}
        </ul>
      )}
      <textarea
        id={`${id}-text`}
        ref={box}
        rows={2}
        data-shortcut-focus
        value={text}
        placeholder="Write a message; @ mentions an agent"
        aria-describedby={`${id}-hint`}
        aria-autocomplete="list"
        aria-controls={open ? `${id}-agents` : undefined}
        aria-activedescendant={open ? `${id}-agent-${active}` : undefined}
        onChange={(e) => track(e.target.value, e.target.selectionStart)}
        onKeyDown={onKey}
        onBlur={() => setMention(null)}
      />
      <p className="hint" id={`${id}-hint`}>
        {names
          ? `Sending runs ${names} on this message.`
          : "Enter sends, Shift+Enter starts a new line. Mention agents with @ to run them."}
      </p>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      <button type="submit" disabled={sending || !text.trim()}>
        {sending ? "Sending…" : names ? `Send to ${names}` : "Send"}
      </button>
    </form>
  );
}
