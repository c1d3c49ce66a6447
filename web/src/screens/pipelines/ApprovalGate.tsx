/** An approval gate waiting for its approver agent's decision. The gate resolves only through the approver's
 * `submit_output`, so a person decides by telling the approver: Approve and Reject post the person's decision
 * into the gate's space addressed to the approver (a mention, as the space's composer sends one), dispatching it
 * with the gate's output contract; the monitor then shows the gate resolve live. */
import { useId, useState } from "react";
import type { ApprovalWait, StepDetail } from "../../generated/ops";
import { Link } from "../../Link";
import { useAction, useWrite } from "../../data/mutations";
import { useRead } from "../../data/queries";
import { spacePath } from "../../router";

export type Decision = "approved" | "rejected";

/** The message that tells the approver the person's decision (addressed to it by name, as a mention). */
export function decisionMessage(agentName: string, decision: Decision, reason: string): string {
  const verb = decision === "approved" ? "I approve" : "I reject";
  const why = reason.trim() ? ` Reason: ${reason.trim()}` : "";
  return `@${agentName} ${verb} this step.${why} Submit decision \`${decision}\` with submit_output.`;
}

export function ApprovalGate(props: { workspaceId: string; step: StepDetail; approval: ApprovalWait; onSent(): void }) {
  const write = useWrite();
  const action = useAction();
  const ids = useId();
  const agents = useRead("agents.list", { workspace_id: props.workspaceId });
  const agent = agents.data?.agents.find((a) => a.id === props.approval.agentId);
  const name = agent?.name ?? "the approver";
  const [reason, setReason] = useState("");
  const { busy } = action;
  const problem = action.error?.message ?? null;
  const [sent, setSent] = useState<Decision | null>(null);

  const decide = async (decision: Decision) => {
    if (!agent) return;
    const args = {
      workspace_id: props.workspaceId,
      agentId: agent.id,
      spaceId: props.approval.spaceId,
      prompt: decisionMessage(agent.name, decision, reason),
      outputSchema: props.approval.outputSchema,
    };
    if ((await action.run(() => write("agents.run", args))) !== undefined) {
      setSent(decision);
      props.onSent();
    }
  };
  return (
    <div className="gate" role="group" aria-labelledby={`${ids}-what`}>
      <p id={`${ids}-what`}>
        <strong>{props.step.label}</strong> waits for the decision of its approver <strong>{name}</strong>
      </p>
      <p className="hint-inline">
        {name} decides in <Link href={spacePath(props.workspaceId, props.approval.spaceId)}>the gate's space</Link>{" "}
        with submit_output. Approve and Reject tell {name} your decision there; the gate resolves when it submits it.
      </p>
      <label htmlFor={`${ids}-reason`}>Reason (optional)</label>
      <input id={`${ids}-reason`} value={reason} onChange={(e) => setReason(e.target.value)} />
      <div className="row actions">
        <button type="button" disabled={busy || !agent} onClick={() => void decide("approved")}>
          Approve
        </button>
        <button type="button" className="danger" disabled={busy || !agent} onClick={() => void decide("rejected")}>
          Reject
        </button>
      </div>
      {sent && (
        <p role="status">
          Told {name} you {sent} it; waiting for its submit_output.
        </p>
      )}
      {agents.error && (
        <p className="error" role="alert">
          {agents.error.message}
        </p>
      )}
      {problem && (
        <p className="error" role="alert">
          {problem}
        </p>
      )}
    </div>
  );
}
