/** The bot profile: its fields (shared by the guided setup and the editor), the guided setup's two paths (open the
 * provider's app page from a composed link, or have Hangar create the app), and, once connected, the profile as
 * the provider has it, edited in place. */
import { useEffect, useId, useState, type FormEvent } from "react";
import type { BotProfileView, CreatedApp } from "../../generated/ops";
import { RpcError } from "../../rpc/errors";
import { Refusal } from "../../components/Outcome";
import { useAction, useWrite } from "../../data/mutations";
import { useRead } from "../../data/queries";
import { normalizeCommand, PROFILE_LABELS, PROFILE_LIMITS, profileEdits, type ProfileForm } from "./logic";

type Problems = ReturnType<typeof profileEdits>["problems"];

function formOf(profile: BotProfileView | undefined): ProfileForm {
  return {
    appName: profile?.appName ?? "",
    botDisplayName: profile?.botDisplayName ?? "",
    description: profile?.description ?? "",
    agentDescription: profile?.agentDescription ?? "",
    command: profile?.command ?? "",
    agentEnabled: profile?.agentEnabled ?? true,
  };
}

function ProfileFields(props: { form: ProfileForm; setForm(f: ProfileForm): void; problems: Problems }) {
  const id = useId();
  const { form, setForm, problems } = props;
  const text = (key: keyof typeof PROFILE_LIMITS, multiline = false) => {
    const inputId = `${id}-${key}`;
    const problem = problems[key];
    const describedBy = `${inputId}-hint${problem ? ` ${inputId}-problem` : ""}`;
    const common = {
      id: inputId,
      value: form[key],
      "aria-invalid": problem ? true : undefined,
      "aria-describedby": describedBy,
    } as const;
    const limit = PROFILE_LIMITS[key];
    const least = key === "appName" || key === "botDisplayName" ? 1 : 0;
    return (
      <div className="field" key={key}>
        <label htmlFor={inputId}>{PROFILE_LABELS[key]}</label>
        {multiline ? (
          <textarea {...common} rows={3} onChange={(e) => setForm({ ...form, [key]: e.target.value })} />
        ) : (
          <input {...common} type="text" onChange={(e) => setForm({ ...form, [key]: e.target.value })} />
        )}
        <span className="hint" id={`${inputId}-hint`}>
          {key === "command"
            ? `At most ${limit} characters; sent as /${normalizeCommand(form.command)}.`
            : least
              ? `1 to ${limit} characters.`
              : `At most ${limit} characters.`}
          {key === "agentDescription" && " Shown above a direct message with the bot."}
        </span>
        {problem && (
          <span className="error" id={`${inputId}-problem`} role="alert">
            {problem}
          </span>
        )}
      </div>
    );
  };
  return (
    <fieldset className="chat-profile">
      <legend>Bot profile</legend>
      <p className="hint">An empty box leaves its value unchanged.</p>
      {text("appName")}
      {text("botDisplayName")}
      {text("description", true)}
      {text("agentDescription", true)}
      {text("command")}
      <label className="check">
        <input
          type="checkbox"
          checked={form.agentEnabled}
          onChange={(e) => setForm({ ...form, agentEnabled: e.target.checked })}
        />
        Direct messages with the bot (the agent experience)
      </label>
    </fieldset>
  );
}

