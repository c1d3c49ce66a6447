/** `/settings/server/storage`: what the data directory holds per workspace (its database, its files) and for the
 * server itself (`server.storage`), and how long events and audit rows are kept with what the last retention pass
 * deleted (`server.retention`). The `retention.*` settings are changed with `hangar admin setting`. */
import { when } from "../../components/time";
import { useRead } from "../../data/queries";

const UNITS = ["B", "KB", "MB", "GB", "TB"];

/** Bytes as a person reads them (powers of 1000, as disks are sold), the exact count in the title. */
export function size(bytes: number): string {
  let value = bytes;
  let unit = 0;
  while (value >= 1000 && unit < UNITS.length - 1) {
    value /= 1000;
    unit += 1;
  }
  return unit === 0 ? `${bytes} B` : `${value.toFixed(1)} ${UNITS[unit]}`;
}

function kept(days: number): string {
  return days === 0 ? "for ever" : `${days} day${days === 1 ? "" : "s"}`;
}

function Storage() {
  const storage = useRead("server.storage", {});
  if (storage.error) {
    return (
      <p className="error" role="alert">
        {storage.error.message}
      </p>
    );
  }
  if (!storage.data) return <p aria-busy="true">Measuring the data directory…</p>;
  const { server, workspaces, complete } = storage.data;
  const rows = [
    ...workspaces.map((w) => ({ key: w.id, label: w.name, used: w })),
    { key: "server", label: "The server itself", used: server },
  ];
  return (
    <>
      {!complete && (
        <p className="notice" role="status">
          The data directory is too large to measure in the time allowed: some files are not counted.
        </p>
      )}
      <table className="table">
        <caption className="sr-only">Bytes of the data directory per workspace and for the server</caption>
        <thead>
          <tr>
            <th scope="col">Workspace</th>
            <th scope="col">Database</th>
            <th scope="col">Files</th>
            <th scope="col">Total</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr key={r.key}>
              <th scope="row">{r.label}</th>
              <td title={`${r.used.databaseBytes} bytes`}>{size(r.used.databaseBytes)}</td>
              <td title={`${r.used.filesBytes} bytes`}>{size(r.used.filesBytes)}</td>
              <td>{size(r.used.databaseBytes + r.used.filesBytes)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}

/** `names`: workspace names by id (from the storage answer), so a pass's rows name their workspace. */
function Retention({ names }: { names: Map<string, string> }) {
  const retention = useRead("server.retention", {});
  if (retention.error) {
    return (
      <p className="error" role="alert">
        {retention.error.message}
      </p>
    );
  }
  if (!retention.data) return <p aria-busy="true">Loading…</p>;
  const { eventsDays, auditDays, lastPass } = retention.data;
  return (
    <>
      <dl className="facts">
        <div>
          <dt>Events kept</dt>
          <dd>{kept(eventsDays)}</dd>
        </div>
        <div>
          <dt>Audit rows kept</dt>
          <dd>{kept(auditDays)}</dd>
        </div>
        <div>
          <dt>Last retention pass</dt>
          <dd>{lastPass ? when(lastPass.startedAt) : "none yet"}</dd>
        </div>
      </dl>
      <p className="hint">
        Change them with <code>hangar admin setting retention.eventsDays DAYS</code> and{" "}
        <code>retention.auditDays</code> (0 keeps for ever). What is still needed is kept whatever its age.
      </p>
      {lastPass && (
        <table className="table">
          <caption className="sr-only">What the last retention pass deleted in each database</caption>
          <thead>
            <tr>
              <th scope="col">Database</th>
              <th scope="col">Events deleted</th>
              <th scope="col">Audit rows deleted</th>
              <th scope="col">Problem</th>
            </tr>
          </thead>
          <tbody>
            {lastPass.databases.map((d) => (
              <tr key={d.database}>
                <th scope="row">
                  {d.database === "server" ? "The server itself" : (names.get(d.database) ?? d.database)}
                </th>
                <td>{d.events}</td>
                <td>{d.audit}</td>
                <td>{d.error ?? "—"}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}

export function StorageSettings() {
  const storage = useRead("server.storage", {});
  const names = new Map((storage.data?.workspaces ?? []).map((w) => [w.id, w.name]));
  return (
    <>
      <section aria-labelledby="storage" className="panel">
        <h2 id="storage">Data directory</h2>
        <Storage />
      </section>
      <section aria-labelledby="retention" className="panel">
        <h2 id="retention">Retention</h2>
        <Retention names={names} />
      </section>
    </>
  );
}
