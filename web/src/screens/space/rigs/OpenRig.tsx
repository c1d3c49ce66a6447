/** Opening a rig from a space: its terminal (one per space, reused), or a browser with the engine chosen by the
 * browser's name (one per engine per space: opening one the space has selects it). `rig.open` answers once the
 * rig booted; a rig still booting a moment after the ask (a first boot builds its image pack: minutes) has its tab
 * opened at once, following the boot's steps. */
import { useState } from "react";
import type { RigRow } from "../../../generated/ops";
import { useAction, useWrite } from "../../../data/mutations";
import { BOOT_PEEK_MS, bootingRig } from "./booting";
import { ENGINES, engineLabel, type EngineValue } from "./engines";
import "./rigs.css";

interface Props {
  workspaceId: string;
  spaceId: string;
  rigs: RigRow[];
  /** Why nothing can be opened (an archived space), or null. */
  disabled: string | null;
  onOpened(rigId: string): void;
}

export function OpenRig({ workspaceId, spaceId, rigs, disabled, onOpened }: Props) {
  const write = useWrite();
  const action = useAction();
  const [engine, setEngine] = useState<EngineValue>("engine-a");
  const [opening, setOpening] = useState<string | null>(null);
  const error = action.error?.message ?? null;

  const open = (what: string, surface: "terminal" | "browser", chosen?: EngineValue) => {
    setOpening(what);
    const peek = window.setTimeout(() => {
      bootingRig(write, workspaceId, spaceId, surface, chosen ?? null).then((rigId) => {
        if (rigId) onOpened(rigId);
      }, () => undefined);
    }, BOOT_PEEK_MS);
    const args = { workspace_id: workspaceId, spaceId, surface, ...(chosen ? { engine: chosen } : {}) };
    void action.run(() => write("rig.open", args)).then((opened) => {
      if (opened) onOpened(opened.rigId);
      window.clearTimeout(peek);
      setOpening(null);
    });
  };

  const hasTerminal = rigs.some((r) => r.surface === "terminal");
  const busy = opening !== null || disabled !== null;
  return (
    <div className="open-rig">
      {!hasTerminal && (
        <button type="button" className="secondary small" onClick={() => open("a terminal", "terminal")} disabled={busy}>
          Open a terminal
        </button>
      )}
      <form
        className="open-browser"
        onSubmit={(e) => {
          e.preventDefault();
          open(engineLabel(engine), "browser", engine);
        }}
      >
        <label>
          <span className="visually-hidden">Browser engine</span>
          <select value={engine} onChange={(e) => setEngine(e.target.value as EngineValue)} disabled={busy}>
            {ENGINES.map((e) => (
              <option key={e.value} value={e.value}>
                {e.label}
              </option>
            ))}
          </select>
        </label>
        <button type="submit" className="secondary small" disabled={busy}>
          Open a browser
        </button>
      </form>
      {opening && (
        <p role="status" className="hint">
          Opening {opening}…
        </p>
      )}
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
    </div>
  );
}
