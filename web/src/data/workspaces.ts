/** The signed-in person's workspaces: the entry of the one a page is about (its name and their role there). */
import type { WorkspaceEntry } from "../generated/ops";
import type { RpcError } from "../rpc/errors";
import { useRead } from "./queries";

export const ROLES = ["guest", "member", "admin", "owner"] as const;

/** The signed-in person's entry for the workspace, from `workspaces.list`. */
export function useWorkspace(workspaceId: string): {
  workspace: WorkspaceEntry | undefined;
  missing: boolean;
  error: RpcError | undefined;
} {
  const list = useRead("workspaces.list", {});
  const workspace = list.data?.find((w) => w.id === workspaceId);
  // Missing only once the list is fresh: a workspace made a moment ago is not in the cached list yet.
  return { workspace, missing: list.data !== undefined && !workspace && !list.loading, error: list.error };
}

export function isAdmin(role: string | undefined): boolean {
  return role === "admin" || role === "owner";
}
