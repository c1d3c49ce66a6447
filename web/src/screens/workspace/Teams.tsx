/** The workspace's teams of agents: members, leader, dispatch mode; create and delete. */
import { useId, useState, type FormEvent } from "react";
import type { AgentView, TeamView } from "../../generated/ops";
import { useCall, useRpc } from "../../rpc/hooks";
import { ConfirmButton, Refusal, useAction } from "./common";

const DISPATCH_MODES: ReadonlyArray<readonly [string, string]> = [
  ["allParallel", "allParallel: every member at once"],
  ["manager", "manager: the leader, who delegates"],
];

function CreateTeam({ workspaceId, agents, onCreated }: {
  workspaceId: string;
  agents: AgentView[];
  onCreated(): void;
}) {
  const client = useRpc();
  const action = useAction();
  const id = useId();
  const [name, setName] = useState("");
  const [members, setMembers] = useState<string[]>([]);
  const [leader, setLeader] = useState("");
  const [mode, setMode] = useState("allParallel");
  const toggle = (agentId: string, on: boolean) =>
    setMembers((m) => (on ? [...m, agentId] : m.filter((x) => x !== agentId)));
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const args = {
      workspace_id: workspaceId,
      name,
      memberIds: members,
      leaderId: leader && members.includes(leader) ? leader : null,
      dispatchMode: mode,
    };
    if (await action.run(() => client.call("teams.create", args))) {
      setName("");
      setMembers([]);
      setLeader("");
      onCreated();
    }
  };
  return (
    <details className="adder">
      <summary>Create a team</summary>
      <form className="stack-form" onSubmit={submit} aria-label="New team">
        <div className="field">
          <label htmlFor={`${id}-name`}>Name</label>
          <input id={`${id}-name`} value={name} required onChange={(e) => setName(e.target.value)} />
        </div>
        <fieldset>
          <legend>Members</legend>
          {agents.length === 0 && <p className="hint">Create an agent first.</p>}
          {agents.map((a) => (
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
            <option value="">No leader</option>
            {agents
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
        <button type="submit" disabled={action.busy || !name.trim() || members.length === 0}>
          Create team
        </button>
        <Refusal error={action.error} />
      </form>
    </details>
  );
}

function TeamRow(props: {
  workspaceId: string;
  team: TeamView;
  names: Map<string, string>;
  canChange: boolean;
  onChanged(): void;
}) {
  const { team, names } = props;
  const client = useRpc();
  const action = useAction();
  const remove = async () => {
    if (await action.run(() => client.call("teams.delete", { workspace_id: props.workspaceId, teamId: team.id }))) {
      props.onChanged();
    }
  };
  return (
    <li>
      <div className="row-main">
        <strong>{team.name}</strong>
        <span className="badge">{team.dispatchMode}</span>
        <span className="hint wrap">
          {team.memberIds.map((m) => names.get(m) ?? m).join(", ")}
          {team.leaderId && ` · led by ${names.get(team.leaderId) ?? team.leaderId}`}
        </span>
      </div>
      {props.canChange && (
        <div className="row-actions">
          <ConfirmButton
            label="Delete"
            name={`Delete team ${team.name}`}
            question={`Delete the team “${team.name}”? Its agents stay.`}
            busy={action.busy}
            onConfirm={() => void remove()}
          />
        </div>
      )}
      <Refusal error={action.error} />
    </li>
  );
}

export function Teams({ workspaceId, agentsChanged, canChange }: {
  workspaceId: string;
  agentsChanged: number;
  canChange: boolean;
}) {
  const [bump, setBump] = useState(0);
  const reload = () => setBump((n) => n + 1);
  const teams = useCall("teams.list", { workspace_id: workspaceId }, bump + agentsChanged);
  const agents = useCall("agents.list", { workspace_id: workspaceId }, agentsChanged);
  const agentList = agents.data?.agents ?? [];
  const names = new Map(agentList.map((a) => [a.id, a.name]));
  const list = teams.data?.teams;
  return (
    <section aria-labelledby="teams-title" className="panel" id="teams">
      <h2 id="teams-title">Teams</h2>
      <Refusal error={teams.error} />
      {list === undefined ? (
        !teams.error && <p aria-busy="true">Loading teams…</p>
      ) : list.length === 0 ? (
        <p>No teams yet.</p>
      ) : (
        <ul className="list" aria-label="Teams">
          {list.map((t) => (
            <TeamRow
              key={t.id}
              workspaceId={workspaceId}
              team={t}
              names={names}
              canChange={canChange}
              onChanged={reload}
            />
          ))}
        </ul>
      )}
      {canChange && <CreateTeam workspaceId={workspaceId} agents={agentList} onCreated={reload} />}
    </section>
  );
}
