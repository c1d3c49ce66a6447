/** The live view lane drawn on a canvas, shared by a browser rig's view (`LiveView`) and a computer rig's desktop
 * (`DesktopView`): the lane (`/rig/live/<rigId>`, minted by `rig.liveViewUrl`, authenticated by a first text frame
 * with the device credential), frames drawn newest-first, the frame size asked for as the box changes, whether
 * this person holds control (`hello` and `control` notices), the server's `viewport` (the page's CSS pixels, or
 * the desktop's display in guest pixels: input coordinates are in these), its read-only and error messages, and
 * the mouse, wheel, key and paste handlers that send input only while in control. Notices the caller's surface
 * has of its own (a browser's `pages`, a desktop's `dragOut`) go to `onNotice`. */
import {
  useCallback,
  useEffect,
  useRef,
  useState,
  type ClipboardEvent,
  type KeyboardEvent,
  type MouseEvent,
  type PointerEvent,
  type RefObject,
} from "react";
import { useWrite } from "../../../data/mutations";
import { openLane, type Lane, type LaneState } from "./lane";
import { domKey, mouseButton, parseFrame, toViewport, wantedSize, type LiveFrame, type Size } from "./liveWire";

/** The notices every live view understands; a surface's own fields ride along. */
export interface LiveNotice {
  type?: string;
  message?: string;
  controller?: string | null;
  you?: string;
  width?: number;
  height?: number;
  engine?: string | null;
  surface?: string;
}

export interface LiveCanvas {
  canvas: RefObject<HTMLCanvasElement | null>;
  box: RefObject<HTMLDivElement | null>;
  state: LaneState;
  inControl: boolean;
  /** The server's last read-only or error message, or a minting failure. */
  notice: string | null;
  hasFrame: boolean;
  /** The size input coordinates are in, as the server last told it (null until it has). */
  viewport: Size | null;
  /** Send a JSON message on the lane, only while this person holds control. */
  send: (message: Record<string, unknown>) => void;
  /** A pointer position as a point of the viewport. */
  point: (e: { clientX: number; clientY: number }) => { x: number; y: number };
  reconnect: () => void;
  /** Props for the canvas: pointer, keys, paste and context menu, each a no-op without control. */
  handlers: {
    onPointerMove: (e: PointerEvent<HTMLCanvasElement>) => void;
    onPointerDown: (e: PointerEvent<HTMLCanvasElement>) => void;
    onPointerUp: (e: PointerEvent<HTMLCanvasElement>) => void;
    onKeyDown: (e: KeyboardEvent<HTMLCanvasElement>) => void;
    onKeyUp: (e: KeyboardEvent<HTMLCanvasElement>) => void;
    onPaste: (e: ClipboardEvent<HTMLCanvasElement>) => void;
    onContextMenu: (e: MouseEvent<HTMLCanvasElement>) => void;
  };
}

