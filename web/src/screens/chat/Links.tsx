/** Linking chat accounts: the dialog that mints the caller's one-time code and shows the command to send (it
 * closes by itself once the roster shows the caller linked), and the roster of linked members, which follows
 * `chat.watchUserLinks`. */
import { useEffect, useId, useRef, useState } from "react";
import type { LinkCode, UserLinkView } from "../../generated/ops";
import { ConfirmButton } from "../../components/ConfirmButton";
import { Refusal } from "../../components/Outcome";
import { when } from "../../components/time";
import { useAction, useWrite } from "../../data/mutations";
import { useRead } from "../../data/queries";
import { linkCommand, timeLeft } from "./logic";

function useNow(active: boolean): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (!active) return;
    setNow(Date.now());
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, [active]);
  return now;
}

/** What identifies the caller's link now, to tell a new one from the one they may already have. */
function linkKey(links: UserLinkView[] | undefined, me: string): string | null {
  const mine = links?.find((l) => l.userId === me);
  return mine ? `${mine.externalTeamId}/${mine.externalUserId}/${mine.linkedAt}` : null;
}

export function LinkMyAccount(props: {
  workspaceId: string;
  provider: string;
  label: string;
  command: string | undefined;
  me: string;
  links: UserLinkView[] | undefined;
}) {
  const write = useWrite();
  const action = useAction();
  const titleId = useId();
  const dialog = useRef<HTMLDialogElement>(null);
  const [code, setCode] = useState<(LinkCode & { before: string | null }) | null>(null);
  const [linked, setLinked] = useState<string | null>(null);
  const now = useNow(code !== null);
  const current = linkKey(props.links, props.me);

  const mint = async () => {
    setLinked(null);
    const before = linkKey(props.links, props.me);
    const minted = await action.run(() =>
      write("chat.beginUserLink", { workspace_id: props.workspaceId, provider: props.provider }),
    );
    if (minted) setCode({ ...minted, before });
  };

  useEffect(() => {
    const d = dialog.current;
    if (!d) return;
    if (code && !d.open) d.showModal();
    else if (!code && d.open) d.close();
  }, [code]);

  // The roster shows the caller linked (anew): the code did its work, the dialog goes.
  useEffect(() => {
    if (code && current !== null && current !== code.before) {
      const mine = props.links?.find((l) => l.userId === props.me);
      setLinked(mine ? mine.externalUserId : null);
      setCode(null);
    }
  }, [code, current, props.links, props.me]);

  const expired = code !== null && Date.parse(code.expiresAt) <= now;
  const mine = props.links?.find((l) => l.userId === props.me);
  return (
    <div className="chat-link">
      <p>
        {mine ? (
          <>
            Your {props.label} account <code>{mine.externalUserId}</code> is linked.
          </>
        ) : (
          <>Your {props.label} account is not linked: the bot answers you only once it is.</>
        )}
      </p>
      <button type="button" disabled={action.busy} onClick={() => void mint()}>
        {mine ? "Link my chat account again" : "Link my chat account"}
      </button>
      <Refusal error={action.error} />
      {linked && (
        <p className="chat-done" role="status">
          Linked: {props.label} account {linked} is now yours.
        </p>
      )}
      <dialog ref={dialog} className="chat-dialog" aria-labelledby={titleId} onClose={() => setCode(null)}>
        <h2 id={titleId}>Link my chat account</h2>
        {code && (
          <>
            <p>Send this from {props.label}, in any channel or in a direct message with the bot:</p>
            <p>
              <code className="chat-command" aria-label="Command to send">
                {linkCommand(props.command, code.code)}
              </code>
            </p>
            <p>
              Code <strong className="chat-code">{code.code}</strong>, one use.{" "}
              {expired ? (
                <span role="alert">It has expired: make a new one.</span>
              ) : (
                <span>
                  Expires in <time dateTime={code.expiresAt}>{timeLeft(code.expiresAt, now)}</time>.
                </span>
              )}
            </p>
            <p className="hint">This closes by itself once your account is linked.</p>
          </>
        )}
        <div className="chat-dialog-actions">
          {expired && (
            <button type="button" onClick={() => void mint()}>
              New code
            </button>
          )}
          <form method="dialog">
            <button type="submit" className="secondary" autoFocus>
              Close
            </button>
          </form>
        </div>
      </dialog>
    </div>
  );
}

export function Roster(props: {
  workspaceId: string;
  provider: string;
  label: string;
  links: UserLinkView[] | undefined;
  me: string | undefined;
  admin: boolean;
}) {
  const write = useWrite();
  const action = useAction();
  const members = useRead("members.list", { workspace_id: props.workspaceId });
  // Read again when the linked people change: someone who joined after the page opened may have linked.
  const linkedUsers = (props.links ?? []).map((l) => l.userId).sort().join(",");
  const { reload } = members;
  const seenLinks = useRef(linkedUsers);
  useEffect(() => {
    if (seenLinks.current === linkedUsers) return;
    seenLinks.current = linkedUsers;
    reload();
  }, [linkedUsers, reload]);
  const names = new Map((members.data ?? []).map((m) => [m.userId, m.displayName]));
  const nameOf = (userId: string) => names.get(userId) ?? (members.loading ? "…" : "a former member");
  const unlink = (userId: string) =>
    void action.run(() =>
      write("chat.unlinkUser", { workspace_id: props.workspaceId, provider: props.provider, userId }),
    );
  const titleId = useId();
  return (
    <section aria-labelledby={titleId}>
      <h3 id={titleId}>Linked members</h3>
      {props.links === undefined && <p role="status">Loading the linked members…</p>}
      {props.links?.length === 0 && <p className="hint">No one has linked a {props.label} account yet.</p>}
      {props.links !== undefined && props.links.length > 0 && (
        <div className="chat-table-wrap">
          <table className="table chat-roster" aria-labelledby={titleId}>
            <thead>
              <tr>
                <th scope="col">Member</th>
                <th scope="col">{props.label} user</th>
                <th scope="col">How</th>
                <th scope="col">Linked at</th>
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {props.links.map((l) => {
                const name = nameOf(l.userId);
                const own = l.userId === props.me;
                return (
                  <tr key={`${l.externalTeamId}/${l.externalUserId}`}>
                    <td>
                      {name}
                      {own && " (you)"}
                    </td>
                    <td>
                      <code>{l.externalUserId}</code>
                    </td>
                    <td>{l.method === "email" ? "verified email" : "code"}</td>
                    <td>{when(l.linkedAt)}</td>
                    <td>
                      {(own || props.admin) && (
                        <ConfirmButton
                          label="Unlink"
                          name={`Unlink ${name}`}
                          question={`Unlink ${own ? "your" : `${name}'s`} ${props.label} account?`}
                          busy={action.busy}
                          onConfirm={() => unlink(l.userId)}
                        />
                      )}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      <Refusal error={action.error} />
    </section>
  );
}
