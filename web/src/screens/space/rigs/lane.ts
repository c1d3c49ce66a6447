/** The rig's socket lanes (the terminal's PTY, the browser's live view): a URL the server mints over RPC, opened
 * as a WebSocket whose first text frame authenticates with the device credential. Binary frames and JSON text
 * notices go to the caller; a text frame that is not JSON is not a notice and is dropped. */
import { loadToken } from "../../../auth/credential";
import { RpcError } from "../../../rpc/errors";

export type LaneState = "connecting" | "open" | "closed";

export interface LaneOptions<N> {
  /** Mint the lane's URL (`rig.terminalUrl`, `rig.liveViewUrl`): the path is what the socket opens. */
  mint: () => Promise<{ path: string }>;
  /** The query the lane opens with, asked for once the URL is minted (sizes may have changed meanwhile). */
  query: () => Record<string, number>;
  onState: (state: LaneState) => void;
  /** Why the lane could not be minted. */
  onError: (message: string) => void;
  onOpen?: () => void;
  onBinary: (data: ArrayBuffer) => void;
  onNotice: (notice: N) => void;
}

export interface Lane {
  /** The socket once minted, open or not (check `readyState` before sending). */
  readonly socket: WebSocket | null;
  /** Close the lane for good: nothing is reported after this. */
  close: () => void;
}

/** The `ws:`/`wss:` URL of a lane path, on this page's origin, with `query`. */
export function laneUrl(path: string, query: Record<string, number>): string {
  const url = new URL(path, window.location.href);
  url.protocol = window.location.protocol === "https:" ? "wss:" : "ws:";
  for (const [name, value] of Object.entries(query)) url.searchParams.set(name, String(value));
  return url.toString();
}

export function openLane<N>(options: LaneOptions<N>): Lane {
  let ended = false;
  let socket: WebSocket | null = null;
  options.onState("connecting");
  options
    .mint()
    .then((lane) => {
      if (ended) return;
      const ws = new WebSocket(laneUrl(lane.path, options.query()));
      ws.binaryType = "arraybuffer";
      socket = ws;
      ws.onopen = () => {
        ws.send(JSON.stringify({ type: "auth", token: loadToken(window.localStorage) ?? "" }));
        options.onState("open");
        options.onOpen?.();
      };
      ws.onmessage = (ev: MessageEvent<ArrayBuffer | string>) => {
        if (typeof ev.data !== "string") {
          options.onBinary(ev.data);
          return;
        }
        let notice: N;
        try {
          notice = JSON.parse(ev.data) as N;
        } catch {
          return;
        }
        options.onNotice(notice);
      };
      ws.onclose = () => {
        if (!ended) options.onState("closed");
      };
    })
    .catch((e: unknown) => {
      if (ended) return;
      options.onState("closed");
      options.onError(e instanceof RpcError ? e.message : String(e));
    });
  return {
    get socket() {
      return socket;
    },
    close: () => {
      ended = true;
      socket?.close(1000);
    },
  };
}