/** Before the workspace is connected: the bot profile and the two ways to make the provider's app from it. */
export function GuidedSetup(props: { workspaceId: string; provider: string; label: string }) {
  const write = useWrite();
  const id = useId();
  const defaults = useRead("chat.setupLink", { workspace_id: props.workspaceId, provider: props.provider });
  const [form, setForm] = useState<ProfileForm | null>(null);
  const [problems, setProblems] = useState<Problems>({});
  const [link, setLink] = useState<string | null>(null);
  const [refresh, setRefresh] = useState("");
  const [created, setCreated] = useState<CreatedApp | null>(null);
  const action = useAction();
  const shown = form ?? formOf(defaults.data?.profile);

  const checked = () => {
    const { edits, problems: found } = profileEdits(shown);
    setProblems(found);
    return Object.keys(found).length ? null : edits;
  };
  const openPage = async () => {
    setCreated(null);
    const edits = checked();
    if (!edits) return;
    const reply = await action.run(() =>
      write("chat.setupLink", { workspace_id: props.workspaceId, provider: props.provider, ...edits }),
    );
    if (reply) setLink(reply.url);
  };
  const createApp = async (e: FormEvent) => {
    e.preventDefault();
    setLink(null);
    const edits = checked();
    if (!edits) return;
    const token = refresh.trim();
    const reply = await action.run(() =>
      write("chat.createApp", {
        workspace_id: props.workspaceId,
        provider: props.provider,
        ...edits,
        ...(token ? { configRefreshToken: token } : {}),
      }),
    );
    setRefresh(""); // write-only: never kept in the page, sent or refused
    if (reply) {
      setCreated(reply);
      setForm(formOf(reply.profile));
    }
  };

  return (
    <section className="chat-setup" aria-labelledby={`${id}-title`}>
      <h3 id={`${id}-title`}>Guided setup</h3>
      <p className="hint">
        No {props.label} app yet? Describe the bot, then either open {props.label}'s page that creates the app from
        this profile, or let Hangar create it with an app configuration refresh token.
      </p>
      <Refusal error={defaults.error} />
      <form className="stack-form" aria-label="Bot profile for a new app" noValidate onSubmit={createApp}>
        <ProfileFields form={shown} setForm={setForm} problems={problems} />
        <div className="chat-paths">
          <div className="chat-path">
            <h4>Do it yourself</h4>
            <button type="button" className="secondary" disabled={action.busy} onClick={() => void openPage()}>
              Open the provider's app page
            </button>
            {link && (
              <p>
                <a href={link} target="_blank" rel="noopener noreferrer">
                  Create the app at {props.label} (opens in a new tab)
                </a>
              </p>
            )}
          </div>
          <div className="chat-path">
            <h4>Let Hangar do it</h4>
            <div className="field">
              <label htmlFor={`${id}-refresh`}>App configuration refresh token (optional)</label>
              <input
                id={`${id}-refresh`}
                type="password"
                autoComplete="off"
                spellCheck={false}
                value={refresh}
                placeholder="xoxe…"
                aria-describedby={`${id}-refresh-hint`}
                onChange={(e) => setRefresh(e.target.value)}
              />
              <span className="hint" id={`${id}-refresh-hint`}>
                From {props.label}'s app configuration tokens page; left empty, the one already stored is used. It is
                never shown again.
              </span>
            </div>
            <button type="submit" disabled={action.busy}>
              {action.busy ? "Working…" : "Create the app for me"}
            </button>
          </div>
        </div>
      </form>
      <Refusal error={action.error} />
      {created && (
        <div className="once" role="status" aria-label="App created">
          <p>
            The app is created (<code>{created.appId}</code>). Steps left:
          </p>
          <ol>
            {created.remainingSteps.map((s) => (
              <li key={s}>{s}</li>
            ))}
          </ol>
          {created.installUrl && (
            <p>
              <a href={created.installUrl} target="_blank" rel="noopener noreferrer">
                Install the app to your team (opens in a new tab)
              </a>
            </p>
          )}
        </div>
      )}
    </section>
  );
}

/** Once connected: the profile as the provider has it (read from the app's manifest), edited in place. */
export function BotProfileEditor(props: {
  workspaceId: string;
  provider: string;
  onCommand(command: string): void;
}) {
  const write = useWrite();
  const id = useId();
  const current = useRead("chat.botProfile", { workspace_id: props.workspaceId, provider: props.provider });
  const [form, setForm] = useState<ProfileForm | null>(null);
  const [problems, setProblems] = useState<Problems>({});
  const [saved, setSaved] = useState<{ reinstall: boolean } | null>(null);
  const action = useAction();
  const shown = form ?? formOf(current.data);
  const { onCommand } = props;
  const readCommand = current.data?.command;
  useEffect(() => {
    if (readCommand) onCommand(readCommand);
  }, [readCommand, onCommand]);

  const save = async (e: FormEvent) => {
    e.preventDefault();
    setSaved(null);
    const { edits, problems: found } = profileEdits(shown);
    setProblems(found);
    if (Object.keys(found).length) return;
    const reply = await action.run(() =>
      write("chat.updateBotProfile", { workspace_id: props.workspaceId, provider: props.provider, ...edits }),
    );
    if (reply) {
      setForm(formOf(reply.profile));
      props.onCommand(reply.profile.command);
      setSaved({ reinstall: Boolean(reply.remainingStep) });
    }
  };

  return (
    <section className="chat-setup" aria-labelledby={`${id}-title`}>
      <h3 id={`${id}-title`}>Bot profile</h3>
      {current.loading && !current.data && <p role="status">Reading the bot profile from the provider…</p>}
      {current.error && !current.data && (
        <>
          <ProfileReadRefusal error={current.error} />
          <button type="button" className="secondary" onClick={current.reload}>
            Read it again
          </button>
        </>
      )}
      {current.data && (
        <form className="stack-form" aria-label="Edit the bot profile" noValidate onSubmit={save}>
          <ProfileFields form={shown} setForm={setForm} problems={problems} />
          <button type="submit" disabled={action.busy}>
            {action.busy ? "Saving…" : "Save the bot profile"}
          </button>
        </form>
      )}
      <Refusal error={action.error} />
      {saved && (
        <p className={saved.reinstall ? "notice" : "chat-done"} role="status">
          {saved.reinstall ? "Saved. Reinstall the app to apply: the provider asks for it." : "Saved: the change is live."}
        </p>
      )}
    </section>
  );
}

function ProfileReadRefusal({ error }: { error: RpcError }) {
  return (
    <p className="error" role="alert">
      The bot profile could not be read: {error.message}
    </p>
  );
}
