/** Opening a rig from a space: its terminal (one per space, reused), a browser with the engine chosen by the
 * browser's name (one per engine per space: opening one the space has selects it), a desktop (in the enclosure or a
 * full VM, `OpenDesktop`) or a phone (one of each per space; a server that cannot run one refuses, naming what is
 * missing, and the refusal is shown here). `rig.open` answers once the
 * rig booted; a rig still booting a moment after the ask (a first boot builds its image pack: minutes) has its tab
 * opened at once, following the boot's steps. */
import { useState } from "react";
import type { RigRow } from "../../../generated/ops";
import { useAction, useWrite } from "../../../data/mutations";
import { BOOT_PEEK_MS, bootingRig } from "./booting";
import { ENGINES, engineLabel, type EngineValue } from "./engines";
import { OpenDesktop } from "./OpenDesktop";
import type { DesktopArgs } from "./runsIn";
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

  const open = (
    what: string,
    surface: "terminal" | "browser" | "computer" | "mobile",
    chosen?: EngineValue,
    runsIn: DesktopArgs = {},
  ) => {
    setOpening(what);
    const peek = window.setTimeout(() => {
      bootingRig(write, workspaceId, spaceId, surface, chosen ?? null).then((rigId) => {
        if (rigId) onOpened(rigId);
      }, () => undefined);
    }, BOOT_PEEK_MS);
    const args = { workspace_id: workspaceId, spaceId, surface, ...(chosen ? { engine: chosen } : {}), ...runsIn };
    void action.run(() => write("rig.open", args)).then((opened) => {
      if (opened) onOpened(opened.rigId);
      window.clearTimeout(peek);
      setOpening(null);
    });
  };

  const has = (surface: RigRow["surface"]) => rigs.some((r) => r.surface === surface);
  const busy = opening !== null || disabled !== null;
  return (
    <div className="open-rig">
      {!has("terminal") && (
        <button type="button" className="secondary small" onClick={() => open("a terminal", "terminal")} disabled={busy}>
          Open a terminal
        </button>
      )}
      {!has("computer") && <OpenDesktop busy={busy} onOpen={(runsIn) => open("a desktop", "computer", undefined, runsIn)} />}
      {!has("mobile") && (
        <button type="button" className="secondary small" onClick={() => open("a phone", "mobile")} disabled={busy}>
          Open a phone
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
