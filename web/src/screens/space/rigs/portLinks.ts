/** Where a forwarded rig port can be opened from this browser. A forward binds the rig's own loopback address on
 * the server host (never 127.0.0.1, which belongs to the host's own services), which only a browser on that host
 * reaches; a port shared on the local network is reachable at the server's address. */
import type { PortRow } from "../../../generated/ops";

const LOOPBACK = new Set(["localhost", "127.0.0.1", "[::1]", "::1"]);

export function portUrl(port: PortRow, page: { protocol: string; hostname: string }): string | null {
  if (!port.forwarded) return null;
  const host = page.hostname.includes(":") && !page.hostname.startsWith("[") ? `[${page.hostname}]` : page.hostname;
  if (port.lanPort !== null) return `http://${host}:${port.lanPort}/`;
  if (port.hostPort !== null && port.hostAddress !== null && LOOPBACK.has(page.hostname)) {
    return `http://${port.hostAddress}:${port.hostPort}/`;
  }
  return null;
}
