/** Members and invites: the list with roles (read-only on the workspace's page, editable in its settings) and the
 * invite form, whose code is shown once. */
import { useId, useState, type FormEvent } from "react";
import type { MemberView } from "../../generated/ops";
import { workspaceRoleLabel } from "../../labels";
import { navigate } from "../../router";
import { ConfirmButton } from "../../components/ConfirmButton";
import { Refusal } from "../../components/Outcome";
import { useAction, useWrite } from "../../data/mutations";
import { useRead } from "../../data/queries";
import { ROLES } from "../../data/workspaces";

/** The roles a person at `role` may hand out in an invite (never above their own). */
function invitable(role: string): string[] {
  return ROLES.slice(0, ROLES.indexOf(role as (typeof ROLES)[number]) + 1);
}

export function InviteForm({ workspaceId, myRole }: { workspaceId: string; myRole: string }) {
  const write = useWrite();
  const action = useAction();
  const id = useId();
  const [role, setRole] = useState("member");
  const [code, setCode] = useState<{ code: string; role: string } | null>(null);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setCode(null);
    const made = await action.run(() => write("members.invite", { workspace_id: workspaceId, role }));
    if (made) setCode({ code: made.code, role });
  };
  return (
    <div className="invite">
      <form className="inline-form" onSubmit={submit} aria-label="Invite someone">
        <div className="field">
          <label htmlFor={`${id}-role`}>Role of the invited person</label>
          <select id={`${id}-role`} value={role} onChange={(e) => setRole(e.target.value)}>
            {invitable(myRole).map((r) => (
              <option key={r} value={r}>
                {workspaceRoleLabel(r)}
              </option>
            ))}
          </select>
        </div>
        <button type="submit" disabled={action.busy}>
          Create invite code
        </button>
      </form>
      <Refusal error={action.error} />
      {code && (
        <div className="once" role="status">
          <p>
            Invite code for a new <strong>{workspaceRoleLabel(code.role).toLowerCase()}</strong>: <code className="code">{code.code}</code>
          </p>
          <p className="hint">
            It is shown only this once. It works once, within 7 days: the person enters it as the pairing code on
            the connect screen of this server.
          </p>
        </div>
      )}
    </div>
  );
}

export function MemberList({ workspaceId }: { workspaceId: string }) {
  const members = useRead("members.list", { workspace_id: workspaceId });
  return (
    <>
      <Refusal error={members.error} />
      {members.data === undefined ? (
        !members.error && <p aria-busy="true">Loading members…</p>
      ) : (
        <ul className="list" aria-label="Members">
          {members.data.map((m) => (
            <li key={m.userId}>
              <div className="row-main">
                <strong>{m.displayName}</strong>
                {m.email && <span className="hint">{m.email}</span>}
              </div>
              <span className="badge">{workspaceRoleLabel(m.role)}</span>
            </li>
          ))}
        </ul>
      )}
    </>
  );
}

function MemberRow(props: { workspaceId: string; member: MemberView; me: string }) {
  const { member, workspaceId } = props;
  const write = useWrite();
  const action = useAction();
  const self = member.userId === props.me;
  const setRole = async (role: string) => {
    // A refused change leaves the picker at the role the server holds (it is controlled by the list's value).
    const args = { workspace_id: workspaceId, userId: member.userId, role };
    await action.run(() => write("members.setRole", args));
  };
  const remove = async () => {
    if (await action.run(() => write("members.remove", { workspace_id: workspaceId, userId: member.userId }))) {
      if (self) navigate("/", true);
    }
  };
  return (
    <tr>
      <th scope="row">
        {member.displayName}
        {self && <span className="hint"> (you)</span>}
        {member.email && <div className="hint">{member.email}</div>}
      </th>
      <td>
        <select
          aria-label={`Role of ${member.displayName}`}
          value={member.role}
          disabled={action.busy}
          onChange={(e) => void setRole(e.target.value)}
        >
          {ROLES.map((r) => (
            <option key={r} value={r}>
              {workspaceRoleLabel(r)}
            </option>
          ))}
        </select>
        <Refusal error={action.error} />
      </td>
      <td>
        <ConfirmButton
          label={self ? "Leave" : "Remove"}
          name={self ? "Leave this workspace" : `Remove ${member.displayName}`}
          question={self ? "Leave this workspace?" : `Remove ${member.displayName} from this workspace?`}
          busy={action.busy}
          onConfirm={() => void remove()}
        />
      </td>
    </tr>
  );
}

export function MemberRoles({ workspaceId, me }: { workspaceId: string; me: string }) {
  const members = useRead("members.list", { workspace_id: workspaceId });
  return (
    <>
      <Refusal error={members.error} />
      {members.data === undefined ? (
        !members.error && <p aria-busy="true">Loading members…</p>
      ) : (
        <div className="scroll" role="region" aria-label="Members and roles" tabIndex={0}>
          <table className="table">
            <thead>
              <tr>
                <th scope="col">Member</th>
                <th scope="col">Role</th>
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {members.data.map((m) => (
                <MemberRow key={m.userId} workspaceId={workspaceId} member={m} me={me} />
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}
