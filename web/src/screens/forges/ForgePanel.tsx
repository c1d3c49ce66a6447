/** The workspace's forge in its settings (admins and owners): how it is connected (never the credentials), the
 * app's installations, the linked repos, a link that creates a GitHub App for Hangar, and the connect form (an app's
 * id and private key, or a token; write-only: the boxes are emptied once the forge has accepted them). */
import { useId, useState, type FormEvent } from "react";
import type { ForgeStatus } from "../../generated/ops";
import { ConfirmButton } from "../../components/ConfirmButton";
import { Refusal } from "../../components/Outcome";
import { useAction, useWrite } from "../../data/mutations";
import { useRead } from "../../data/queries";

type Kind = "app" | "token";

export default function ForgePanel({ workspaceId }: { workspaceId: string }) {
  const status = useRead("forge.status", { workspace_id: workspaceId });
  return (
    <div className="forge">
      {status.error && <Refusal error={status.error} />}
      {!status.data && !status.error && <p role="status">Reading the forge's status…</p>}
      {status.data && <ForgeState status={status.data} />}
      {status.data && <ConnectForge workspaceId={workspaceId} status={status.data} onChanged={status.reload} />}
    </div>
  );
}

function ForgeState({ status }: { status: ForgeStatus }) {
  if (!status.connected) {
    return (
      <p>
        Not connected. To connect as a GitHub App,{" "}
        <a href={status.setupUrl} target="_blank" rel="noreferrer">
          create the app on GitHub
        </a>{" "}
        (its permissions are filled in), install it on your repositories, then paste its id and private key below.
      </p>
    );
  }
  return (
    <div>
      <p role="status">
        Connected to <strong>{status.host}</strong>{" "}
        {status.kind === "app" ? `as GitHub App ${status.appId ?? ""}` : `with a token of ${status.login ?? "an unknown account"}`}.
      </p>
      {status.error && (
        <p className="error" role="alert">
          {status.error}
        </p>
      )}
      {status.note && <p className="hint">{status.note}</p>}
      {status.kind === "app" && (
        <>
          <h3>Installations</h3>
          {status.installations.length === 0 ? (
            <p className="hint">The app is installed nowhere yet: install it on the repositories steps will use.</p>
          ) : (
            <ul>
              {status.installations.map((i) => (
                <li key={i.id}>
                  {i.account} ({i.repositorySelection === "all" ? "all repositories" : "selected repositories"})
                </li>
              ))}
            </ul>
          )}
        </>
      )}
      <h3>Linked repos</h3>
      {status.links.length === 0 ? (
        <p className="hint">No repo of this workspace links to a repository on {status.host} yet.</p>
      ) : (
        <ul>
          {status.links.map((k) => (
            <li key={k.repoId}>
              {k.repoName} → {k.fullName} ({k.how === "origin" ? "from its origin" : "given by hand"})
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

function ConnectForge(props: { workspaceId: string; status: ForgeStatus; onChanged(): void }) {
  const write = useWrite();
  const action = useAction();
  const id = useId();
  const [kind, setKind] = useState<Kind>("app");
  const [baseUrl, setBaseUrl] = useState("");
  const [apiUrl, setApiUrl] = useState("");
  const [appId, setAppId] = useState("");
  const [privateKey, setPrivateKey] = useState("");
  const [token, setToken] = useState("");
  const [done, setDone] = useState<string | null>(null);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setDone(null);
    const where = {
      ...(baseUrl.trim() ? { baseUrl: baseUrl.trim() } : {}),
      ...(apiUrl.trim() ? { apiUrl: apiUrl.trim() } : {}),
    };
    const credentials = kind === "app" ? { appId: Number(appId), privateKey } : { token };
    const reply = await action.run(() =>
      write("forge.connect", { workspace_id: props.workspaceId, ...where, ...credentials }),
    );
    if (reply) {
      setPrivateKey("");
      setToken("");
      setDone("Connected: the credentials are stored and never shown again.");
    }
    props.onChanged();
  };

  const disconnect = async () => {
    setDone(null);
    const reply = await action.run(() => write("forge.disconnect", { workspace_id: props.workspaceId }));
    if (reply) setDone("Disconnected: the stored credentials are deleted.");
    props.onChanged();
  };

  return (
    <div className="forge-connect">
      <h3 id={`${id}-title`}>{props.status.connected ? "Connect again" : "Connect GitHub"}</h3>
      <form className="stack-form" aria-labelledby={`${id}-title`} onSubmit={submit}>
        <fieldset>
          <legend>Connect as</legend>
          <label>
            <input type="radio" name={`${id}-kind`} checked={kind === "app"} onChange={() => setKind("app")} /> A
            GitHub App (short-lived tokens per repository for steps)
          </label>
          <label>
            <input type="radio" name={`${id}-kind`} checked={kind === "token"} onChange={() => setKind("token")} />{" "}
            A token
          </label>
        </fieldset>
        <div className="field">
          <label htmlFor={`${id}-base`}>GitHub Enterprise Server address (optional)</label>
          <input
            id={`${id}-base`}
            type="url"
            value={baseUrl}
            placeholder="https://github.example.com"
            aria-describedby={`${id}-base-hint`}
            onChange={(e) => setBaseUrl(e.target.value)}
          />
          <span className="hint" id={`${id}-base-hint`}>
            Left empty: github.com.
          </span>
        </div>
        <div className="field">
          <label htmlFor={`${id}-api`}>API address (optional)</label>
          <input
            id={`${id}-api`}
            type="url"
            value={apiUrl}
            aria-describedby={`${id}-api-hint`}
            onChange={(e) => setApiUrl(e.target.value)}
          />
          <span className="hint" id={`${id}-api-hint`}>
            Left empty: api.github.com, or the server's address followed by /api/v3.
          </span>
        </div>
        {kind === "app" ? (
          <>
            <div className="field">
              <label htmlFor={`${id}-app`}>App id</label>
              <input
                id={`${id}-app`}
                inputMode="numeric"
                required
                value={appId}
                onChange={(e) => setAppId(e.target.value)}
              />
            </div>
            <div className="field">
              <label htmlFor={`${id}-key`}>Private key (the .pem file's text)</label>
              <textarea
                id={`${id}-key`}
                required
                rows={4}
                spellCheck={false}
                autoComplete="off"
                value={privateKey}
                onChange={(e) => setPrivateKey(e.target.value)}
              />
            </div>
          </>
        ) : (
          <div className="field">
            <label htmlFor={`${id}-token`}>Token</label>
            <input
              id={`${id}-token`}
              type="password"
              required
              autoComplete="off"
              spellCheck={false}
              value={token}
              onChange={(e) => setToken(e.target.value)}
            />
          </div>
        )}
        <button type="submit" disabled={action.busy}>
          {action.busy ? "Connecting…" : "Connect"}
        </button>
      </form>
      <Refusal error={action.error} />
      {done && <p role="status">{done}</p>}
      {props.status.connected && (
        <ConfirmButton
          label="Disconnect"
          name="Disconnect the forge"
          question="Disconnect the forge? Its stored credentials are deleted and steps get no forge token."
          busy={action.busy}
          onConfirm={() => void disconnect()}
        />
      )}
    </div>
  );
}
