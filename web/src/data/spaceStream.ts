/** A space followed live: its newest messages first, older pages on demand, and its agent runs' turn events.
 *
 * The newest page of messages is fetched as `spaces.watch` opens; each of the watch's first replies (again after
 * every reconnect) then fetches what the screen may have missed: the messages after the newest one shown, the
 * records of the space's recent runs (how each ended, and why: a failed run says so after a reload too), and the
 * events of the runs still going. Live frames and fetched pages meet in merges that
 * keep every message and event once, so their order of arrival does not matter. */
import { useQueryClient } from "@tanstack/react-query";
import { useCallback, useLayoutEffect, useRef, useState } from "react";
import { openWatch } from "./watch";
import type { MessageView, RunView, SpaceView } from "../generated/ops";
import { RpcError } from "../rpc/errors";
import { useRpc } from "../rpc/hooks";
import { isRunFrame, mergeFrames, mergeMessages, provisioningOf, type Frame } from "./spaceFrames";

/** Messages fetched on opening (the newest: a screenful and more, quick to send), then per older page. */
export const FIRST_PAGE = 100;
export const PAGE = 250;
/** Run records fetched on opening (the space's newest runs); an older run's record is fetched when it is shown. */
export const RUN_RECORDS = 100;

export interface SpaceStream {
  space: SpaceView | null;
  error: RpcError | null;
  /** The first page has arrived. */
  opened: boolean;
  messages: MessageView[];
  /** Turn events per run, for the runs this screen follows or has loaded. */
  runs: Record<string, Frame[]>;
  /** Run records (status, outcome, error) of the runs the screen has shown. */
  records: Record<string, RunView>;
  /** Runs seen going while the screen is open, in the order they started. */
  liveRuns: string[];
  olderDone: boolean;
  loadOlder(): void;
  /** Fetch a run's recorded events (a finished run's steps, shown on request). */
  loadRun(runId: string): void;
  /** Fetch a run's record (a run shown from the history, older than the records fetched on opening). */
  loadRecord(runId: string): void;
}

