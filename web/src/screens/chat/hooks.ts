/** What the chat settings follow: the connection status (read again every few seconds while the section is on
 * screen and the tab visible, and at once after a change), and the roster of linked members (the watch). */
import { useEffect, useState, type RefObject } from "react";
import type { UserLinkView } from "../../generated/ops";
import type { RpcError } from "../../rpc/errors";
import { useRead } from "../../data/queries";
import { useWatchedState } from "../../data/watch";

export const STATUS_EVERY_MS = 3000;

/** Whether `ref`'s element is (at least partly) in the viewport; true where the browser cannot tell. */
export function useOnScreen(ref: RefObject<Element | null>): boolean {
  const [on, setOn] = useState(true);
  useEffect(() => {
    const el = ref.current;
    if (!el || typeof IntersectionObserver === "undefined") return;
    const observer = new IntersectionObserver((entries) => setOn(entries.some((e) => e.isIntersecting)));
    observer.observe(el);
    return () => observer.disconnect();
  }, [ref]);
  return on;
}

export function useChatStatus(workspaceId: string, provider: string, onScreen: boolean) {
  // A hidden tab is not polled (the data layer's interval pauses in the background).
  const status = useRead("chat.status", { workspace_id: workspaceId, provider }, { everyMs: onScreen && STATUS_EVERY_MS });
  return { ...status, refresh: status.reload };
}

/** The roster of linked members: the watch's reply, then the whole roster again at every change. */
export function useRoster(workspaceId: string, provider: string): { links: UserLinkView[] | undefined; error: RpcError | null } {
  const roster = useWatchedState("chat.watchUserLinks", { workspace_id: workspaceId, provider }, (r) => r.links);
  return { links: roster.data, error: roster.error };
}
