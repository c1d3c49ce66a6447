/** The conversation and a rig side by side: with "Side by side" on and a rig's tab chosen, the conversation stays on
 * the left and the rig takes the right, with a separator to drag (or move with the arrow keys) between them. Whether
 * it is on and where the separator is are remembered in this browser for the signed-in person
 * (`localStorage["hangar.split.<userId>"]`). On a narrow screen (a phone) the two stack, conversation first. */
import { useCallback, useEffect, useRef, useState, type KeyboardEvent, type PointerEvent, type ReactNode } from "react";
import { useRead } from "../../data/queries";
import "./split.css";

export const SPLIT_KEY = "hangar.split.";
export const MIN_SIZE = 25; // the conversation's share of the width, in percent
export const MAX_SIZE = 75;
const DEFAULT_SIZE = 50;
const STEP = 5;

export interface SplitPrefs {
  on: boolean;
  size: number;
}

export function clampSize(size: number): number {
  return Math.min(MAX_SIZE, Math.max(MIN_SIZE, Math.round(size)));
}

/** The stored preferences, or the defaults when none (or something unreadable) is stored. */
export function loadSplit(storage: Storage, userId: string): SplitPrefs {
  try {
    const stored = JSON.parse(storage.getItem(SPLIT_KEY + userId) ?? "null") as Partial<SplitPrefs> | null;
    return {
      on: stored?.on === true,
      size: typeof stored?.size === "number" ? clampSize(stored.size) : DEFAULT_SIZE,
    };
  } catch {
    return { on: false, size: DEFAULT_SIZE };
  }
}

export interface Split extends SplitPrefs {
  toggle(): void;
  resize(size: number, keep?: boolean): void;
}

export function useSplit(): Split {
  const me = useRead("users.me", {});
  const userId = me.data?.id ?? null;
  const [prefs, setPrefs] = useState<SplitPrefs>({ on: false, size: DEFAULT_SIZE });
  useEffect(() => {
    if (userId) setPrefs(loadSplit(window.localStorage, userId));
  }, [userId]);
  const store = useCallback(
    (next: SplitPrefs) => {
      if (userId) window.localStorage.setItem(SPLIT_KEY + userId, JSON.stringify(next));
    },
    [userId],
  );
  const toggle = useCallback(() => {
    setPrefs((p) => {
      const next = { ...p, on: !p.on };
      store(next);
      return next;
    });
  }, [store]);
  // While dragging the size changes on every move; it is stored when the drag ends (`keep`).
  const resize = useCallback(
    (size: number, keep = true) => {
      setPrefs((p) => {
        const next = { ...p, size: clampSize(size) };
        if (keep) store(next);
        return next;
      });
    },
    [store],
  );
  return { ...prefs, toggle, resize };
}

export function SplitToggle({ split }: { split: Split }) {
  return (
    <button type="button" className="secondary small split-toggle" aria-pressed={split.on} onClick={split.toggle}>
      Side by side
    </button>
  );
}

interface ViewProps {
  split: Split;
  /** Whether a rig is chosen (side by side needs one). */
  active: boolean;
  conversation: ReactNode;
  rig: ReactNode;
}

export function SplitView({ split, active, conversation, rig }: ViewProps) {
  const box = useRef<HTMLDivElement>(null);
  const dragging = useRef(false);
  const sideBySide = split.on && active;

  const sizeAt = (clientX: number) => {
    const rect = box.current?.getBoundingClientRect();
    return rect && rect.width > 0 ? ((clientX - rect.left) / rect.width) * 100 : split.size;
  };
  const onDown = (e: PointerEvent<HTMLDivElement>) => {
    dragging.current = true;
    e.currentTarget.setPointerCapture(e.pointerId);
  };
  const onMove = (e: PointerEvent<HTMLDivElement>) => {
    if (dragging.current) split.resize(sizeAt(e.clientX), false);
  };
  const onUp = (e: PointerEvent<HTMLDivElement>) => {
    if (!dragging.current) return;
    dragging.current = false;
    split.resize(sizeAt(e.clientX));
  };
  const onKey = (e: KeyboardEvent<HTMLDivElement>) => {
    const to: Record<string, number> = {
      ArrowLeft: split.size - STEP,
      ArrowRight: split.size + STEP,
      Home: MIN_SIZE,
      End: MAX_SIZE,
    };
    const size = to[e.key];
    if (size === undefined) return;
    e.preventDefault();
    split.resize(size);
  };

  return (
    <div
      className="split"
      ref={box}
      data-split={sideBySide}
      style={
        sideBySide
          ? { gridTemplateColumns: `minmax(0, ${split.size}fr) auto minmax(0, ${100 - split.size}fr)` }
          : undefined
      }
    >
      <div className="split-pane">{conversation}</div>
      {sideBySide && (
        <div
          className="split-handle"
          role="separator"
          aria-orientation="vertical"
          aria-label="Conversation and rig: drag or use the arrow keys to resize"
          aria-valuenow={split.size}
          aria-valuemin={MIN_SIZE}
          aria-valuemax={MAX_SIZE}
          aria-valuetext={`conversation ${split.size}% of the width`}
          tabIndex={0}
          onPointerDown={onDown}
          onPointerMove={onMove}
          onPointerUp={onUp}
          onPointerCancel={onUp}
          onKeyDown={onKey}
        />
      )}
      <div className="split-pane">{rig}</div>
    </div>
  );
}
