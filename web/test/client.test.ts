import { describe, expect, it } from "vitest";
import { OPS } from "../src/generated/ops";
import { RpcClient, rpcUrlFor, type ClientOptions } from "../src/rpc/client";
import { RpcError } from "../src/rpc/errors";
import { FakeSocket, ManualTimers } from "./fakes";

function setup(extra: Partial<ClientOptions> = {}) {
  const sockets: FakeSocket[] = [];
  const timers = new ManualTimers();
  const states: string[] = [];
  const rejected: string[] = [];
  const client = new RpcClient({
    url: "ws://server/rpc",
    token: "tok-1",
    socket: (url) => {
      const s = new FakeSocket(url);
      sockets.push(s);
      return s;
    },
    random: () => 0.5,
    schedule: timers.schedule,
    cancel: timers.cancel,
    onState: (s) => states.push(s),
    onUnauthenticated: (m) => rejected.push(m),
    ...extra,
  });
  const current = () => {
    const s = sockets[sockets.length - 1];
    if (!s) throw new Error("no socket");
    return s;
  };
  return { client, sockets, timers, states, rejected, current };
}

const flush = () => new Promise((r) => setTimeout(r, 0));

describe("RpcClient", () => {
  it("authenticates with the first frame, then sends queued calls and resolves their results", async () => {
    const { client, current } = setup();
    const me = client.call("users.me");
    expect(current().url).toBe("ws://server/rpc");
    current().onopen?.({});
    expect(current().sent).toEqual([{ type: "auth", token: "tok-1" }]);
    current().push({ type: "auth", ok: true, userId: "u1" });
    expect(client.state).toBe("open");
    const frame = current().last();
    expect(frame).toMatchObject({ op: "users.me", args: {} });
    current().push({ id: frame["id"], ok: true, result: { id: "u1", displayName: "Ada" } });
    await expect(me).resolves.toMatchObject({ displayName: "Ada" });
  });

  it("rejects with a typed error carrying the contract's code and field", async () => {
    const { client, current } = setup();
    current().accept();
    const p = client.call("workspaces.create", { name: "" });
    const id = current().last()["id"];
    current().push({ id, ok: false, error: { code: "invalid_args", message: "name is too short", field: "name" } });
    const err = await p.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RpcError);
    expect(err).toMatchObject({ code: "invalid_args", message: "name is too short", field: "name" });
  });

  it("keeps an unknown error code from the wire as internal", () => {
    expect(RpcError.fromWire({ code: "weird", message: "m" }).code).toBe("internal");
    expect(RpcError.fromWire(null).message).toBe("the server gave no reason");
  });

  it("fails calls in flight when the socket drops, and reconnects with growing, jittered delays", async () => {
    const { client, current, timers, sockets, states } = setup();
    current().accept();
    const inFlight = client.call("users.me");
    current().drop(1006);
    await expect(inFlight).rejects.toMatchObject({ code: "unavailable" });
    expect(client.state).toBe("reconnecting");
    // random() = 0.5: delay = ceiling * 0.75 with ceiling 250, 500, 1000 ms...
    expect(timers.run()).toEqual([188]);
    current().drop(1006);
    expect(timers.run()).toEqual([375]);
    current().drop(1006);
    expect(timers.run()).toEqual([750]);
    expect(sockets).toHaveLength(4);
    // A call made while down waits for the next connection.
    const queued = client.call("workspaces.list");
    current().accept();
    const id = current().last()["id"];
    current().push({ id, ok: true, result: [] });
    await expect(queued).resolves.toEqual([]);
    // A successful connection resets the backoff.
    current().drop(1006);
    expect(timers.run()).toEqual([188]);
    expect(states).toEqual(["open", "reconnecting", "open", "reconnecting"]);
  });

  it("reopens every watch after a reconnect and hands its owner the first reply again", async () => {
    const { client, current, timers } = setup();
    current().accept();
    const replies: unknown[] = [];
    const events: unknown[] = [];
    client.watch("events.watch", { workspace_id: "w1" }, { onReply: (r) => replies.push(r), onEvent: (e) => events.push(e) });
    const first = current().last();
    expect(first).toMatchObject({ op: "events.watch", args: { workspace_id: "w1" } });
    current().push({ id: first["id"], ok: true, result: { watching: "w1" } });
    current().push({ id: first["id"], event: { seq: 3, type: "space.created" } });
    expect(events).toEqual([{ seq: 3, type: "space.created" }]);
    current().drop(1012);
    timers.run();
    current().accept();
    const again = current().last();
    expect(again).toMatchObject({ op: "events.watch", args: { workspace_id: "w1" } });
    expect(again["id"]).not.toBe(first["id"]);
    current().push({ id: again["id"], ok: true, result: { watching: "w1" } });
    expect(replies).toEqual([{ watching: "w1" }, { watching: "w1" }]);
    // Frames for the old id are not delivered to anyone.
    current().push({ id: first["id"], event: { seq: 9 } });
    expect(events).toHaveLength(1);
    await flush();
  });

  it("resumes a watch with a cursor after the last event it delivered", () => {
    expect(OPS["spaces.watch"].cursor).toBe("afterSeq");
    const { client, current, timers } = setup();
    current().accept();
    client.watch("spaces.watch", { workspace_id: "w1", spaceId: "s1" }, { onReply: () => undefined });
    const first = current().last();
    expect(first["args"]).toEqual({ workspace_id: "w1", spaceId: "s1" });
    current().push({ id: first["id"], ok: true, result: { space: {} } });
    current().push({ id: first["id"], event: { seq: 41, type: "message.posted" } });
    current().push({ id: first["id"], event: { seq: 42, type: "message.posted" } });
    current().drop(1006);
    timers.run();
    current().accept();
    expect(current().last()["args"]).toEqual({ workspace_id: "w1", spaceId: "s1", afterSeq: 42 });
  });

  it("opens a resumed watch again from now when retention deleted what it would resume from", () => {
    const { client, current, timers } = setup();
    current().accept();
    const replies: unknown[] = [];
    const errors: unknown[] = [];
    client.watch(
      "spaces.watch",
      { workspace_id: "w1", spaceId: "s1" },
      { onReply: (r) => replies.push(r), onError: (e) => errors.push(e.code) },
    );
    const first = current().last();
    current().push({ id: first["id"], ok: true, result: { space: {} } });
    current().push({ id: first["id"], event: { seq: 42, type: "message.posted" } });
    current().drop(1006);
    timers.run();
    current().accept();
    const resumed = current().last();
    expect(resumed["args"]).toEqual({ workspace_id: "w1", spaceId: "s1", afterSeq: 42 });
    const horizon = "afterSeq 42 is behind the retention horizon: events up to #90 of this workspace were pruned";
    current().push({ id: resumed["id"], ok: false, error: { code: "conflict", message: horizon } });
    const fresh = current().last();
    expect(fresh["args"]).toEqual({ workspace_id: "w1", spaceId: "s1" });
    current().push({ id: fresh["id"], ok: true, result: { space: {} } });
    expect(replies).toHaveLength(2);
    expect(errors).toEqual([]);
    // A refusal of a watch opened without a cursor is its owner's to hear, and it is not opened again.
    current().drop(1006);
    timers.run();
    current().accept();
    const third = current().last();
    expect(third["args"]).toEqual({ workspace_id: "w1", spaceId: "s1" });
    current().push({ id: third["id"], ok: false, error: { code: "conflict", message: "another refusal" } });
    expect(errors).toEqual(["conflict"]);
    expect(current().last()).toBe(third);
  });

  it("unwatches by the watch's request id, and a closed watch is not reopened", () => {
    const { client, current, timers } = setup();
    current().accept();
    const handle = client.watch("events.watch", { workspace_id: "w1" }, { onReply: () => undefined });
    const opened = current().last();
    handle.close();
    expect(current().last()).toMatchObject({ op: "unwatch", args: { watchId: opened["id"] } });
    current().drop(1006);
    timers.run();
    current().accept();
    expect(current().sent).toEqual([{ type: "auth", token: "tok-1" }]);
  });

  it("ends a watch the server ended with an error event", () => {
    const { client, current, timers } = setup();
    current().accept();
    const errors: RpcError[] = [];
    client.watch("events.watch", { workspace_id: "w1" }, { onReply: () => undefined, onError: (e) => errors.push(e) });
    const id = current().last()["id"];
    current().push({ id, event: { type: "error", error: { code: "forbidden", message: "no longer a member" } } });
    expect(errors.map((e) => e.code)).toEqual(["forbidden"]);
    current().drop(1006);
    timers.run();
    current().accept();
    expect(current().sent.some((f) => f["op"] === "events.watch")).toBe(false);
  });

  it("stops for good when the credential is rejected by close code 4401", async () => {
    const { client, current, timers, rejected, sockets } = setup();
    current().accept();
    current().drop(4401, "unauthenticated");
    expect(client.state).toBe("unauthenticated");
    expect(rejected).toHaveLength(1);
    expect(timers.queue).toHaveLength(0);
    await expect(client.call("users.me")).rejects.toMatchObject({ code: "unauthenticated" });
    expect(sockets).toHaveLength(1);
  });

  it("stops for good on an unauthenticated error frame", () => {
    const { client, current, rejected } = setup();
    current().onopen?.({});
    current().push({ id: null, ok: false, error: { code: "unauthenticated", message: "credential revoked" } });
    expect(client.state).toBe("unauthenticated");
    expect(rejected).toEqual(["credential revoked"]);
    expect(current().closedWith).toBe(1000);
  });

  it("close() stops reconnecting and fails what waits", async () => {
    const { client, current, timers } = setup();
    const waiting = client.call("users.me");
    client.close();
    await expect(waiting).rejects.toMatchObject({ code: "unavailable" });
    current().drop(1000);
    expect(timers.queue).toHaveLength(0);
    expect(client.state).toBe("closed");
  });

  it("derives the socket URL from the page's location", () => {
    expect(rpcUrlFor({ protocol: "https:", host: "hangar.example:8443" })).toBe("wss://hangar.example:8443/rpc");
    expect(rpcUrlFor({ protocol: "http:", host: "127.0.0.1:8420" })).toBe("ws://127.0.0.1:8420/rpc");
  });
});
