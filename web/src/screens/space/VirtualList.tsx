/** A windowed list for long histories: only the items near the viewport are in the DOM. Heights are measured as
 * items render (estimated until then); the item at the top of the view stays put when items are prepended or
 * measured, and a list scrolled to its end follows new items, as a chat does. */
import { useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState, type ReactNode } from "react";

export interface Keyed {
  key: string;
}

interface Props<T extends Keyed> {
  items: readonly T[];
  render(item: T): ReactNode;
  /** A first guess at an item's height, in pixels. */
  estimate: number;
  /** Called when the view reaches the first item (load older ones). */
  onReachStart?: (() => void) | undefined;
  label: string;
  className?: string;
}

/** Extra pixels rendered above and below the view, so a fast scroll does not show blank space. */
const OVERSCAN = 600;
const AT_END = 48;

interface Anchor {
  key: string | null;
  /** The anchor item's offset minus scrollTop. */
  delta: number;
  atEnd: boolean;
}

/** The first index whose end lies past `y`. */
function indexAt(offsets: readonly number[], y: number): number {
  let lo = 0;
  let hi = offsets.length - 2;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((offsets[mid + 1] ?? 0) <= y) lo = mid + 1;
    else hi = mid;
  }
  return Math.max(0, lo);
}

export function VirtualList<T extends Keyed>({ items, render, estimate, onReachStart, label, className }: Props<T>) {
  const scroller = useRef<HTMLDivElement>(null);
  const heights = useRef(new Map<string, number>());
  const anchor = useRef<Anchor>({ key: null, delta: 0, atEnd: true });
  // Where the list last put the view to follow its end. The scroll event of that move comes later, when the
  // list may have grown again (a new item measured taller than its estimate): it must not read as the reader
  // leaving the end. Only a move up from here does.
  const followedTo = useRef<number | null>(null);
  const [version, setVersion] = useState(0);
  // Until the list has been laid out, the view is taken to be at the end (where a conversation opens).
  const [view, setView] = useState({ top: Number.POSITIVE_INFINITY, height: 800 });

  const offsets = useMemo(() => {
    const out = new Array<number>(items.length + 1);
    out[0] = 0;
    for (let i = 0; i < items.length; i += 1) {
      const item = items[i];
      out[i + 1] = (out[i] ?? 0) + ((item && heights.current.get(item.key)) ?? estimate);
    }
    return out;
    // `version` is read through the heights it counts: it changes when a measured height does.
  }, [items, estimate, version]);
  const total = offsets[items.length] ?? 0;

  const remember = useCallback(() => {
    const el = scroller.current;
    if (!el) return;
    const top = el.scrollTop;
    const i = indexAt(offsets, top);
    const following = anchor.current.atEnd && followedTo.current !== null && top >= followedTo.current;
    const atEnd = following || el.scrollHeight - top - el.clientHeight <= AT_END;
    if (!atEnd) followedTo.current = null;
    anchor.current = { key: items[i]?.key ?? null, delta: (offsets[i] ?? 0) - top, atEnd };
  }, [items, offsets]);
  const followEnd = (el: HTMLDivElement) => {
    el.scrollTop = el.scrollHeight;
    followedTo.current = el.scrollTop; // as the browser clamped it
  };

  // After items or heights change: keep the end in view, or the anchored item where it was.
  useLayoutEffect(() => {
    const el = scroller.current;
    if (!el) return;
    const { key, delta, atEnd } = anchor.current;
    if (atEnd) {
      followEnd(el);
    } else if (key !== null) {
      const i = items.findIndex((it) => it.key === key);
      if (i >= 0) el.scrollTop = (offsets[i] ?? 0) - delta;
    }
    setView({ top: el.scrollTop, height: el.clientHeight });
  }, [items, offsets]);

  // Older items are asked for when the reader scrolls near the start, or when the items do not fill the view.
  const onScroll = useCallback(() => {
    const el = scroller.current;
    if (!el) return;
    remember();
    setView({ top: el.scrollTop, height: el.clientHeight });
    if (onReachStart && el.scrollTop < OVERSCAN) onReachStart();
  }, [remember, onReachStart]);
  useEffect(() => {
    const el = scroller.current;
    if (el && onReachStart && items.length > 0 && el.scrollHeight <= el.clientHeight) onReachStart();
  }, [onReachStart, items.length, total]);

  const top = Math.min(view.top, Math.max(0, total - view.height));
  const first = indexAt(offsets, Math.max(0, top - OVERSCAN));
  const last = Math.min(items.length - 1, indexAt(offsets, top + view.height + OVERSCAN));

  // Measure what is rendered; a changed height re-computes the offsets (and the anchor keeps the view still).
  const observer = useMemo(
    () =>
      typeof ResizeObserver === "undefined"
        ? null
        : new ResizeObserver((entries) => {
            let changed = false;
            for (const entry of entries) {
              const key = (entry.target as HTMLElement).dataset["key"];
              const h = entry.borderBoxSize[0]?.blockSize ?? (entry.target as HTMLElement).offsetHeight;
              if (key !== undefined && h > 0 && heights.current.get(key) !== h) {
                heights.current.set(key, h);
                changed = true;
              }
            }
            if (changed) setVersion((v) => v + 1);
          }),
    [],
  );
  useEffect(() => () => observer?.disconnect(), [observer]);
  const measure = useCallback(
    (el: HTMLDivElement | null) => {
      if (!el || !observer) return;
      observer.observe(el);
      return () => observer.unobserve(el);
    },
    [observer],
  );

  useEffect(() => {
    const el = scroller.current;
    if (!el || typeof ResizeObserver === "undefined") return;
    const resized = new ResizeObserver(() => {
      // The list got shorter or taller (a phone's keyboard opening, a window resized): a reader at the end stays there.
      if (anchor.current.atEnd) followEnd(el);
      setView({ top: el.scrollTop, height: el.clientHeight });
    });
    resized.observe(el);
    return () => resized.disconnect();
  }, []);

  const shown = items.slice(first, last + 1);
  return (
    <div
      ref={scroller}
      className={`vlist ${className ?? ""}`}
      onScroll={onScroll}
      role="log"
      aria-label={label}
      tabIndex={0}
      data-count={items.length}
    >
      <div style={{ height: offsets[first] ?? 0 }} aria-hidden="true" />
      {shown.map((item) => (
        <div key={item.key} data-key={item.key} ref={measure} className="vitem">
          {render(item)}
        </div>
      ))}
      <div style={{ height: Math.max(0, total - (offsets[last + 1] ?? total)) }} aria-hidden="true" />
    </div>
  );
}
