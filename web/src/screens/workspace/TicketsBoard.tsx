/** The tickets board: top-level tickets in a column per status, each with its sub-tickets; a status is changed
 * with the picker on its card (a keyboard can do it, unlike dragging). */
import { Link } from "../../Link";
import { ticketPath } from "../../router";
import { Refusal } from "../../components/Outcome";
import { useRead } from "../../data/queries";
import { boardOf, CreateTicket, statusLabel, StatusSelect } from "./tickets";

export function TicketsBoard({ workspaceId, canChange }: { workspaceId: string; canChange: boolean }) {
  const tickets = useRead("tickets.list", { workspace_id: workspaceId });
  const all = tickets.data?.tickets;
  const board = all ? boardOf(all) : null;
  return (
    <section aria-labelledby="tickets-title" className="panel" id="tickets">
      <h2 id="tickets-title">Tickets</h2>
      <Refusal error={tickets.error} />
      {!board ? (
        !tickets.error && <p aria-busy="true">Loading tickets…</p>
      ) : (
        <div className="board">
          {board.columns.map(({ status, tickets: column }) => (
            <section key={status} className="column" aria-labelledby={`col-${status}`} data-status={status}>
              <h3 id={`col-${status}`}>
                {statusLabel(status)} <span className="count">({column.length})</span>
              </h3>
              {column.length === 0 ? (
                <p className="hint">None</p>
              ) : (
                <ul className="cards">
                  {column.map((t) => {
                    const subs = board.children.get(t.id) ?? [];
                    return (
                      <li key={t.id} className="ticket-card">
                        <Link href={ticketPath(workspaceId, t.id)}>{t.title}</Link>
                        {subs.length > 0 && (
                          <ul className="subs" aria-label={`Sub-tickets of ${t.title}`}>
                            {subs.map((s) => (
                              <li key={s.id}>
                                <Link href={ticketPath(workspaceId, s.id)}>{s.title}</Link>{" "}
                                <span className="badge">{statusLabel(s.status)}</span>
                              </li>
                            ))}
                          </ul>
                        )}
                        {canChange && <StatusSelect workspaceId={workspaceId} ticket={t} />}
                      </li>
                    );
                  })}
                </ul>
              )}
            </section>
          ))}
        </div>
      )}
      {canChange && all && (
        <details className="adder">
          <summary>File a ticket</summary>
          <CreateTicket workspaceId={workspaceId} parents={all} label="File ticket" />
        </details>
      )}
    </section>
  );
}
