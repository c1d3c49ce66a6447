/**
 * The RPC socket (CONTRACTS.md section 2) for the browser: one WebSocket to `/rpc`, authenticated by its first
 * frame, typed by the generated op table (`../generated/ops.ts`).
 *
 * - `call(op, args)` answers the op's result or rejects with an `RpcError` carrying the contract's code. A call made
 *   while the socket is down waits for the next connection; a call in flight when it drops rejects with
 *   `unavailable` (it is not replayed: a mutation may or may not have happened).
 * - `watch(op, args, handlers)` opens a watch and keeps it open across reconnects: after each reconnect it is opened
 *   again and its owner gets the first reply again (so a screen refreshes what it missed); a watch whose op has a
 *   cursor (`afterSeq`) resumes after the last event it delivered, or, when the server refuses that resume with
 *   `conflict` (retention deleted events after it), from now.
 * - The socket reconnects with exponential backoff and jitter. A rejected credential (close 4401 or an
 *   `unauthenticated` error) stops it for good and calls `onUnauthenticated`: the person must connect again.
 */
import { OPS, type CallOpName, type OpName, type Ops, type WatchOpName } from "../generated/ops";
import { backoffDelay, DEFAULT_BACKOFF, type Backoff } from "./backoff";
import { RpcError } from "./errors";

export const CLOSE_UNAUTHENTICATED = 4401;

/** What the client needs of a WebSocket (the browser's, or a fake in tests). */
export interface SocketLike {
  send(data: string): void;
  close(code?: number, reason?: string): void;
  onopen: ((ev: unknown) => void) | null;
  onmessage: ((ev: { data: unknown }) => void) | null;
  onclose: ((ev: { code: number; reason: string }) => void) | null;
  onerror: ((ev: unknown) => void) | null;
}

export type SocketFactory = (url: string) => SocketLike;

export type ConnectionState = "connecting" | "open" | "reconnecting" | "unauthenticated" | "closed";

export type ArgsOf<N extends OpName> = Ops[N]["args"];
export type ResultOf<N extends OpName> = Ops[N]["result"];
/** What a watch sends after its reply (a union narrowed by its `type` where the watch streams several kinds). */
export type EventOf<N extends WatchOpName> = Ops[N]["event"];
/** An op whose arguments are all optional may be called without any. */
type ArgsParam<N extends OpName> = Record<string, never> extends ArgsOf<N> ? [args?: ArgsOf<N>] : [args: ArgsOf<N>];

export interface WatchHandlers<N extends WatchOpName> {
  /** The first reply; again after every reconnect, so the owner can refresh what it may have missed. */
  onReply(result: ResultOf<N>): void;
  /** Each event frame, as the op declares it. */
  onEvent?(event: EventOf<N>): void;
  /** The watch was refused or ended by the server; it is not reopened. */
  onError?(error: RpcError): void;
}

export interface WatchHandle {
  close(): void;
}

export interface ClientOptions {
  /** `ws(s)://host/rpc` */
  url: string;
  token: string;
  socket?: SocketFactory;
  random?: () => number;
  schedule?: (fn: () => void, ms: number) => unknown;
  cancel?: (handle: unknown) => void;
  backoff?: Backoff;
  onState?: (state: ConnectionState) => void;
  onUnauthenticated?: (message: string) => void;
}

interface Pending {
  resolve(value: unknown): void;
  reject(error: RpcError): void;
}

interface Queued extends Pending {
  op: string;
  args: unknown;
}

/** Where a watch's frames go: its owner's handlers, each frame given its op's declared type (see `watch`). */
interface Delivery {
  reply(result: unknown): void;
  event(event: unknown): void;
  error(error: RpcError): void;
}

interface WatchEntry {
  op: WatchOpName;
  args: Record<string, unknown>;
  deliver: Delivery;
  /** The request id the server knows this watch by on the current socket; null while not open. */
  requestId: number | null;
  cursor: number | undefined;
}

type Frame = Record<string, unknown>;

/** The socket URL of the server this page was loaded from. */
export function rpcUrlFor(location: { protocol: string; host: string }): string {
  return `${location.protocol === "https:" ? "wss:" : "ws:"}//${location.host}/rpc`;
}