export function useSpaceStream(workspaceId: string, spaceId: string): SpaceStream {
  const client = useRpc();
  const queries = useQueryClient();
  const [space, setSpace] = useState<SpaceView | null>(null);
  const [error, setError] = useState<RpcError | null>(null);
  const [opened, setOpened] = useState(false);
  const [messages, setMessages] = useState<MessageView[]>([]);
  const [runs, setRuns] = useState<Record<string, Frame[]>>({});
  const [records, setRecords] = useState<Record<string, RunView>>({});
  const askedRecords = useRef(new Set<string>());
  // Runs shown before the space's recent records arrived: asked for one by one only if those do not hold them.
  const waitingRecords = useRef<Set<string> | null>(new Set());
  const fetchRecord = useRef<(runId: string) => void>(() => undefined);
  const [liveRuns, setLiveRuns] = useState<string[]>([]);
  const [olderDone, setOlderDone] = useState(false);
  const shown = useRef<MessageView[]>([]);
  const loadingOlder = useRef(false);
  const live = useRef(true);

  const addMessages = useCallback((found: MessageView[]) => {
    if (!live.current || found.length === 0) return;
    shown.current = mergeMessages(shown.current, found);
    setMessages(shown.current);
  }, []);
  const addFrames = useCallback((runId: string, frames: Frame[], following: boolean) => {
    if (!live.current) return;
    setRuns((old) => ({ ...old, [runId]: mergeFrames(old[runId] ?? [], frames) }));
    if (following) setLiveRuns((old) => (old.includes(runId) ? old : [...old, runId]));
  }, []);
  const addRecords = useCallback((found: RunView[]) => {
    if (!live.current || found.length === 0) return;
    setRecords((old) => {
      const next = { ...old };
      for (const r of found) next[r.id] = r;
      return next;
    });
  }, []);
  const failed = useCallback((e: unknown) => {
    // A call cut off by a lost connection is made again after the reconnect (the watch replies again).
    if (live.current && e instanceof RpcError && e.code !== "unavailable") setError(e);
  }, []);

  // A layout effect: the watch starts as the screen mounts, not after the browser's next paint.
  useLayoutEffect(() => {
    live.current = true;
    shown.current = [];
    setSpace(null);
    setError(null);
    setOpened(false);
    setMessages([]);
    setRuns({});
    setRecords({});
    askedRecords.current = new Set();
    waitingRecords.current = new Set();
    setLiveRuns([]);
    setOlderDone(false);
    const ws = { workspace_id: workspaceId, spaceId };

    // The newest page is asked for at once, beside the watch (it decides how soon the space shows); after the
    // watch's reply, what was posted in between is fetched as the messages after the newest one shown.
    let firstPage: Promise<void> | null = null;
    const openFirst = () =>
      (firstPage ??= client.call("messages.list", { ...ws, last: FIRST_PAGE }).then(
        (page) => {
          addMessages(page.messages);
          if (live.current) {
            setOlderDone(page.messages.length < FIRST_PAGE);
            setOpened(true);
          }
        },
        (e: unknown) => {
          firstPage = null; // asked again after the reconnect
          throw e;
        },
      ));
    openFirst().catch(failed);

    const catchUp = async () => {
      await openFirst();
      for (let after = shown.current[shown.current.length - 1]?.seq ?? 0; ; ) {
        const page = await client.call("messages.list", { ...ws, afterSeq: after, limit: 1000 });
        addMessages(page.messages);
        const last = page.messages[page.messages.length - 1];
        if (!last || page.messages.length < 1000) break;
        after = last.seq;
      }
      // The space's recent runs: how the finished ones ended (an error included), and which are still going.
      const recent = await client.call("runs.list", { ...ws, limit: RUN_RECORDS });
      addRecords(recent.runs);
      const waiting = waitingRecords.current;
      waitingRecords.current = null;
      const listed = new Set(recent.runs.map((r) => r.id));
      for (const runId of waiting ?? []) if (!listed.has(runId)) fetchRecord.current(runId);
      await Promise.all(
        recent.runs.filter((run) => run.status === "running").map(async (run) => {
          const { events } = await client.call("runs.events", { workspace_id: workspaceId, runId: run.id });
          addFrames(run.id, events, true);
        }),
      );
    };

    // Each event first marks stale the reads other parts of the screen cache (the watch's rule, invalidation.ts's).
    const handle = openWatch(client, queries, "spaces.watch", ws, {
      onReply: (result) => {
        if (!live.current) return;
        setSpace(result.space);
        catchUp().catch(failed);
      },
      onEvent: (event) => {
        if (isRunFrame(event)) {
          const { runId } = event.payload;
          addFrames(runId, [event], true);
          // The record holds the run's end for good: fetched once it is written, so it outlives the live frames.
          if (event.type === "agents.runFinished") {
            client.call("runs.get", { workspace_id: workspaceId, runId }).then(
              (r) => addRecords([r]),
              () => undefined, // the frames tell the end meanwhile; the next opening fetches the record
            );
          }
        } else if (event.type === "workspace.messagePosted") {
          addMessages([event.payload.message]);
        } else if (event.type === "workspace.spaceProvisioningChanged") {
          const provisioning = provisioningOf(event.payload);
          setSpace((s) => (s ? { ...s, provisioning } : s));
          // The record holds the error that stopped it: fetch the space for the whole story.
          if (provisioning.state === "failed") {
            client.call("spaces.get", ws).then((s) => live.current && setSpace(s), failed);
          }
        } else if (event.type === "workspace.spaceUpdated") {
          const { title, archived } = event.payload;
          setSpace((s) =>
            s ? { ...s, title, archivedAt: archived ? (s.archivedAt ?? event.at) : null } : s,
          );
        }
      },
    }, (e) => live.current && setError(e));
    return () => {
      live.current = false;
      handle.close();
    };
  }, [client, queries, workspaceId, spaceId, addMessages, addFrames, addRecords, failed]);

  const loadOlder = useCallback(() => {
    const oldest = shown.current[0];
    if (!oldest || loadingOlder.current || olderDone) return;
    loadingOlder.current = true;
    client
      .call("messages.list", { workspace_id: workspaceId, spaceId, last: PAGE, beforeSeq: oldest.seq })
      .then((page) => {
        addMessages(page.messages);
        if (page.messages.length < PAGE && live.current) setOlderDone(true);
      }, failed)
      .finally(() => {
        loadingOlder.current = false;
      });
  }, [client, workspaceId, spaceId, olderDone, addMessages, failed]);

  const loadRun = useCallback(
    (runId: string) => {
      client
        .call("runs.events", { workspace_id: workspaceId, runId })
        .then(({ events }) => addFrames(runId, events, false), failed);
    },
    [client, workspaceId, addFrames, failed],
  );

  fetchRecord.current = (runId: string) => {
    if (askedRecords.current.has(runId)) return;
    askedRecords.current.add(runId);
    client.call("runs.get", { workspace_id: workspaceId, runId }).then(
      (r) => addRecords([r]),
      () => {
        // Not the space's failure: the run stays shown without its end, and is asked for again when shown again.
        askedRecords.current.delete(runId);
      },
    );
  };
  const loadRecord = useCallback((runId: string) => {
    if (waitingRecords.current) waitingRecords.current.add(runId);
    else fetchRecord.current(runId);
  }, []);

  return { space, error, opened, messages, runs, records, liveRuns, olderDone, loadOlder, loadRun, loadRecord };
}
