/** The conversation: the windowed stream of messages and agent runs, and older pages as the reader scrolls up. */
import { useCallback, useMemo } from "react";
import type { MessageView, RunView } from "../../generated/ops";
import { MessageRow } from "./MessageRow";
import { RunBlock } from "./RunBlock";
import { timeline, type Frame, type TimelineItem } from "./stream";
import { VirtualList } from "./VirtualList";

interface Props {
  workspaceId: string;
  messages: MessageView[];
  runs: Record<string, Frame[]>;
  records: Record<string, RunView>;
  loadRecord(runId: string): void;
  liveRuns: string[];
  olderDone: boolean;
  loadOlder(): void;
  loadRun(runId: string): void;
  agentName(id: string | null): string;
}

const NONE: string[] = [];

export function Timeline(props: Props) {
  const { workspaceId, messages, runs, records, loadRecord, liveRuns, olderDone, loadOlder, loadRun, agentName } = props;
  const items = useMemo(() => timeline(messages, liveRuns), [messages, liveRuns]);
  // What each run has already posted, so its streamed text is not shown twice (one pass over the history).
  const landed = useMemo(() => {
    const byRun = new Map<string, string[]>();
    for (const m of messages) {
      if (m.runId && m.author.kind === "agent") byRun.set(m.runId, [...(byRun.get(m.runId) ?? []), m.content]);
    }
    return byRun;
  }, [messages]);
  const render = useCallback(
    (item: TimelineItem) =>
      item.kind === "message" ? (
        <MessageRow message={item.message} />
      ) : (
        <RunBlock
          workspaceId={workspaceId}
          runId={item.runId}
          frames={runs[item.runId]}
          record={records[item.runId]}
          landed={landed.get(item.runId) ?? NONE}
          agentName={agentName}
          onLoad={loadRun}
          onRecord={loadRecord}
        />
      ),
    [workspaceId, runs, records, landed, agentName, loadRun, loadRecord],
  );
  if (items.length === 0) return <p className="empty">No messages yet. Say something, or @mention an agent.</p>;
  return (
    <>
      <VirtualList
        items={items}
        render={render}
        estimate={72}
        onReachStart={olderDone ? undefined : loadOlder}
        label="Messages"
        className="stream"
      />
      {olderDone && messages.length > 0 && <p className="visually-hidden">The whole history is loaded.</p>}
    </>
  );
}
