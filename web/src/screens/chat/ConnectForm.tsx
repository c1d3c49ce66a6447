/** The connect dialog, rendered from the provider's descriptor: one password field per credential field, checked
 * here with the descriptor's own sentences before anything is sent. Tokens are write-only: the server never shows
 * them back, and the boxes are emptied once they are stored. */
import { useId, useRef, useState, type FormEvent } from "react";
import type { ProviderEntry } from "../../generated/ops";
import { ConfirmButton } from "../../components/ConfirmButton";
import { Refusal } from "../../components/Outcome";
import { useAction, useWrite } from "../../data/mutations";
import { credentialProblem, credentialsToSend } from "./logic";

export function ConnectForm(props: {
  workspaceId: string;
  entry: ProviderEntry;
  connected: boolean;
  /** Credentials are stored (any state but disconnected): they can be deleted. */
  stored: boolean;
  onChanged(): void;
}) {
  const { entry } = props;
  const write = useWrite();
  const action = useAction();
  const id = useId();
  const form = useRef<HTMLFormElement>(null);
  const [values, setValues] = useState<Record<string, string>>({});
  const [problems, setProblems] = useState<Record<string, string>>({});
  const [done, setDone] = useState<string | null>(null);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setDone(null);
    const found: Record<string, string> = {};
    for (const f of entry.fields) {
      const problem = credentialProblem(f, values[f.id] ?? "");
      if (problem) found[f.id] = problem;
    }
    setProblems(found);
    const first = entry.fields.find((f) => found[f.id]);
    if (first) {
      form.current?.querySelector<HTMLInputElement>(`#${CSS.escape(`${id}-${first.id}`)}`)?.focus();
      return; // nothing is sent
    }
    const reply = await action.run(() =>
      write("chat.connect", {
        workspace_id: props.workspaceId,
        provider: entry.provider,
        credentials: credentialsToSend(entry.fields, values),
      }),
    );
    if (reply) {
      setValues({});
      setDone(
        reply.state === "error"
          ? `Stored, but ${entry.label} refused them: ${reply.error ?? "unknown error"}`
          : `Stored. The connection starts: follow it in the status above.`,
      );
    }
    props.onChanged();
  };

  const disconnect = async () => {
    setDone(null);
    const reply = await action.run(() =>
      write("chat.disconnect", { workspace_id: props.workspaceId, provider: entry.provider }),
    );
    if (reply) setDone("Disconnected: the stored tokens are deleted.");
    props.onChanged();
  };

  return (
    <div className="chat-connect">
      <h3 id={`${id}-title`}>{props.connected ? "Replace the tokens" : `Connect ${entry.label}`}</h3>
      <p className="hint">
        Tokens are write-only: once stored they are never shown again, here or anywhere.
        {props.connected && " Connecting again needs the required tokens again."}
      </p>
      <form ref={form} className="stack-form" aria-labelledby={`${id}-title`} noValidate onSubmit={submit}>
        {entry.fields.map((f) => {
          const inputId = `${id}-${f.id}`;
          const problem = problems[f.id];
          return (
            <div className="field" key={f.id}>
              <label htmlFor={inputId}>
                {f.label} <span className="chat-mark">{f.required ? "(required)" : "(optional)"}</span>
              </label>
              <input
                id={inputId}
                type="password"
                autoComplete="off"
                spellCheck={false}
                aria-required={f.required}
                aria-invalid={problem ? true : undefined}
                aria-describedby={`${inputId}-purpose${problem ? ` ${inputId}-problem` : ""}`}
                value={values[f.id] ?? ""}
                placeholder={`${f.prefix}…`}
                onChange={(e) => {
                  const value = e.target.value;
                  setValues((v) => ({ ...v, [f.id]: value }));
                  if (problem) setProblems((p) => ({ ...p, [f.id]: "" }));
                }}
              />
              <span className="hint" id={`${inputId}-purpose`}>
                {f.purpose}.{!f.required && " Left empty, the stored value is kept."}
              </span>
              {problem && (
                <span className="error" id={`${inputId}-problem`} role="alert">
                  {problem}
                </span>
              )}
            </div>
          );
        })}
        <button type="submit" disabled={action.busy}>
          {action.busy ? "Connecting…" : "Connect"}
        </button>
      </form>
      <Refusal error={action.error} />
      {done && (
        <p className="chat-done" role="status">
          {done}
        </p>
      )}
      {props.stored && (
        <div className="chat-disconnect">
          <ConfirmButton
            label="Disconnect"
            name={`Disconnect ${entry.label}`}
            question={`Disconnect ${entry.label}? Its stored tokens are deleted and the bot stops answering.`}
            busy={action.busy}
            onConfirm={() => void disconnect()}
          />
        </div>
      )}
    </div>
  );
}
