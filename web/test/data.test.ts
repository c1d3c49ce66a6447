import { MutationObserver, QueryClient } from "@tanstack/react-query";
import { describe, expect, it } from "vitest";
import { ACTION, type Outcome, type Job } from "../src/data/mutations";
import { isEventType, readsAfterWrite } from "../src/data/invalidation";
import { isDeclared } from "../src/data/events";
import { openWatch } from "../src/data/watch";
import type { EventView } from "../src/generated/ops";
import { RpcClient } from "../src/rpc/client";
import { RpcError } from "../src/rpc/errors";
import { cacheOf, FakeSocket, stale } from "./fakes";

function connected(): { client: RpcClient; socket: FakeSocket } {
  let socket: FakeSocket | null = null;
  const client = new RpcClient({
    url: "ws://server/rpc",
    token: "tok",
    socket: (url) => (socket = new FakeSocket(url)),
    schedule: () => 0,
    cancel: () => undefined,
  });
  if (!socket) throw new Error("no socket");
  (socket as FakeSocket).accept();
  return { client, socket };
}

const flush = () => new Promise((r) => setTimeout(r, 0));

describe("the watch hook's subscription", () => {
  it("marks stale the reads a typed event changes, in the watch's workspace only, before the screen sees it", async () => {
    const { client, socket } = connected();
    const queries = cacheOf(
      ["spaces.list", { workspace_id: "w1" }],
      ["spaces.list", { workspace_id: "w2" }],
      ["tickets.list", { workspace_id: "w1" }],
    );
    const seen: string[] = [];
    const replies: unknown[] = [];
    openWatch(
      client,
      queries,
      "events.watch",
      { workspace_id: "w1" },
      {
        onReply: (r) => replies.push(r.watching),
        onEvent: (e) => seen.push(`${e.type} stale:${stale(queries).length}`),
      },
      () => undefined,
    );
    const id = socket.last()["id"];
    socket.push({ id, ok: true, result: { watching: "w1" } });
    socket.push({ id, event: { seq: 4, id: "e4", type: "workspace.spaceCreated", occurredAt: "x", payload: {} } });
    await flush();
    expect(replies).toEqual(["w1"]);
    expect(seen).toEqual(["workspace.spaceCreated stale:1"]);
    expect(stale(queries)).toEqual([JSON.stringify(["spaces.list", { workspace_id: "w1" }])]);
  });

  it("leaves the cache alone for an event no read depends on and for a watch's own notices", async () => {
    const { client, socket } = connected();
    const queries = cacheOf(["rig_list", { workspace_id: "w1" }], ["rig.ports", { workspace_id: "w1", rigId: "r1" }]);
    const phases: string[] = [];
    openWatch(
      client,
      queries,
      "rig.watch",
      { workspace_id: "w1", rigId: "r1" },
      { onEvent: (e) => e.type === "phase" && phases.push(e.phase) },
      () => undefined,
    );
    const id = socket.last()["id"];
    socket.push({ id, event: { type: "phase", phase: "ready", detail: "" } });
    await flush();
    expect(phases).toEqual(["ready"]);
    expect(stale(queries)).toEqual([]);
    expect(isEventType("phase")).toBe(false);
    expect(isEventType("rigs.closed")).toBe(true);
  });

  it("hands the watch's refusal to its owner", () => {
    const { client, socket } = connected();
    const errors: string[] = [];
    openWatch(client, new QueryClient(), "rigs.watchPacks", {}, {}, (e) => errors.push(e.code));
    socket.push({ id: socket.last()["id"], ok: false, error: { code: "forbidden", message: "no" } });
    expect(errors).toEqual(["forbidden"]);
  });
});

describe("a change a person starts (useAction's mutation)", () => {
  it("is busy while it runs, then shows the server's refusal", async () => {
    const observer = new MutationObserver<Outcome, RpcError, Job>(new QueryClient(), ACTION);
    const states: string[] = [];
    observer.subscribe((r) => states.push(r.isPending ? "busy" : r.error ? `refused: ${r.error.message}` : "idle"));
    let refuse: (e: unknown) => void = () => undefined;
    const running = observer
      .mutate({ work: () => new Promise((_, reject) => (refuse = reject)), said: undefined })
      .catch(() => undefined);
    await flush();
    expect(states).toEqual(["busy"]);
    refuse(new RpcError("conflict", "the rig is closing"));
    await running;
    expect(states).toEqual(["busy", "refused: the rig is closing"]);
    expect(observer.getCurrentResult().error?.code).toBe("conflict");
  });

  it("reports what it did when it worked, and a thrown non-RPC error as an internal refusal", async () => {
    const observer = new MutationObserver<Outcome, RpcError, Job>(new QueryClient(), ACTION);
    const done = await observer.mutate({ work: () => Promise.resolve({ id: "t1" }), said: (r) => `Saved ${(r as { id: string }).id}.` });
    expect(done).toEqual({ value: { id: "t1" }, said: "Saved t1." });
    await observer.mutate({ work: () => Promise.reject(new Error("boom")), said: undefined }).catch(() => undefined);
    expect(observer.getCurrentResult().error).toBeInstanceOf(RpcError);
    expect(observer.getCurrentResult().error?.code).toBe("internal");
  });
});

describe("what a write marks stale", () => {
  it("names what a write changes instead of its family where they differ", () => {
    expect(readsAfterWrite("rig.terminalUrl")).toEqual([]);
    expect(readsAfterWrite("agents.run")).toEqual(["runs."]);
    expect(readsAfterWrite("rig.sharePort")).toEqual(["rig."]);
  });
});

describe("an event of the workspace's watch", () => {
  it("narrows by its type to its payload's model once it is known to be declared, and an emitted one stays apart", () => {
    const declared: EventView = {
      seq: 1,
      id: "e1",
      type: "workspace.spaceUpdated",
      occurredAt: "2026-01-01T00:00:00Z",
      payload: { spaceId: "s1", title: "Plans", archived: false },
    };
    const emitted: EventView = { seq: 2, id: "e2", type: "review.approved", occurredAt: "x", payload: { by: "Ann" } };
    const titles = [declared, emitted].flatMap((e) =>
      isDeclared(e) && e.type === "workspace.spaceUpdated" ? [e.payload.title] : [],
    );
    expect(titles).toEqual(["Plans"]);
    expect(isDeclared(emitted)).toBe(false);
  });
});
