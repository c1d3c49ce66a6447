/** What a run waits for before its program starts (the terminal image's first build, the enclosure's boot), with
 * the build's own step and progress: shown in the run's block in place of looking busy. */
import type { RunWaitView } from "./stream";
import "./runWait.css";

export function RunWait({ wait }: { wait: RunWaitView }) {
  const counted = wait.steps > 0;
  return (
    <div className="run-wait" role="status">
      <span>Waiting: {wait.text}</span>
      <progress
        aria-label="Waiting before the agent's program starts"
        max={counted ? wait.steps : undefined}
        value={counted ? wait.step : undefined}
      />
    </div>
  );
}
