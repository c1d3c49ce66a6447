/** One ticket (`/workspaces/<id>/tickets/<ticketId>`): its status, description and parent, edits, its sub-tickets
 * and filing new ones, and deleting it (with its sub-tickets). */
import { useId, useState, type FormEvent } from "react";
import type { TicketDetail } from "../../generated/ops";
import { IdDetails } from "../../IdDetails";
import { Link } from "../../Link";
import { navigate, ticketPath, workspacePath } from "../../router";
import { ConfirmButton } from "../../components/ConfirmButton";
import { Refusal } from "../../components/Outcome";
import { NotAMember, WorkspaceHeader } from "../../components/WorkspaceHeader";
import { when } from "../../components/time";
import { useAction, useWrite } from "../../data/mutations";
import { useRead } from "../../data/queries";
import { useWorkspace } from "../../data/workspaces";
import { RecordName, useNames, type NameKind } from "./names";
import { CreateTicket, statusLabel, StatusSelect } from "./tickets";
import { TicketOrchestration } from "./Orchestration";
import "./workspace.css";

const REPORTER_KINDS: NameKind[] = ["user", "agent"];

function ParentLink({ workspaceId, parentId }: { workspaceId: string; parentId: string }) {
  const parent = useRead("tickets.get", { workspace_id: workspaceId, ticketId: parentId });
  return (
    <p>
      Sub-ticket of{" "}
      <Link href={ticketPath(workspaceId, parentId)}>{parent.data?.title ?? (parent.error ? parentId : "…")}</Link>
    </p>
  );
}

function EditTicket({ workspaceId, ticket }: { workspaceId: string; ticket: TicketDetail }) {
  const write = useWrite();
  const action = useAction();
  const [title, setTitle] = useState(ticket.title);
  const [description, setDescription] = useState(ticket.description);
  const id = useId();
  const save = async (e: FormEvent) => {
    e.preventDefault();
    const args = { workspace_id: workspaceId, ticketId: ticket.id, title, description };
    await action.run(() => write("tickets.update", args));
  };
  return (
    <details className="adder">
      <summary>Edit title and description</summary>
      <form className="stack-form" onSubmit={save} aria-label="Edit ticket">
        <div className="field">
          <label htmlFor={`${id}-t`}>Title</label>
          <input id={`${id}-t`} value={title} required onChange={(e) => setTitle(e.target.value)} />
        </div>
        <div className="field">
          <label htmlFor={`${id}-d`}>Description</label>
          <textarea id={`${id}-d`} rows={4} value={description} onChange={(e) => setDescription(e.target.value)} />
        </div>
        <button type="submit" disabled={action.busy || !title.trim()}>
          Save
        </button>
        <Refusal error={action.error} />
      </form>
    </details>
  );
}

export default function TicketPage({ workspaceId, ticketId }: { workspaceId: string; ticketId: string }) {
  const write = useWrite();
  const { workspace, missing } = useWorkspace(workspaceId);
  const ticket = useRead("tickets.get", { workspace_id: workspaceId, ticketId });
  // Whoever filed it: a person (`user:<id>`) or an agent (`agent:<id>`), shown by name.
  const names = useNames(workspaceId, REPORTER_KINDS);
  const removal = useAction();
  const t = ticket.data;
  const canChange = workspace !== undefined && workspace.role !== "guest";
  const remove = async () => {
    const done = await removal.run(() => write("tickets.delete", { workspace_id: workspaceId, ticketId }));
    if (done) navigate(workspacePath(workspaceId), true);
  };
  if (missing) {
    return (
      <div className="ws">
        <WorkspaceHeader workspaceId={workspaceId} workspace={workspace} title="Ticket" />
        <NotAMember />
      </div>
    );
  }
  return (
    <div className="ws">
      <WorkspaceHeader
        workspaceId={workspaceId}
        workspace={workspace}
        title={t?.title ?? (ticket.error ? "Ticket not found" : "Ticket")}
      />
      <Refusal error={ticket.error} />
      {!t ? (
        !ticket.error && <p aria-busy="true">Loading the ticket…</p>
      ) : (
        <>
          <div className="ticket-meta">
            {canChange ? (
              <StatusSelect workspaceId={workspaceId} ticket={t} />
            ) : (
              <span className="badge">{statusLabel(t.status)}</span>
            )}
            <span className="hint">
              Filed by <RecordName refText={t.reporter} names={names} /> on {when(t.createdAt)}
            </span>
            <IdDetails
              items={[
                ["Ticket", t.id],
                ["Filed by", t.reporter],
              ]}
            />
          </div>
          {t.parentId && <ParentLink workspaceId={workspaceId} parentId={t.parentId} />}
          <section aria-labelledby="desc-title" className="panel">
            <h2 id="desc-title">Description</h2>
            {t.description ? <p className="prewrap">{t.description}</p> : <p className="hint">No description.</p>}
            {canChange && <EditTicket key={t.updatedAt} workspaceId={workspaceId} ticket={t} />}
          </section>
          <section aria-labelledby="subs-title" className="panel">
            <h2 id="subs-title">Sub-tickets</h2>
            {t.subTickets.length === 0 ? (
              <p>No sub-tickets yet.</p>
            ) : (
              <ul className="list" aria-label="Sub-tickets">
                {t.subTickets.map((s) => (
                  <li key={s.id}>
                    <Link href={ticketPath(workspaceId, s.id)}>{s.title}</Link>
                    <span className="badge">{statusLabel(s.status)}</span>
                  </li>
                ))}
              </ul>
            )}
            {canChange && (
              <CreateTicket workspaceId={workspaceId} parentId={t.id} label="Add sub-ticket" />
            )}
          </section>
          <TicketOrchestration workspaceId={workspaceId} ticketId={t.id} canChange={canChange} />
          {canChange && (
            <section aria-labelledby="delete-title" className="panel">
              <h2 id="delete-title">Delete</h2>
              <ConfirmButton
                label="Delete"
                name="Delete this ticket"
                question={
                  t.subTickets.length
                    ? `Delete this ticket and its ${t.subTickets.length} sub-ticket(s)?`
                    : "Delete this ticket?"
                }
                busy={removal.busy}
                onConfirm={() => void remove()}
              />
              <Refusal error={removal.error} />
            </section>
          )}
        </>
      )}
    </div>
  );
}
