/** One message of the stream: author, time and text (shown as written: no markup is interpreted). */
import { memo } from "react";
import type { MessageView } from "../../generated/ops";

const TIME = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });

export const MessageRow = memo(function MessageRow({ message }: { message: MessageView }) {
  const when = new Date(message.createdAt);
  return (
    <article className="msg" data-kind={message.author.kind} data-seq={message.seq}>
      <header>
        <span className="author">{message.author.name}</span>
        {message.author.kind !== "user" && <span className="badge">{message.author.kind}</span>}
        <time dateTime={message.createdAt}>{Number.isNaN(when.getTime()) ? "" : TIME.format(when)}</time>
      </header>
      <p className="content">{message.content}</p>
    </article>
  );
});
