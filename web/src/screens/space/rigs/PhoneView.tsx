/** The screen of a phone rig (surface `mobile`). Phones have no live view lane: the screen is the `mobile_use`
 * screenshot (the device's PNG), fetched every 1.5 s while you hold control, every 5 s while you watch, at once
 * after each thing you do, and not at all while this page is hidden. Each fetch is an observation (allowed while
 * someone else holds control) and a line in the rig's action log. While you hold control, a press and release on
 * the screen is a tap or a swipe, keys pressed on it type or press the phone's keys, and Back, Home and Recents
 * are buttons; without control the view only watches. Above the screen: the device's serial and size. */
import { useCallback, useEffect, useRef, useState, type KeyboardEvent, type PointerEvent } from "react";
import { useRpc } from "../../../rpc/hooks";
import { RpcError } from "../../../rpc/errors";
import "./live.css";
import { toViewport, type Size } from "./liveWire";
import { AFTER_ACTION_MS, gesture, phoneKey, pollDelay, type PhoneAction, type Point } from "./phone";

interface Shot {
  image?: { base64?: string; width?: number; height?: number };
  serial?: string;
}

const KEYS = [
  { key: "back", label: "Back" },
  { key: "home", label: "Home" },
  { key: "recents", label: "Recents" },
] as const;

function pngBlob(base64: string): Blob {
  const raw = atob(base64);
  const bytes = new Uint8Array(raw.length);
  for (let i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i);
  return new Blob([bytes], { type: "image/png" });
}

export function PhoneView({
  workspaceId,
  rigId,
  inControl,
}: {
  workspaceId: string;
  rigId: string;
  /** Whether this person holds the rig's control (from its row, kept live by `rig.watch`). */
  inControl: boolean;
}) {
  const client = useRpc();
  const canvas = useRef<HTMLCanvasElement>(null);
  const screen = useRef<Size>({ width: 0, height: 0 });
  const [size, setSize] = useState<Size | null>(null);
  const [serial, setSerial] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [typing, setTyping] = useState("");
  const [busy, setBusy] = useState(false);
  const [kick, setKick] = useState(0); // a new value fetches the screen again at once
  const controlRef = useRef(inControl);
  controlRef.current = inControl;
  const press = useRef<{ at: Point; ms: number } | null>(null);

  const call = useCallback(
    (action: Record<string, unknown>) =>
      client.call("mobile_use", { workspace_id: workspaceId, rigId, action }) as Promise<Shot>,
    [client, workspaceId, rigId],
  );

  useEffect(() => {
    let ended = false;
    let timer: number | undefined;
    const fetchScreen = async () => {
      timer = undefined;
      if (document.hidden) return;
      try {
        const shot = await call({ action: "screenshot" });
        const el = canvas.current;
        if (ended || !el || !shot.image?.base64) return;
        const bitmap = await createImageBitmap(pngBlob(shot.image.base64));
        if (ended) return;
        el.width = bitmap.width;
        el.height = bitmap.height;
        el.getContext("2d")?.drawImage(bitmap, 0, 0);
        bitmap.close();
        el.dataset["shots"] = String(Number(el.dataset["shots"] ?? "0") + 1);
        screen.current = { width: shot.image.width ?? el.width, height: shot.image.height ?? el.height };
        setSize(screen.current);
        setSerial(shot.serial ?? null);
        setError(null);
      } catch (e) {
        if (!ended) setError(e instanceof RpcError ? e.message : String(e));
      }
      const delay = pollDelay(controlRef.current, document.hidden);
      if (!ended && delay !== null) timer = window.setTimeout(() => void fetchScreen(), delay);
    };
    const visible = () => {
      if (!document.hidden && timer === undefined) void fetchScreen();
    };
    void fetchScreen();
    document.addEventListener("visibilitychange", visible);
    return () => {
      ended = true;
      window.clearTimeout(timer);
      document.removeEventListener("visibilitychange", visible);
    };
  }, [call, kick, inControl]);

  const act = (action: PhoneAction | { action: "key"; key: string }) => {
    if (!controlRef.current) return;
    setBusy(true);
    call(action).then(
      () => {
        setBusy(false);
        window.setTimeout(() => setKick((k) => k + 1), AFTER_ACTION_MS);
      },
      (e: unknown) => {
        setBusy(false);
        setError(e instanceof RpcError ? e.message : String(e));
      },
    );
  };

  const point = (e: { clientX: number; clientY: number }): Point => {
    const el = canvas.current;
    if (!el) return { x: 0, y: 0 };
    const rect = el.getBoundingClientRect();
    return toViewport(e.clientX - rect.left, e.clientY - rect.top, rect, screen.current);
  };
  const onDown = (e: PointerEvent<HTMLCanvasElement>) => {
    if (!controlRef.current || e.button !== 0) return;
    e.preventDefault();
    e.currentTarget.focus({ preventScroll: true }); // the press lands where it was aimed
    e.currentTarget.setPointerCapture(e.pointerId);
    press.current = { at: point(e), ms: e.timeStamp };
  };
  const onUp = (e: PointerEvent<HTMLCanvasElement>) => {
    const began = press.current;
    press.current = null;
    if (!began || !controlRef.current) return;
    e.preventDefault();
    act(gesture(began.at, point(e), e.timeStamp - began.ms));
  };
  const onKey = (e: KeyboardEvent<HTMLCanvasElement>) => {
    if (!controlRef.current || e.nativeEvent.isComposing) return;
    const action = phoneKey(e.key, e.ctrlKey || e.altKey || e.metaKey);
    if (!action) return;
    e.preventDefault();
    act(action);
  };

  return (
    <div className="live-view phone-view">
      <div className="terminal-bar">
        <p className="lane" role="status">
          {serial ? `Phone ${serial}` : "Reaching the phone…"}
          {size ? `, screen ${size.width} × ${size.height}` : ""}: {inControl ? "you drive the phone" : "watching"}
        </p>
        {KEYS.map((k) => (
          <button
            key={k.key}
            type="button"
            className="secondary small"
            disabled={!inControl || busy}
            onClick={() => act({ action: "key", key: k.key })}
          >
            {k.label}
          </button>
        ))}
      </div>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      {!inControl && <p className="hint">Take control (above) to tap, swipe and type on the phone.</p>}
      <p className="hint">
        The phone has no live picture: its screen is fetched again every few seconds and after each thing you do.
      </p>
      <div className="live-box phone-box">
        {!size && !error && <p className="hint">Waiting for the first picture of the phone…</p>}
        <canvas
          ref={canvas}
          className="live-canvas phone-canvas"
          role="img"
          aria-label={
            inControl
              ? "The phone's screen: you have control (tap, swipe and keys go to the phone)"
              : "The phone's screen"
          }
          tabIndex={0}
          data-control={inControl}
          onPointerDown={onDown}
          onPointerUp={onUp}
          onPointerCancel={() => (press.current = null)}
          onKeyDown={onKey}
        />
      </div>
      <form
        className="phone-type"
        onSubmit={(e) => {
          e.preventDefault();
          if (typing) act({ action: "type", text: typing });
          setTyping("");
        }}
      >
        <label>
          <span>Type on the phone</span>
          <input value={typing} onChange={(e) => setTyping(e.target.value)} disabled={!inControl} />
        </label>
        <button type="submit" className="secondary small" disabled={!inControl || busy || !typing}>
          Send text
        </button>
      </form>
    </div>
  );
}
