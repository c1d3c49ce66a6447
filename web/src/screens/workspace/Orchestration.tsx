/** A ticket's orchestration on its page: start one (the agents that plan, work and synthesise), then its work DAG
 * live (each sub-ticket's state, what it waits for, its output) with approvals one by one or all, and the
 * deliverable. Read again on the orchestration's events and, while work goes on, every few seconds (a step's
 * progress has no event of its own). */
import { useId, useState, type FormEvent } from "react";
import type { NodeView, OrchestrationView } from "../../generated/ops";
import { Link } from "../../Link";
import { ticketPath } from "../../router";
import { Refusal } from "../../components/Outcome";
import { useAction, useWrite } from "../../data/mutations";
import { useRead } from "../../data/queries";
import { AddNode, RemoveNode } from "./OrchestrationEdit";
import "./orchestration.css";

const STATUS_LABELS: Record<string, string> = {
  planning: "Planning",
  planned: "Planned: approve sub-tickets to start",
  running: "Working",
  synthesizing: "Synthesising",
  completed: "Completed",
  failed: "Failed",
};

const NODE_LABELS: Record<string, string> = {
  planned: "Planned",
  waiting: "Waiting",
  awaitingApproval: "Awaiting approval",
  running: "Running",
  done: "Done",
  failed: "Failed",
  skipped: "Skipped",
};

const LIVE = new Set(["planning", "running", "synthesizing"]);

function outputText(output: unknown): string {
  return typeof output === "string" ? output : JSON.stringify(output, null, 2);
}

function StartOrchestration({ workspaceId, ticketId }: { workspaceId: string; ticketId: string }) {
  const write = useWrite();
  const action = useAction();
  const agents = useRead("agents.list", { workspace_id: workspaceId });
  const options = agents.data?.agents ?? [];
  const [worker, setWorker] = useState("");
  const [planner, setPlanner] = useState("");
  const id = useId();
  const start = async (e: FormEvent) => {
    e.preventDefault();
    const args = {
      workspace_id: workspaceId,
      ticketId,
      agentId: worker,
      ...(planner ? { plannerAgentId: planner } : {}),
    };
    await action.run(() => write("orchestration.start", args));
  };
  if (options.length === 0) return <p className="hint">Add an agent to the workspace to orchestrate this ticket.</p>;
  return (
    <form className="stack-form" onSubmit={start} aria-label="Orchestrate this ticket">
      <div className="field">
        <label htmlFor={`${id}-w`}>Agent that works the sub-tickets</label>
        <select id={`${id}-w`} value={worker} required onChange={(e) => setWorker(e.target.value)}>
          <option value="">Choose an agent</option>
          {options.map((a) => (
            <option key={a.id} value={a.id}>
              {a.name}
            </option>
          ))}
        </select>
      </div>
      <div className="field">
        <label htmlFor={`${id}-p`}>Planner and synthesis agent</label>
        <select id={`${id}-p`} value={planner} onChange={(e) => setPlanner(e.target.value)}>
          <option value="">The same agent</option>
          {options.map((a) => (
            <option key={a.id} value={a.id}>
              {a.name}
            </option>
          ))}
        </select>
      </div>
      <button type="submit" disabled={action.busy || !worker}>
        Orchestrate
      </button>
      <Refusal error={action.error} />
    </form>
  );
}

function Node(props: {
  workspaceId: string;
  orch: OrchestrationView;
  node: NodeView;
  canApprove: boolean;
}) {
  const { workspaceId, orch, node } = props;
  const write = useWrite();
  const action = useAction();
  const titles = new Map(orch.nodes.map((n) => [n.key, n.title]));
  const approve = async () => {
    const args = { workspace_id: workspaceId, orchestrationId: orch.id, nodeKeys: [node.key] };
    await action.run(() => write("orchestration.approve", args));
  };
  return (
    <li className="orch-node">
      <div className="orch-node-head">
        {node.subTicketId ? (
          <Link href={ticketPath(workspaceId, node.subTicketId)}>{node.title}</Link>
        ) : (
          <span>{node.title}</span>
        )}
        <span className="badge">{NODE_LABELS[node.state] ?? node.state}</span>
        {node.approved ? (
          <span className="hint">Approved</span>
        ) : (
          props.canApprove && (
            <button type="button" disabled={action.busy} onClick={() => void approve()}>
              Approve {node.title}
            </button>
          )
        )}
        {props.canApprove && orch.status === "planned" && orch.nodes.length > 1 && (
          <RemoveNode workspaceId={workspaceId} orch={orch} node={node} />
        )}
      </div>
      {node.dependsOn.length > 0 && (
        <p className="hint">After: {node.dependsOn.map((k) => titles.get(k) ?? k).join(", ")}</p>
      )}
      {node.output != null && (
        <details>
          <summary>Output of {node.title}</summary>
          <p className="prewrap">{outputText(node.output)}</p>
        </details>
      )}
      {node.error && <p className="hint">{node.error}</p>}
      <Refusal error={action.error} />
    </li>
  );
}

export function TicketOrchestration(props: { workspaceId: string; ticketId: string; canChange: boolean }) {
  const { workspaceId, ticketId, canChange } = props;
  const write = useWrite();
  const approval = useAction();
  const [live, setLive] = useState(true);
  const read = useRead("orchestration.get", { workspace_id: workspaceId, ticketId }, { everyMs: live ? 2000 : false });
  const orch = read.data;
  const isLive = orch !== undefined && LIVE.has(orch.status);
  if (orch !== undefined && isLive !== live) setLive(isLive);
  const notYet = read.error?.code === "not_found";
  const approveAll = async () => {
    if (!orch) return;
    await approval.run(() =>
      write("orchestration.approve", { workspace_id: workspaceId, orchestrationId: orch.id, all: true }),
    );
  };
  const canApprove = canChange && orch !== undefined && (orch.status === "planned" || orch.status === "running");
  return (
    <section aria-labelledby="orch-title" className="panel">
      <h2 id="orch-title">Orchestration</h2>
      {notYet ? (
        canChange ? (
          <StartOrchestration workspaceId={workspaceId} ticketId={ticketId} />
        ) : (
          <p className="hint">Not orchestrated.</p>
        )
      ) : (
        <Refusal error={read.error} />
      )}
      {orch && (
        <>
          <p>
            <span className="badge">{STATUS_LABELS[orch.status] ?? orch.status}</span>
          </p>
          {orch.error && <p className="error">{orch.error}</p>}
          {orch.nodes.length > 0 && (
            <ol className="list orch-dag" aria-label="Work DAG">
              {orch.nodes.map((n) => (
                <Node key={n.key} workspaceId={workspaceId} orch={orch} node={n} canApprove={canApprove} />
              ))}
            </ol>
          )}
          {canApprove && orch.status === "planned" && <AddNode workspaceId={workspaceId} orch={orch} />}
          {canApprove && orch.nodes.some((n) => !n.approved) && (
            <button type="button" disabled={approval.busy} onClick={() => void approveAll()}>
              Approve all
            </button>
          )}
          <Refusal error={approval.error} />
          {orch.deliverable && (
            <>
              <h3>Deliverable</h3>
              <p className="prewrap">{orch.deliverable}</p>
            </>
          )}
        </>
      )}
    </section>
  );
}
