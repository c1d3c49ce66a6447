/** The signed-in home (`/`): who you are and your workspaces, each a link to its page. */
import { Link } from "../Link";
import { useCall } from "../rpc/hooks";
import { workspacePath } from "../router";

export function Home() {
  const workspaces = useCall("workspaces.list", {});
  return (
    <>
      <h1>Workspaces</h1>
      {workspaces.error && (
        <p className="error" role="alert">
          {workspaces.error.message}
        </p>
      )}
      {workspaces.data === undefined ? (
        !workspaces.error && <p aria-busy="true">Loading workspaces…</p>
      ) : workspaces.data.length === 0 ? (
        <p>You are not a member of any workspace yet. Ask a workspace admin for an invite.</p>
      ) : (
        <ul className="list" aria-label="Your workspaces">
          {workspaces.data.map((w) => (
            <li key={w.id}>
              <Link href={workspacePath(w.id)}>{w.name}</Link>
              <span className="badge">{w.role}</span>
            </li>
          ))}
        </ul>
      )}
    </>
  );
}
