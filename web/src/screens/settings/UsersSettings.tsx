/** `/settings/server/users`: everyone with an account on this server, deactivating one (their credentials stop
 * working at once), and who may create workspaces. */
import { useState } from "react";
import type { WorkspaceCreators } from "../../generated/ops";
import { Field } from "../../components/Field";
import { Outcome } from "../../components/Outcome";
import { useAction, useWrite } from "../../data/mutations";
import { useRead } from "../../data/queries";

const CREATORS: { value: WorkspaceCreators["who"]; label: string }[] = [
  { value: "serverOwner", label: "The server owner only" },
  { value: "members", label: "The server owner and members of any workspace (not guests)" },
  { value: "anyone", label: "Anyone signed in" },
];

function Creators() {
  const write = useWrite();
  const creators = useRead("server.workspaceCreators", {});
  const action = useAction();
  const change = (who: WorkspaceCreators["who"]) => {
    void action.report(async () => {
      creators.set(await write("server.setWorkspaceCreators", { who }));
      return "Saved.";
    });
  };
  return (
    <section aria-labelledby="creators" className="panel">
      <h2 id="creators">Who may create workspaces</h2>
      {creators.error && (
        <p className="error" role="alert">
          {creators.error.message}
        </p>
      )}
      {creators.data && (
        <Field label="Workspace creators">
          {(id) => (
            <select
              id={id}
              value={creators.data?.who}
              disabled={action.busy}
              onChange={(e) => change(e.target.value as WorkspaceCreators["who"])}
            >
              {CREATORS.map((c) => (
                <option key={c.value} value={c.value}>
                  {c.label}
                </option>
              ))}
            </select>
          )}
        </Field>
      )}
      <Outcome action={action} />
    </section>
  );
}

export function UsersSettings({ selfId }: { selfId: string }) {
  const write = useWrite();
  const users = useRead("server.users", {});
  const action = useAction();
  const [confirming, setConfirming] = useState<string | null>(null);
  const deactivate = (userId: string, name: string) => {
    setConfirming(null);
    void action.report(async () => {
      await write("server.deactivateUser", { userId });
      return `${name} is deactivated; their devices no longer work.`;
    });
  };
  return (
    <>
      <section aria-labelledby="users" className="panel">
        <h2 id="users">People</h2>
        {users.error && (
          <p className="error" role="alert">
            {users.error.message}
          </p>
        )}
        {!users.data && !users.error && <p aria-busy="true">Loading people…</p>}
        {users.data && (
          <table className="table">
            <caption className="sr-only">Everyone with an account on this server</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Email</th>
                <th scope="col">Sign-in</th>
                <th scope="col">State</th>
                <th scope="col">
                  <span className="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {users.data.map((u) => (
                <tr key={u.id}>
                  <td>
                    {u.displayName}
                    {u.id === selfId && <span className="badge">you</span>}
                  </td>
                  <td>{u.email ?? "—"}</td>
                  <td>{u.ssoIssuer ? `SSO (${u.ssoIssuer})` : "pairing"}</td>
                  <td>{u.active ? "active" : "deactivated"}</td>
                  <td>
                    {u.active &&
                      u.id !== selfId &&
                      (confirming === u.id ? (
                        <span className="actions">
                          <button type="button" onClick={() => deactivate(u.id, u.displayName)}>
                            Yes, deactivate {u.displayName}
                          </button>
                          <button type="button" className="secondary" onClick={() => setConfirming(null)}>
                            Cancel
                          </button>
                        </span>
                      ) : (
                        <button type="button" className="secondary" onClick={() => setConfirming(u.id)}>
                          Deactivate {u.displayName}
                        </button>
                      ))}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        <Outcome action={action} />
      </section>
      <Creators />
    </>
  );
}
