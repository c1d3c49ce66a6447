/** The live view of a browser rig: its page drawn on a canvas from the live view lane (`/rig/live/<rigId>`, a
 * URL minted by `rig.liveViewUrl`, authenticated by a first text frame with the device credential). While you
 * hold control, your mouse, keys, wheel and pastes go to the page; without it the view only watches (the server
 * ignores input and says so). Files dropped onto the view land in the rig and reach the page at the drop point;
 * the server's reply says how. Above the view, the address bar and the session's pages (`BrowserBar`), kept current
 * by the lane's `pages` notices. Loaded only when a browser rig's panel opens. */
import { useCallback, useEffect, useRef, useState, type DragEvent, type KeyboardEvent, type PointerEvent } from "react";
import type { PageRow } from "../../../generated/ops";
import { useWrite } from "../../../data/mutations";
import { BrowserBar } from "./BrowserBar";
import { ClipboardPanel } from "./Clipboard";
import { engineLabel } from "./engines";
import "./live.css";
import { dropFiles, type DropReply } from "./fileLane";
import { openLane, type Lane, type LaneState } from "./lane";
import { domKey, mouseButton, parseFrame, toViewport, wantedSize, type LiveFrame, type Size } from "./liveWire";

interface Notice {
  type?: string;
  message?: string;
  controller?: string | null;
  you?: string;
  width?: number;
  height?: number;
  engine?: string;
  pages?: PageRow[];
}

const DELIVERY: Record<DropReply["delivery"], string> = {
  dropEvent: "The page got a real drop event.",
  fileInput: "The page's file input was set to the files.",
  landed: "The files landed in the rig; nothing on the page took them.",
};

