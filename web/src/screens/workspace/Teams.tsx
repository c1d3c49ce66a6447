/** The workspace's teams of agents: members, leader, dispatch mode; create, edit and delete. */
import { useId, useState, type FormEvent, type ReactNode } from "react";
import type { AgentView, TeamView } from "../../generated/ops";
import { DISPATCH_MODES, dispatchModeLabel } from "../../labels";
import { EditDeleteActions } from "../../components/EditDeleteActions";
import { LoadedList } from "../../components/LoadedList";
import { Refusal } from "../../components/Outcome";
import { useAction, useWrite } from "../../data/mutations";
import { useRead } from "../../data/queries";


interface TeamDraft {
  name: string;
  members: string[];
  leader: string;
  mode: string;
}

/** The team's fields, for a new team and for editing one: name, members, a leader among them, dispatch mode. */
function TeamForm(props: {
  label: string;
  submitLabel: string;
  agents: AgentView[];
  initial: TeamDraft;
  busy: boolean;
  onSubmit(draft: TeamDraft): Promise<boolean>;
  onCancel?(): void;
  children?: ReactNode;
}) {
  const id = useId();
  const [name, setName] = useState(props.initial.name);
  const [members, setMembers] = useState<string[]>(props.initial.members);
  const [leader, setLeader] = useState(props.initial.leader);
  const [mode, setMode] = useState(props.initial.mode);
  const toggle = (agentId: string, on: boolean) =>
    setMembers((m) => (on ? [...m, agentId] : m.filter((x) => x !== agentId)));
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    // A leader who is no longer a member leads nothing.
    const draft = { name: name.trim(), members, leader: members.includes(leader) ? leader : "", mode };
    if ((await props.onSubmit(draft)) && !props.onCancel) {
      setName("");
      setMembers([]);
      setLeader("");
    }
  };
  return (
    <form className="stack-form" onSubmit={submit} aria-label={props.label}>
      <div className="field">
        <label htmlFor={`${id}-name`}>Name</label>
        <input id={`${id}-name`} value={name} required onChange={(e) => setName(e.target.value)} />
      </div>
      <fieldset>
        <legend>Members</legend>
        {props.agents.length === 0 && <p className="hint">Create an agent first.</p>}
        {props.agents.map((a) => (
          <label className="check" key={a.id}>
            <input
              type="checkbox"
              checked={members.includes(a.id)}
              onChange={(e) => toggle(a.id, e.target.checked)}
            />{" "}
            {a.name}
          </label>
        ))}
      </fieldset>
      <div className="field">
        <label htmlFor={`${id}-leader`}>Leader</label>
        <select id={`${id}-leader`} value={leader} onChange={(e) => setLeader(e.target.value)}>
          <option value="">The first member</option>
          {props.agents
            .filter((a) => members.includes(a.id))
            .map((a) => (
              <option key={a.id} value={a.id}>
                {a.name}
              </option>
            ))}
        </select>
      </div>
      <div className="field">
        <label htmlFor={`${id}-mode`}>Dispatch mode</label>
        <select id={`${id}-mode`} value={mode} onChange={(e) => setMode(e.target.value)}>
          {DISPATCH_MODES.map(([m, label]) => (
            <option key={m} value={m}>
              {label}
            </option>
          ))}
        </select>
      </div>
      <div className="filter-buttons">
        <button type="submit" disabled={props.busy || !name.trim() || members.length === 0}>
          {props.submitLabel}
        </button>
        {props.onCancel && (
          <button type="button" className="secondary" onClick={props.onCancel}>
            Cancel
          </button>
        )}
      </div>
      {props.children}
    </form>
  );
}

const NEW_TEAM: TeamDraft = { name: "", members: [], leader: "", mode: "allParallel" };

function CreateTeam({ workspaceId, agents }: { workspaceId: string; agents: AgentView[] }) {
  const write = useWrite();
  const action = useAction();
  const create = async (d: TeamDraft) => {
    const args = {
      workspace_id: workspaceId,
      name: d.name,
      memberIds: d.members,
      leaderId: d.leader || null,
      dispatchMode: d.mode,
    };
    const made = await action.run(() => write("teams.create", args));
    return made !== undefined;
  };
  return (
    <details className="adder">
      <summary>Create a team</summary>
      <TeamForm
        label="New team"
        submitLabel="Create team"
        agents={agents}
        initial={NEW_TEAM}
        busy={action.busy}
        onSubmit={create}
      >
        <Refusal error={action.error} />
      </TeamForm>
    </details>
  );
}

function TeamRow(props: {
  workspaceId: string;
  team: TeamView;
  agents: AgentView[];
  names: Map<string, string>;
  canChange: boolean;
}) {
  const { team, names } = props;
  const write = useWrite();
  const action = useAction();
  const [editing, setEditing] = useState(false);
  const remove = async () => {
    await action.run(() => write("teams.delete", { workspace_id: props.workspaceId, teamId: team.id }));
  };
  const save = async (d: TeamDraft) => {
    const args = {
      workspace_id: props.workspaceId,
      teamId: team.id,
      name: d.name,
      memberIds: d.members,
      leaderId: d.leader || null,
      dispatchMode: d.mode,
    };
    const saved = await action.run(() => write("teams.update", args));
    if (saved) setEditing(false);
    return saved !== undefined;
  };
  return (
    <li>
      <div className="row-main">
        <strong>{team.name}</strong>
        <span className="badge">{dispatchModeLabel(team.dispatchMode)}</span>
        <span className="hint wrap">
          {team.memberIds.map((m) => names.get(m) ?? m).join(", ")}
          {team.leaderId && ` · led by ${names.get(team.leaderId) ?? team.leaderId}`}
        </span>
      </div>
      {props.canChange && !editing && (
        <EditDeleteActions
          what={`team ${team.name}`}
          question={`Delete the team “${team.name}”? Its agents stay.`}
          busy={action.busy}
          onEdit={() => {
            action.clear();
            setEditing(true);
          }}
          onDelete={() => void remove()}
        />
      )}
      {editing ? (
        <TeamForm
          label={`Edit team ${team.name}`}
          submitLabel="Save team"
          agents={props.agents}
          initial={{ name: team.name, members: team.memberIds, leader: team.leaderId ?? "", mode: team.dispatchMode }}
          busy={action.busy}
          onSubmit={save}
          onCancel={() => setEditing(false)}
        >
          <Refusal error={action.error} />
        </TeamForm>
      ) : (
        <Refusal error={action.error} />
      )}
    </li>
  );
}

export function Teams({ workspaceId, canChange }: { workspaceId: string; canChange: boolean }) {
  const teams = useRead("teams.list", { workspace_id: workspaceId });
  const agents = useRead("agents.list", { workspace_id: workspaceId });
  const agentList = agents.data?.agents ?? [];
  const names = new Map(agentList.map((a) => [a.id, a.name]));
  const list = teams.data?.teams;
  return (
    <section aria-labelledby="teams-title" className="panel" id="teams">
      <h2 id="teams-title">Teams</h2>
      <LoadedList
        noun="teams"
        items={list}
        error={teams.error}
        row={(t) => (
          <TeamRow
            key={t.id}
            workspaceId={workspaceId}
            team={t}
            agents={agentList}
            names={names}
            canChange={canChange}
          />
        )}
      />
      {canChange && <CreateTeam workspaceId={workspaceId} agents={agentList} />}
    </section>
  );
}
