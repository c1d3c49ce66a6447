import { QueryClient } from "@tanstack/react-query";
import type { SocketLike } from "../src/rpc/client";

/** A socket the test plays the server for: it sees every frame sent and pushes frames or a close. */
export class FakeSocket implements SocketLike {
  sent: Record<string, unknown>[] = [];
  closedWith: number | null = null;
  onopen: ((ev: unknown) => void) | null = null;
  onmessage: ((ev: { data: unknown }) => void) | null = null;
  onclose: ((ev: { code: number; reason: string }) => void) | null = null;
  onerror: ((ev: unknown) => void) | null = null;

  constructor(readonly url: string) {}

  send(data: string): void {
    this.sent.push(JSON.parse(data) as Record<string, unknown>);
  }

  close(code = 1000): void {
    this.closedWith = code;
  }

  /** The server accepts the connection and the first-frame credential. */
  accept(): void {
    this.onopen?.({});
    this.push({ type: "auth", ok: true, userId: "u1" });
  }

  push(frame: unknown): void {
    this.onmessage?.({ data: JSON.stringify(frame) });
  }

  drop(code = 1006, reason = ""): void {
    this.onclose?.({ code, reason });
  }

  last(): Record<string, unknown> {
    const frame = this.sent[this.sent.length - 1];
    if (!frame) throw new Error("nothing sent");
    return frame;
  }
}

/** Timers run by hand: `run()` fires every scheduled callback and returns their delays. */
export class ManualTimers {
  queue: { fn: () => void; ms: number }[] = [];
  schedule = (fn: () => void, ms: number): unknown => {
    const entry = { fn, ms };
    this.queue.push(entry);
    return entry;
  };
  cancel = (handle: unknown): void => {
    this.queue = this.queue.filter((e) => e !== handle);
  };
  run(): number[] {
    const due = this.queue;
    this.queue = [];
    for (const e of due) e.fn();
    return due.map((e) => e.ms);
  }
}

/** A query cache holding a result under each key (what the invalidation rules act on). */
export function cacheOf(...keys: unknown[][]): QueryClient {
  const queries = new QueryClient();
  for (const key of keys) queries.setQueryData(key, "cached");
  return queries;
}

/** The keys of the cached reads marked stale. */
export function stale(queries: QueryClient): string[] {
  return queries
    .getQueryCache()
    .getAll()
    .filter((q) => q.state.isInvalidated)
    .map((q) => JSON.stringify(q.queryKey));
}