export function LiveView({ workspaceId, rigId }: { workspaceId: string; rigId: string }) {
  const write = useWrite();
  const canvas = useRef<HTMLCanvasElement>(null);
  const box = useRef<HTMLDivElement>(null);
  const lane = useRef<Lane | null>(null);
  const viewport = useRef<Size>({ width: 1280, height: 800 });
  const [state, setState] = useState<LaneState>("connecting");
  const [engine, setEngine] = useState<string | null>(null);
  const [pages, setPages] = useState<PageRow[] | null>(null);
  const [inControl, setInControl] = useState(false);
  const [notice, setNotice] = useState<string | null>(null);
  const [attempt, setAttempt] = useState(0);
  const [hasFrame, setHasFrame] = useState(false);
  const [over, setOver] = useState(false);
  const [drop, setDrop] = useState<{ busy: boolean; reply: DropReply | null; error: string | null }>({
    busy: false,
    reply: null,
    error: null,
  });
  const controlRef = useRef(false);
  controlRef.current = inControl;

  const send = useCallback((message: Record<string, unknown>) => {
    const s = lane.current?.socket;
    if (s?.readyState === WebSocket.OPEN && controlRef.current) s.send(JSON.stringify(message));
  }, []);

  useEffect(() => {
    const el = canvas.current;
    const frameBox = box.current;
    if (!el || !frameBox) return;
    let ended = false;
    let pending: LiveFrame | null = null;
    let drawing = false;
    const draw = async () => {
      if (drawing) return; // the newest frame waits; older ones are dropped
      drawing = true;
      try {
        while (pending && !ended) {
          const frame: LiveFrame = pending;
          pending = null;
          const bitmap = await createImageBitmap(new Blob([frame.jpeg as BlobPart], { type: "image/jpeg" }));
          if (ended) break;
          if (el.width !== frame.width || el.height !== frame.height) {
            el.width = frame.width;
            el.height = frame.height;
          }
          el.getContext("2d")?.drawImage(bitmap, 0, 0);
          bitmap.close();
          el.dataset["seq"] = String(frame.seq);
          el.dataset["capturedMs"] = String(frame.capturedMs);
          el.dataset["drawnMs"] = String(Date.now());
          setHasFrame(true);
        }
      } catch {
        /* a frame that does not decode is skipped */
      } finally {
        drawing = false;
      }
    };
    const size = () => {
      const width = frameBox.clientWidth || 1280;
      return wantedSize({ width, height: width * 0.625 }, window.devicePixelRatio || 1);
    };
    let lastAsked = "";
    const resizer = new ResizeObserver(() => {
      const s = lane.current?.socket;
      const want = size();
      const key = `${want.width}x${want.height}`;
      if (s?.readyState === WebSocket.OPEN && key !== lastAsked) {
        lastAsked = key;
        s.send(JSON.stringify({ type: "view", ...want }));
      }
    });
    resizer.observe(frameBox);

    setNotice(null);
    lane.current = openLane<Notice>({
      mint: () => write("rig.liveViewUrl", { workspace_id: workspaceId, rigId }),
      query: () => {
        const want = size();
        lastAsked = `${want.width}x${want.height}`;
        return { w: want.width, h: want.height };
      },
      onState: setState,
      onError: setNotice,
      onBinary: (data) => {
        const frame = parseFrame(data);
        if (frame) {
          pending = frame;
          void draw();
        }
      },
      onNotice: (n) => {
        if (n.type === "hello") {
          setEngine(n.engine ?? null);
          setInControl(n.controller != null && n.controller === n.you);
        } else if (n.type === "control") {
          const mine = n.controller != null && n.controller === n.you;
          setInControl(mine);
          setNotice(null);
        } else if (n.type === "pages" && n.pages) {
          setPages(n.pages);
        } else if (n.type === "viewport" && n.width && n.height) {
          viewport.current = { width: n.width, height: n.height };
        } else if (n.type === "readonly") {
          setNotice(n.message ?? "Take control to drive the page.");
        } else if (n.type === "error") {
          setNotice(n.message ?? "The live view refused.");
        }
      },
    });

    // The wheel is taken only while in control (then the page scrolls, not this one); React's wheel handler is
    // passive, so it cannot.
    const wheel = (e: WheelEvent) => {
      if (!controlRef.current) return;
      e.preventDefault();
      const rect = el.getBoundingClientRect();
      const at = toViewport(e.clientX - rect.left, e.clientY - rect.top, rect, viewport.current);
      send({ type: "wheel", ...at, deltaX: Math.round(e.deltaX), deltaY: Math.round(e.deltaY) });
    };
    el.addEventListener("wheel", wheel, { passive: false });
    return () => {
      ended = true;
      resizer.disconnect();
      el.removeEventListener("wheel", wheel);
      lane.current?.close();
      lane.current = null;
    };
  }, [write, workspaceId, rigId, attempt, send]);

  const point = (e: { clientX: number; clientY: number }) => {
    const el = canvas.current;
    if (!el) return { x: 0, y: 0 };
    const rect = el.getBoundingClientRect();
    return toViewport(e.clientX - rect.left, e.clientY - rect.top, rect, viewport.current);
  };
  const moveQueued = useRef<{ x: number; y: number } | null>(null);
  const onMove = (e: PointerEvent<HTMLCanvasElement>) => {
    if (!controlRef.current) return;
    const first = moveQueued.current === null;
    moveQueued.current = point(e);
    if (first) {
      // At most one move per display frame: the newest point wins.
      requestAnimationFrame(() => {
        if (moveQueued.current) send({ type: "mouse", action: "move", ...moveQueued.current });
        moveQueued.current = null;
      });
    }
  };
  const onButton = (down: boolean) => (e: PointerEvent<HTMLCanvasElement>) => {
    const button = mouseButton(e.button);
    if (!controlRef.current || !button) return;
    e.preventDefault();
    if (down) {
      e.currentTarget.focus();
      e.currentTarget.setPointerCapture(e.pointerId);
    }
    send({ type: "mouse", action: down ? "down" : "up", button, ...point(e) });
  };
  const onKey = (down: boolean) => (e: KeyboardEvent<HTMLCanvasElement>) => {
    if (!controlRef.current || e.nativeEvent.isComposing) return;
    // Ctrl/Cmd+V is left to the browser, whose paste event types this computer's clipboard into the page.
    if ((e.ctrlKey || e.metaKey) && e.key.toLowerCase() === "v") return;
    const key = domKey(e.key);
    if (!key) return;
    e.preventDefault();
    send({ type: "key", action: down ? "down" : "up", key });
  };

  const onDrop = (e: DragEvent<HTMLDivElement>) => {
    e.preventDefault();
    setOver(false);
    const files = [...e.dataTransfer.files];
    if (files.length === 0) return;
    setDrop({ busy: true, reply: null, error: null });
    dropFiles(write, workspaceId, rigId, files, point(e)).then(
      (reply) => setDrop({ busy: false, reply, error: null }),
      (err: unknown) =>
        setDrop({ busy: false, reply: null, error: err instanceof Error ? err.message : String(err) }),
    );
  };

  const fit = () => {
    const el = box.current;
    if (!el) return;
    const width = Math.min(2560, Math.max(320, Math.round(el.clientWidth)));
    const height = Math.min(1600, Math.max(240, Math.round(width * 0.625)));
    send({ type: "resize", width, height });
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
          <button type="button" className="small" onClick={() => setAttempt((a) => a + 1)}>
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
      <div
        className="live-box"
        ref={box}
        data-over={over}
        onDragOver={(e) => {
          e.preventDefault();
          setOver(true);
        }}
        onDragLeave={() => setOver(false)}
        onDrop={onDrop}
      >
        {!hasFrame && state !== "closed" && <p className="hint">Waiting for the first picture of the page…</p>}
        <canvas
          ref={canvas}
          className="live-canvas"
          role="img"
          aria-label={
            inControl ? "The rig's page: you have control (keys and mouse go to the page)" : "The rig's page, live"
          }
          tabIndex={0}
          data-control={inControl}
          onPointerMove={onMove}
          onPointerDown={onButton(true)}
          onPointerUp={onButton(false)}
          onContextMenu={(e) => {
            if (controlRef.current) e.preventDefault();
          }}
          onKeyDown={onKey(true)}
          onKeyUp={onKey(false)}
          onPaste={(e) => {
            const text = e.clipboardData.getData("text/plain");
            if (!controlRef.current || !text) return;
            e.preventDefault();
            send({ type: "text", text });
          }}
        />
      </div>
      {drop.busy && (
        <p role="status">
          <progress aria-label="Dropping files onto the page" /> Dropping…
        </p>
      )}
      {drop.reply && (
        <div className="drop-reply" role="status">
          <p>{DELIVERY[drop.reply.delivery]}</p>
          <ul className="landed" aria-label="Files that landed">
            {drop.reply.files.map((f) => (
              <li key={f.path}>
                <code>{f.path}</code> ({f.size} bytes)
              </li>
            ))}
          </ul>
        </div>
      )}
      {drop.error && (
        <p className="error" role="alert">
          {drop.error}
        </p>
      )}
      <section aria-label="Clipboard" className="rig-clipboard">
        <h3>Clipboard</h3>
        <ClipboardPanel workspaceId={workspaceId} rigId={rigId} disabled={state === "closed"} />
      </section>
    </div>
  );
}
