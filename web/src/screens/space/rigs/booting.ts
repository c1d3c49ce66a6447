/** A rig being opened is listed as soon as it is provisioned, long before `rig.open` answers (a first boot builds
 * its image pack: minutes). The space looks for it a moment after asking, so its tab (the boot's steps and
 * progress, followed by `rig.watch`) shows while it boots instead of a button that only says "Opening…". */
import type { Write } from "../../../data/mutations";

/** How long after `rig.open` is sent the space looks for the rig booting (a warm open answers before). */
export const BOOT_PEEK_MS = 1500;

/** The space's rig of `surface` (and, for a browser, `engine`) that is booting, or null. */
export async function bootingRig(
  call: Write,
  workspaceId: string,
  spaceId: string,
  surface: string,
  engine: string | null,
): Promise<string | null> {
  const rows = await call("rig_list", { workspace_id: workspaceId });
  const booting = rows.find(
    (r) =>
      r.spaceId === spaceId &&
      r.surface === surface &&
      (engine === null || r.engine === engine) &&
      r.status === "provisioning",
  );
  return booting?.rigId ?? null;
}