export class RpcClient {
  private readonly opts: ClientOptions;
  private socket: SocketLike | null = null;
  private authenticated = false;
  private nextId = 1;
  private attempt = 0;
  private opens = 0;
  private timer: unknown = null;
  private stateValue: ConnectionState = "connecting";
  private readonly pending = new Map<number, Pending>();
  private queue: Queued[] = [];
  private readonly watches = new Set<WatchEntry>();
  private readonly byRequest = new Map<number, WatchEntry>();
  private readonly listeners = new Set<(state: ConnectionState) => void>();

  constructor(opts: ClientOptions) {
    this.opts = opts;
    this.open();
  }

  get state(): ConnectionState {
    return this.stateValue;
  }

  /** How many times the socket has been (re)authenticated: a screen's data is fetched again when it changes. */
  get epoch(): number {
    return this.opens;
  }

  /** Follow the connection's state (for a status line); returns the unsubscribe function. */
  subscribe(listener: (state: ConnectionState) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  call<N extends CallOpName>(op: N, ...rest: ArgsParam<N>): Promise<ResultOf<N>> {
    const args = rest[0] ?? {};
    if (this.stateValue === "unauthenticated" || this.stateValue === "closed") {
      return Promise.reject(this.endedError());
    }
    return new Promise<ResultOf<N>>((resolve, reject) => {
      const entry: Queued = { op, args, resolve: resolve as (v: unknown) => void, reject };
      if (this.authenticated) this.sendCall(entry);
      else this.queue.push(entry);
    });
  }

  watch<N extends WatchOpName>(op: N, args: ArgsOf<N>, handlers: WatchHandlers<N>): WatchHandle {
    const entry: WatchEntry = {
      op,
      args: { ...args },
      // The one place a watch's frames take their op's types: the server answers `op` with the result and events
      // its registry declares (the generated table is made from it), and JSON off the wire carries no type of its
      // own, so it is asserted here, as a call's result is where its promise resolves.
      deliver: {
        reply: (result) => handlers.onReply(result as ResultOf<N>),
        event: (event) => handlers.onEvent?.(event as EventOf<N>),
        error: (error) => handlers.onError?.(error),
      },
      requestId: null,
      cursor: undefined,
    };
    this.watches.add(entry);
    if (this.authenticated) this.openWatch(entry);
    return { close: () => this.unwatch(entry) };
  }

  /** Stop for good (sign out, page teardown). */
  close(): void {
    this.setState("closed");
    this.shutdown(1000);
  }

  private open(): void {
    const make = this.opts.socket ?? ((url: string) => new WebSocket(url) as unknown as SocketLike);
    const socket = make(this.opts.url);
    this.socket = socket;
    socket.onopen = () => socket.send(JSON.stringify({ type: "auth", token: this.opts.token }));
    socket.onmessage = (ev) => {
      if (this.socket === socket) this.receive(ev.data);
    };
    socket.onclose = (ev) => {
      if (this.socket === socket) this.dropped(ev.code, ev.reason);
    };
    socket.onerror = () => {
      /* a close event follows; the reconnect is decided there */
    };
  }

  private receive(data: unknown): void {
    let frame: Frame;
    try {
      const parsed: unknown = JSON.parse(String(data));
      if (typeof parsed !== "object" || parsed === null) return;
      frame = parsed as Frame;
    } catch {
      return;
    }
    if (frame["type"] === "auth" && frame["ok"] === true) {
      this.ready();
      return;
    }
    const id = frame["id"];
    if ("event" in frame) {
      if (typeof id === "number") this.deliverEvent(id, frame["event"]);
      return;
    }
    const error = frame["ok"] === false ? RpcError.fromWire(frame["error"]) : null;
    if (error?.code === "unauthenticated") {
      this.rejected(error.message);
      return;
    }
    if (typeof id !== "number") return;
    const call = this.pending.get(id);
    if (call) {
      this.pending.delete(id);
      if (error) call.reject(error);
      else call.resolve(frame["result"]);
      return;
    }
    const watch = this.byRequest.get(id);
    if (!watch) return;
    if (error && error.code === "conflict" && watch.cursor !== undefined) {
      // Its resume point is behind what retention deleted (the server cannot send what it missed): it is opened
      // again from now, and its owner refreshes from the reply as after any reconnect.
      this.byRequest.delete(id);
      watch.cursor = undefined;
      this.openWatch(watch);
    } else if (error) {
      this.forgetWatch(watch);
      watch.deliver.error(error);
    } else {
      watch.deliver.reply(frame["result"]);
    }
  }

  private ready(): void {
    this.authenticated = true;
    this.attempt = 0;
    this.opens += 1;
    this.setState("open");
    const queued = this.queue;
    this.queue = [];
    for (const entry of queued) this.sendCall(entry);
    for (const entry of this.watches) this.openWatch(entry);
  }

  private deliverEvent(id: number, event: unknown): void {
    const watch = this.byRequest.get(id);
    if (!watch) return;
    const body = (typeof event === "object" && event !== null ? event : {}) as Record<string, unknown>;
    if (body["type"] === "error" && "error" in body) {
      this.forgetWatch(watch);
      watch.deliver.error(RpcError.fromWire(body["error"]));
      return;
    }
    if (OPS[watch.op].cursor && typeof body["seq"] === "number") watch.cursor = body["seq"];
    watch.deliver.event(event);
  }

  private sendCall(entry: Queued): void {
    const id = this.nextId++;
    this.pending.set(id, entry);
    this.send({ id, op: entry.op, args: entry.args });
  }

  private openWatch(entry: WatchEntry): void {
    const id = this.nextId++;
    const cursor = OPS[entry.op].cursor;
    const args = cursor && entry.cursor !== undefined ? { ...entry.args, [cursor]: entry.cursor } : entry.args;
    entry.requestId = id;
    this.byRequest.set(id, entry);
    this.send({ id, op: entry.op, args });
  }

  private unwatch(entry: WatchEntry): void {
    if (!this.watches.has(entry)) return;
    const watchId = entry.requestId;
    this.forgetWatch(entry);
    if (watchId !== null && this.authenticated) {
      const id = this.nextId++;
      // Nobody waits on the answer: a watch the server already ended answers not_found, which is fine.
      this.pending.set(id, { resolve: () => undefined, reject: () => undefined });
      this.send({ id, op: "unwatch", args: { watchId } });
    }
  }

  private forgetWatch(entry: WatchEntry): void {
    this.watches.delete(entry);
    if (entry.requestId !== null) this.byRequest.delete(entry.requestId);
    entry.requestId = null;
  }

  private send(frame: Frame): void {
    this.socket?.send(JSON.stringify(frame));
  }

  private dropped(code: number, reason: string): void {
    this.socket = null;
    this.authenticated = false;
    this.failInFlight(new RpcError("unavailable", "the connection to the server was lost; try again"));
    if (code === CLOSE_UNAUTHENTICATED) {
      this.rejected(reason || "the credential was not accepted");
      return;
    }
    if (this.stateValue === "closed" || this.stateValue === "unauthenticated") return;
    this.setState("reconnecting");
    const delay = backoffDelay(this.attempt++, this.opts.random ?? Math.random, this.opts.backoff ?? DEFAULT_BACKOFF);
    const schedule = this.opts.schedule ?? ((fn: () => void, ms: number) => setTimeout(fn, ms));
    this.timer = schedule(() => {
      this.timer = null;
      if (this.stateValue === "reconnecting") this.open();
    }, delay);
  }

  private rejected(message: string): void {
    if (this.stateValue === "unauthenticated") return;
    this.setState("unauthenticated");
    this.shutdown(1000);
    this.opts.onUnauthenticated?.(message);
  }

  private shutdown(code: number): void {
    if (this.timer !== null) {
      (this.opts.cancel ?? ((h: unknown) => clearTimeout(h as ReturnType<typeof setTimeout>)))(this.timer);
      this.timer = null;
    }
    const socket = this.socket;
    this.socket = null;
    this.authenticated = false;
    socket?.close(code);
    const ended = this.endedError();
    this.failInFlight(ended);
    for (const entry of this.queue) entry.reject(ended);
    this.queue = [];
    this.watches.clear();
  }

  private failInFlight(error: RpcError): void {
    const calls = [...this.pending.values()];
    this.pending.clear();
    for (const call of calls) call.reject(error);
    // Watches stay registered (they reopen on the next connection); only their server-side ids are gone.
    for (const entry of this.watches) entry.requestId = null;
    this.byRequest.clear();
  }

  private endedError(): RpcError {
    return this.stateValue === "unauthenticated"
      ? new RpcError("unauthenticated", "the credential was not accepted; connect again")
      : new RpcError("unavailable", "the client is closed");
  }

  private setState(state: ConnectionState): void {
    if (this.stateValue === state) return;
    this.stateValue = state;
    this.opts.onState?.(state);
    for (const listener of this.listeners) listener(state);
  }
}
