/** Which server process holds the connection, from `chat.status`'s `owner`: with several servers on one set of
 * records exactly one of them dials, and this names it (its host and process id) whichever server answers. Nothing
 * is shown while no server holds it. */
import type { ChatStatus } from "../../generated/ops";

export function holderText(owner: ChatStatus["owner"]): string | null {
  return owner ? `Held by server ${owner.host} (pid ${owner.pid})` : null;
}

export function ConnectionHolder({ status }: { status: ChatStatus }) {
  const text = holderText(status.owner);
  return text ? <p className="hint chat-holder">{text}</p> : null;
}
