/** What the tickets board and a ticket's page share: the statuses, a ticket's status picker, the form that files a
 * ticket (or a sub-ticket), and how the board groups tickets. */
import { useId, useState, type FormEvent } from "react";
import type { TicketView } from "../../generated/ops";
import { Refusal } from "../../components/Outcome";
import { useAction, useWrite } from "../../data/mutations";

export const STATUSES: ReadonlyArray<readonly [string, string]> = [
  ["open", "Open"],
  ["inProgress", "In progress"],
  ["blocked", "Blocked"],
  ["done", "Done"],
  ["cancelled", "Cancelled"],
];

export function statusLabel(status: string): string {
  return STATUSES.find(([s]) => s === status)?.[1] ?? status;
}

export interface Board {
  /** Top-level tickets by status, in the board's column order; a status the client does not know gets a column too. */
  columns: Array<{ status: string; tickets: TicketView[] }>;
  /** The direct sub-tickets of each ticket. */
  children: Map<string, TicketView[]>;
}

export function boardOf(tickets: TicketView[]): Board {
  const children = new Map<string, TicketView[]>();
  const ids = new Set(tickets.map((t) => t.id));
  const roots: TicketView[] = [];
  for (const t of tickets) {
    if (t.parentId && ids.has(t.parentId)) {
      children.set(t.parentId, [...(children.get(t.parentId) ?? []), t]);
    } else {
      roots.push(t);
    }
  }
  const statuses = [...STATUSES.map(([s]) => s)];
  for (const t of roots) if (!statuses.includes(t.status)) statuses.push(t.status);
  const columns = statuses.map((status) => ({ status, tickets: roots.filter((t) => t.status === status) }));
  return { columns, children };
}

export function StatusSelect(props: { workspaceId: string; ticket: TicketView }) {
  const { workspaceId, ticket } = props;
  const write = useWrite();
  const action = useAction();
  const change = async (status: string) => {
    const args = { workspace_id: workspaceId, ticketId: ticket.id, status };
    await action.run(() => write("tickets.update", args));
  };
  return (
    <>
      <select
        aria-label={`Status of ${ticket.title}`}
        value={ticket.status}
        disabled={action.busy}
        onChange={(e) => void change(e.target.value)}
      >
        {STATUSES.map(([s, label]) => (
          <option key={s} value={s}>
            {label}
          </option>
        ))}
      </select>
      <Refusal error={action.error} />
    </>
  );
}

export function CreateTicket(props: {
  workspaceId: string;
  /** Tickets a new one may go under; when `parentId` is fixed the form files a sub-ticket of it. */
  parents?: TicketView[];
  parentId?: string;
  label: string;
}) {
  const write = useWrite();
  const action = useAction();
  const [title, setTitle] = useState("");
  const [description, setDescription] = useState("");
  const [parent, setParent] = useState("");
  const id = useId();
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const parentId = props.parentId ?? (parent || null);
    const made = await action.run(() =>
      write("tickets.create", { workspace_id: props.workspaceId, title, description, parentId }),
    );
    if (made) {
      setTitle("");
      setDescription("");
    }
  };
  return (
    <form className="stack-form" onSubmit={submit} aria-label={props.label}>
      <div className="field">
        <label htmlFor={`${id}-title`}>Title</label>
        <input id={`${id}-title`} value={title} required onChange={(e) => setTitle(e.target.value)} />
      </div>
      <div className="field">
        <label htmlFor={`${id}-desc`}>Description</label>
        <textarea id={`${id}-desc`} rows={2} value={description} onChange={(e) => setDescription(e.target.value)} />
      </div>
      {props.parents && props.parentId === undefined && (
        <div className="field">
          <label htmlFor={`${id}-parent`}>Sub-ticket of</label>
          <select id={`${id}-parent`} value={parent} onChange={(e) => setParent(e.target.value)}>
            <option value="">None (a top-level ticket)</option>
            {props.parents.map((t) => (
              <option key={t.id} value={t.id}>
                {t.title}
              </option>
            ))}
          </select>
        </div>
      )}
      <button type="submit" disabled={action.busy || !title.trim()}>
        {props.label}
      </button>
      <Refusal error={action.error} />
    </form>
  );
}
