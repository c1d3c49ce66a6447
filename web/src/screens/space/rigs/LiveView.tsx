/** The live view of a browser rig: its page drawn on a canvas from the live view lane (`/rig/live/<rigId>`, a
 * URL minted by `rig.liveViewUrl`, authenticated by a first text frame with the device credential). While you
 * hold control, your mouse, keys, wheel and pastes go to the page; without it the view only watches (the server
 * ignores input and says so). Files dropped onto the view land in the rig and reach the page at the drop point;
 * the server's reply says how. Above the view, the address bar and the session's pages (`BrowserBar`), kept current
 * by the lane's `pages` notices. Loaded only when a browser rig's panel opens. */
import { useState } from "react";
import type { PageRow } from "../../../generated/ops";
import { BrowserBar } from "./BrowserBar";
import { ClipboardPanel } from "./Clipboard";
import { engineLabel } from "./engines";
import "./live.css";
import { fitSize } from "./liveWire";
import { LiveScreen } from "./LiveScreen";
import { useLiveCanvas, type LiveNotice } from "./useLiveCanvas";
import { DropOutcome, useViewDrop } from "./viewDrop";

interface Notice extends LiveNotice {
  pages?: PageRow[];
}

const DELIVERY = {
  dropEvent: "The page got a real drop event.",
  fileInput: "The page's file input was set to the files.",
  landed: "The files landed in the rig; nothing on the page took them.",
};

export function LiveView({ workspaceId, rigId }: { workspaceId: string; rigId: string }) {
  const [engine, setEngine] = useState<string | null>(null);
  const [pages, setPages] = useState<PageRow[] | null>(null);
  const live = useLiveCanvas<Notice>(workspaceId, rigId, (n) => {
    if (n.type === "hello") setEngine(n.engine ?? null);
    else if (n.type === "pages" && n.pages) setPages(n.pages);
  });
  const { box, state, inControl, notice, send } = live;
  const { zone, drop } = useViewDrop(workspaceId, rigId, live.point);

  const fit = () => {
    const el = box.current;
    if (!el) return;
    send({ type: "resize", ...fitSize(el.clientWidth, 0.625) });
  };

  return (
    <div className="live-view">
      <div className="terminal-bar">
        <p className="lane" role="status" data-state={state}>
          {state === "open"
            ? `Live view connected${engine ? ` (${engineLabel(engine)})` : ""}: ${inControl ? "you drive the page" : "watching"}`
            : state === "connecting"
              ? "Connecting the live view…"
              : "Live view closed"}
        </p>
        {inControl && (
          <button type="button" className="secondary small" onClick={fit}>
            Fit the page to this view
          </button>
        )}
        {state === "closed" && (
          <button type="button" className="small" onClick={live.reconnect}>
            Reconnect
          </button>
        )}
      </div>
      {notice && <p className="notice">{notice}</p>}
      <BrowserBar workspaceId={workspaceId} rigId={rigId} pages={pages} inControl={inControl} onPages={setPages} />
      {!inControl && state === "open" && (
        <p className="hint">
          Take control (above) to use the mouse and keyboard on the page, type an address or switch pages.
        </p>
      )}
      <LiveScreen live={live} zone={zone} what="page" />
      <DropOutcome drop={drop} target="the page" delivery={DELIVERY} />
      <section aria-label="Clipboard" className="rig-clipboard">
        <h3>Clipboard</h3>
        <ClipboardPanel workspaceId={workspaceId} rigId={rigId} disabled={state === "closed"} />
      </section>
    </div>
  );
}
