/** The desktop of a computer rig: its screen drawn from the live view lane (the browser rig's wire: JPEG stills
 * sent when the screen changes, at most four a second, and a `viewport` notice with the display's size in guest
 * pixels, which input coordinates are in). While you hold control, your mouse, keys, wheel and pastes go to the
 * desktop (the server maps DOM key names to X11 ones), and you may change the display's size; without control the
 * view only watches, and a click on it shows the server's word on why it ignored it. Files dropped onto the desktop land in `~/Drops` and
 * go onto its clipboard as file URIs; what you drag out of the desktop (its drag selection, once per drag, after
 * your rig-to-computer clipboard consent) shows below the view, with a way to save the files it names. */
import { useRef, useState } from "react";
import { useAction, useWrite } from "../../../data/mutations";
import { ClipboardPanel } from "./Clipboard";
import { baseName, DISPLAY_SIZES, fileUriPath, sizeLabel } from "./desktop";
import { readFile } from "./fileLane";
import "./live.css";
import { fitSize } from "./liveWire";
import { LiveScreen } from "./LiveScreen";
import { useLiveCanvas, type LiveNotice } from "./useLiveCanvas";
import { DropOutcome, useViewDrop } from "./viewDrop";

interface Notice extends LiveNotice {
  text?: string;
  uris?: string[];
}

interface DraggedOut {
  text: string;
  paths: string[];
}

const DELIVERY = {
  clipboard: "The files landed in ~/Drops and are on the desktop's clipboard as files: paste them in an application.",
  landed: "The files landed in ~/Drops.",
};

/** What a drag out of the desktop carried: its text, and the files it names, each with a button to save it. */
function DragOut({ workspaceId, rigId, dragged }: { workspaceId: string; rigId: string; dragged: DraggedOut }) {
  const write = useWrite();
  const action = useAction();
  const save = (path: string) =>
    void action.run(async () => {
      const blob = await readFile(write, workspaceId, rigId, path);
      const url = URL.createObjectURL(blob);
      const link = document.createElement("a");
      link.href = url;
      link.download = baseName(path);
      link.click();
      window.setTimeout(() => URL.revokeObjectURL(url), 10_000);
    });
  return (
    <section className="drag-out" aria-label="Dragged out of the desktop">
      <h3>Dragged out of the desktop</h3>
      {dragged.paths.length > 0 ? (
        <ul className="landed" aria-label="Files dragged out">
          {dragged.paths.map((p) => (
            <li key={p}>
              <code>{p}</code>{" "}
              <button type="button" className="secondary small" onClick={() => save(p)} disabled={action.busy}>
                Save {baseName(p)}
              </button>
            </li>
          ))}
        </ul>
      ) : (
        <label className="field">
          <span>Text dragged out</span>
          <textarea readOnly rows={3} value={dragged.text} />
        </label>
      )}
      {action.error && (
        <p className="error" role="alert">
          {action.error.message}
        </p>
      )}
    </section>
  );
}

export function DesktopView({ workspaceId, rigId }: { workspaceId: string; rigId: string }) {
  const [dragged, setDragged] = useState<DraggedOut | null>(null);
  const shape = useRef(0.625); // the display's height for its width, once told
  const live = useLiveCanvas<Notice>(
    workspaceId,
    rigId,
    (n) => {
      if (n.type === "dragOut" && typeof n.text === "string") {
        const paths = (n.uris ?? []).map(fileUriPath).filter((p): p is string => p !== null);
        setDragged({ text: n.text, paths });
      }
    },
    // Frames are asked for in the display's shape, so the picture fills the box.
    () => shape.current,
    true,
  );
  const { box, state, inControl, notice, send, viewport: display } = live;
  const { zone, drop } = useViewDrop(workspaceId, rigId, () => undefined);
  if (display) shape.current = display.height / display.width;
  const current = display ? `${display.width}x${display.height}` : "";
  const resize = (width: number, height: number) => send({ type: "resize", width, height });

  return (
    <div className="live-view">
      <div className="terminal-bar">
        <p className="lane" role="status" data-state={state}>
          {state === "open"
            ? `Desktop connected: ${inControl ? "you drive the desktop" : "watching"}`
            : state === "connecting"
              ? "Connecting the desktop…"
              : "Desktop view closed"}
        </p>
        {display && (
          <p className="display-size">
            Display {sizeLabel(display)}
          </p>
        )}
        {inControl && display && (
          <>
            <select
              aria-label="Display size"
              value={current}
              onChange={(e) => {
                const [w, h] = e.target.value.split("x").map(Number);
                if (w && h) resize(w, h);
              }}
            >
              {!DISPLAY_SIZES.some((s) => `${s.width}x${s.height}` === current) && (
                <option value={current}>{sizeLabel(display)}</option>
              )}
              {DISPLAY_SIZES.map((s) => (
                <option key={`${s.width}x${s.height}`} value={`${s.width}x${s.height}`}>
                  {sizeLabel(s)}
                </option>
              ))}
            </select>
            <button
              type="button"
              className="secondary small"
              onClick={() => {
                const el = box.current;
                if (el) {
                  const fitted = fitSize(el.clientWidth, display.height / display.width);
                  resize(fitted.width, fitted.height);
                }
              }}
            >
              Fit the desktop to this view
            </button>
          </>
        )}
        {state === "closed" && (
          <button type="button" className="small" onClick={live.reconnect}>
            Reconnect
          </button>
        )}
      </div>
      {notice && <p className="notice">{notice}</p>}
      {!inControl && state === "open" && (
        <p className="hint">Take control (above) to use the mouse and keyboard on the desktop.</p>
      )}
      <LiveScreen live={live} zone={zone} what="desktop" />
      <p className="hint">
        Drop files onto the desktop to put them in <code>~/Drops</code>; drag something out of it to see it here.
      </p>
      <DropOutcome drop={drop} target="the desktop" delivery={DELIVERY} />
      {dragged && <DragOut workspaceId={workspaceId} rigId={rigId} dragged={dragged} />}
      <section aria-label="Clipboard" className="rig-clipboard">
        <h3>Clipboard</h3>
        <ClipboardPanel workspaceId={workspaceId} rigId={rigId} disabled={state === "closed"} />
      </section>
    </div>
  );
}
