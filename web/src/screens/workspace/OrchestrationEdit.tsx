/** Editing a planned orchestration's work DAG before any approval starts the work: remove a sub-ticket (and the
 * edges to it), or add one after the sub-tickets it needs. The server checks the whole DAG (`orchestration.editDag`)
 * and its refusal is shown as it says it (a bad key, more than 50 sub-tickets). */
import { useId, useState, type FormEvent } from "react";
import type { NodeView, OrchestrationView } from "../../generated/ops";
import { Refusal } from "../../components/Outcome";
import { useAction, useWrite } from "../../data/mutations";

type WireNode = { key: string; title: string; description: string; dependsOn: string[]; agentId?: string };

function wire(n: NodeView): WireNode {
  return {
    key: n.key,
    title: n.title,
    description: n.description,
    dependsOn: n.dependsOn,
    ...(n.agentId ? { agentId: n.agentId } : {}),
  };
}

/** The DAG without `key`: its node, and every edge to it. */
export function withoutNode(nodes: NodeView[], key: string): WireNode[] {
  return nodes
    .filter((n) => n.key !== key)
    .map((n) => ({ ...wire(n), dependsOn: n.dependsOn.filter((d) => d !== key) }));
}

export function RemoveNode(props: { workspaceId: string; orch: OrchestrationView; node: NodeView }) {
  const { workspaceId, orch, node } = props;
  const write = useWrite();
  const action = useAction();
  const remove = async () => {
    const nodes = withoutNode(orch.nodes, node.key);
    await action.run(() => write("orchestration.editDag", { workspace_id: workspaceId, orchestrationId: orch.id, nodes }));
  };
  return (
    <>
      <button type="button" className="secondary" disabled={action.busy} onClick={() => void remove()}>
        Remove {node.title}
      </button>
      <Refusal error={action.error} />
    </>
  );
}

export function AddNode({ workspaceId, orch }: { workspaceId: string; orch: OrchestrationView }) {
  const write = useWrite();
  const action = useAction();
  const [key, setKey] = useState("");
  const [title, setTitle] = useState("");
  const [description, setDescription] = useState("");
  const [after, setAfter] = useState<string[]>([]);
  const id = useId();
  const add = async (e: FormEvent) => {
    e.preventDefault();
    const nodes = [...orch.nodes.map(wire), { key, title, description, dependsOn: after }];
    const done = await action.run(() =>
      write("orchestration.editDag", { workspace_id: workspaceId, orchestrationId: orch.id, nodes }),
    );
    if (done) {
      setKey("");
      setTitle("");
      setDescription("");
      setAfter([]);
    }
  };
  const toggle = (k: string, on: boolean) => setAfter((was) => (on ? [...was, k] : was.filter((x) => x !== k)));
  return (
    <details className="adder">
      <summary>Add a sub-ticket to the plan</summary>
      <form className="stack-form" onSubmit={add} aria-label="Add a sub-ticket to the plan">
        <div className="field">
          <label htmlFor={`${id}-k`}>Key (lower-case letters, digits and _)</label>
          <input id={`${id}-k`} value={key} required onChange={(e) => setKey(e.target.value)} />
        </div>
        <div className="field">
          <label htmlFor={`${id}-t`}>Title</label>
          <input id={`${id}-t`} value={title} required onChange={(e) => setTitle(e.target.value)} />
        </div>
        <div className="field">
          <label htmlFor={`${id}-d`}>Description</label>
          <textarea id={`${id}-d`} rows={3} value={description} onChange={(e) => setDescription(e.target.value)} />
        </div>
        {orch.nodes.length > 0 && (
          <fieldset className="orch-after">
            <legend>After</legend>
            {orch.nodes.map((n) => (
              <label key={n.key}>
                <input
                  type="checkbox"
                  checked={after.includes(n.key)}
                  onChange={(e) => toggle(n.key, e.target.checked)}
                />{" "}
                {n.title}
              </label>
            ))}
          </fieldset>
        )}
        <button type="submit" disabled={action.busy || !key.trim() || !title.trim()}>
          Add
        </button>
        <Refusal error={action.error} />
      </form>
    </details>
  );
}
