/** A pull request's space shows the pull request above its conversation: who opened it, which branch into which,
 * its state, a link to it on the forge, its head's checks and its diff (each file's patch, folded). The space is
 * a pull request's when `forge.pr` knows it by its space; any other space (or a reader who may not see the
 * diff: guests) shows nothing here. */
import type { CheckView, PullFileView, PullView } from "../../generated/ops";
import { useRead } from "../../data/queries";
import "./pullRequest.css";

const STATE_TEXT: Record<PullView["state"], string> = {
  open: "Open",
  closed: "Closed",
  merged: "Merged",
  vanished: "Gone from the forge",
};

export function PullRequestPanel({ workspaceId, spaceId }: { workspaceId: string; spaceId: string }) {
  const pull = useRead("forge.pr", { workspace_id: workspaceId, spaceId });
  if (!pull.data) return null;
  return <PullRequest pull={pull.data} />;
}

function PullRequest({ pull }: { pull: PullView }) {
  return (
    <section className="pull-request" aria-labelledby="pull-request-heading">
      <h2 id="pull-request-heading">
        Pull request #{pull.number} <span className="badge" data-state={pull.state}>{STATE_TEXT[pull.state]}</span>
        {pull.draft && <span className="badge">Draft</span>}
      </h2>
      <p>
        <strong>{pull.author}</strong> wants to merge <code>{pull.headRef}</code> into <code>{pull.baseRef}</code> of{" "}
        {pull.fullName} (head <code title={pull.headSha}>{pull.headSha.slice(0, 7)}</code>).{" "}
        <a href={pull.htmlUrl} target="_blank" rel="noreferrer">
          Open it on the forge
        </a>
      </p>
      {pull.error && (
        <p role="alert" className="pull-error">
          The forge's last answer: {pull.error}
        </p>
      )}
      {pull.body && <p className="pull-body">{pull.body}</p>}
      <Checks checks={pull.checks} />
      <Files files={pull.files} truncated={pull.filesTruncated} />
    </section>
  );
}

function checkText(check: CheckView): string {
  if (check.kind === "status") return check.status;
  return check.status === "completed" ? (check.conclusion ?? "completed") : check.status.replace("_", " ");
}

function Checks({ checks }: { checks: CheckView[] }) {
  return (
    <>
      <h3>Checks</h3>
      {checks.length === 0 ? (
        <p>No checks reported for this head.</p>
      ) : (
        <ul className="pull-checks">
          {checks.map((c) => (
            <li key={`${c.kind}:${c.name}`} data-outcome={checkText(c)}>
              {c.url ? (
                <a href={c.url} target="_blank" rel="noreferrer">
                  {c.name}
                </a>
              ) : (
                c.name
              )}
              : {checkText(c)}
            </li>
          ))}
        </ul>
      )}
    </>
  );
}

function lineKind(line: string): string {
  if (line.startsWith("@@")) return "hunk";
  if (line.startsWith("+")) return "add";
  if (line.startsWith("-")) return "del";
  return "ctx";
}

function Files({ files, truncated }: { files: PullFileView[]; truncated: boolean }) {
  const added = files.reduce((n, f) => n + f.additions, 0);
  const removed = files.reduce((n, f) => n + f.deletions, 0);
  return (
    <>
      <h3>
        Files changed ({files.length}
        {truncated ? "+" : ""}, +{added} −{removed})
      </h3>
      {truncated && <p>The pull request has more files than are shown here; the forge shows them all.</p>}
      {files.map((f) => (
        <details key={f.filename} className="pull-file">
          <summary>
            <code>{f.filename}</code> {f.status}, +{f.additions} −{f.deletions}
          </summary>
          {f.patch === null || f.patch === undefined ? (
            <p>No diff to show (a binary file, or too large for the forge to send).</p>
          ) : (
            <pre className="pull-diff" tabIndex={0} aria-label={`Diff of ${f.filename}`}>
              {f.patch.split("\n").map((line, i) => (
                <span key={i} className="diff-line" data-kind={lineKind(line)}>
                  {line}
                  {"\n"}
                </span>
              ))}
            </pre>
          )}
          {f.patchTruncated && <p>The diff is cut here; the forge shows the rest.</p>}
        </details>
      ))}
    </>
  );
}