export function useLiveCanvas<N extends LiveNotice>(
  workspaceId: string,
  rigId: string,
  onNotice: (notice: N) => void,
  /** The box's height for its width, for the frame size asked for (a page's 16:10, a desktop's display). */
  aspect: () => number = () => 0.625,
  /** Without control, a press still goes to the server, which ignores it and says why (once, until control is
   * held again), so the view shows the server's own read-only message. */
  askWhenWatching = false,
): LiveCanvas {
  const write = useWrite();
  const canvas = useRef<HTMLCanvasElement>(null);
  const box = useRef<HTMLDivElement>(null);
  const lane = useRef<Lane | null>(null);
  const viewportRef = useRef<Size>({ width: 1280, height: 800 });
  const [viewport, setViewport] = useState<Size | null>(null);
  const [state, setState] = useState<LaneState>("connecting");
  const [inControl, setInControl] = useState(false);
  const [notice, setNotice] = useState<string | null>(null);
  const [attempt, setAttempt] = useState(0);
  const [hasFrame, setHasFrame] = useState(false);
  const controlRef = useRef(false);
  controlRef.current = inControl;
  const noticeRef = useRef(onNotice);
  noticeRef.current = onNotice;
  const aspectRef = useRef(aspect);
  aspectRef.current = aspect;

  const send = useCallback((message: Record<string, unknown>) => {
    const s = lane.current?.socket;
    if (s?.readyState === WebSocket.OPEN && controlRef.current) s.send(JSON.stringify(message));
  }, []);

  const point = useCallback((e: { clientX: number; clientY: number }) => {
    const el = canvas.current;
    if (!el) return { x: 0, y: 0 };
    const rect = el.getBoundingClientRect();
    return toViewport(e.clientX - rect.left, e.clientY - rect.top, rect, viewportRef.current);
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
      return wantedSize({ width, height: width * aspectRef.current() }, window.devicePixelRatio || 1);
    };
    let lastAsked = "";
    const ask = () => {
      const s = lane.current?.socket;
      const want = size();
      const key = `${want.width}x${want.height}`;
      if (s?.readyState === WebSocket.OPEN && key !== lastAsked) {
        lastAsked = key;
        s.send(JSON.stringify({ type: "view", ...want }));
      }
    };
    const resizer = new ResizeObserver(ask);
    resizer.observe(frameBox);

    setNotice(null);
    lane.current = openLane<N>({
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
          setInControl(n.controller != null && n.controller === n.you);
        } else if (n.type === "control") {
          setInControl(n.controller != null && n.controller === n.you);
          setNotice(null);
        } else if (n.type === "viewport" && n.width && n.height) {
          viewportRef.current = { width: n.width, height: n.height };
          setViewport(viewportRef.current);
          ask(); // a desktop's new mode may want another frame shape
        } else if (n.type === "readonly") {
          setNotice(n.message ?? "Take control to drive the rig.");
        } else if (n.type === "error") {
          setNotice(n.message ?? "The live view refused.");
        }
        noticeRef.current(n);
      },
    });

    // The wheel is taken only while in control (then the rig scrolls, not this page); React's wheel handler is
    // passive, so it cannot.
    const wheel = (e: WheelEvent) => {
      if (!controlRef.current) return;
      e.preventDefault();
      send({ type: "wheel", ...point(e), deltaX: Math.round(e.deltaX), deltaY: Math.round(e.deltaY) });
    };
    el.addEventListener("wheel", wheel, { passive: false });
    return () => {
      ended = true;
      resizer.disconnect();
      el.removeEventListener("wheel", wheel);
      lane.current?.close();
      lane.current = null;
    };
  }, [write, workspaceId, rigId, attempt, send, point]);

  const moveQueued = useRef<{ x: number; y: number } | null>(null);
  const onPointerMove = (e: PointerEvent<HTMLCanvasElement>) => {
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
    if (!button) return;
    if (!controlRef.current) {
      const s = lane.current?.socket;
      if (askWhenWatching && down && s?.readyState === WebSocket.OPEN) {
        s.send(JSON.stringify({ type: "mouse", action: "down", button, ...point(e) }));
      }
      return;
    }
    e.preventDefault();
    if (down) {
      e.currentTarget.focus({ preventScroll: true }); // the press lands where it was aimed
      e.currentTarget.setPointerCapture(e.pointerId);
    }
    send({ type: "mouse", action: down ? "down" : "up", button, ...point(e) });
  };
  const onKey = (down: boolean) => (e: KeyboardEvent<HTMLCanvasElement>) => {
    if (!controlRef.current || e.nativeEvent.isComposing) return;
    // Ctrl/Cmd+V is left to the browser, whose paste event types this computer's clipboard into the rig.
    if ((e.ctrlKey || e.metaKey) && e.key.toLowerCase() === "v") return;
    const key = domKey(e.key);
    if (!key) return;
    e.preventDefault();
    send({ type: "key", action: down ? "down" : "up", key });
  };

  return {
    canvas,
    box,
    state,
    inControl,
    notice,
    hasFrame,
    viewport,
    send,
    point,
    reconnect: () => setAttempt((a) => a + 1),
    handlers: {
      onPointerMove,
      onPointerDown: onButton(true),
      onPointerUp: onButton(false),
      onKeyDown: onKey(true),
      onKeyUp: onKey(false),
      onPaste: (e) => {
        const text = e.clipboardData.getData("text/plain");
        if (!controlRef.current || !text) return;
        e.preventDefault();
        send({ type: "text", text });
      },
      onContextMenu: (e) => {
        if (controlRef.current) e.preventDefault();
      },
    },
  };
}
