/** Settings, Server, Rigs, Clipboard access (rigs.md, Authentication 3): clipboard crossing is each person's,
 * per direction. Pasting into a rig is allowed by default; copying out of a rig asks, unless you allow it here
 * always (or for ten minutes from the live view's prompt). Everyone manages their own grants; the server owner
 * also sees everyone's "always allow" and can revoke it. */
import type { ClipboardGrantRow } from "../../generated/ops";
import { Outcome } from "../../components/Outcome";
import { when } from "../../components/time";
import { useAction, useWrite } from "../../data/mutations";
import { useRead } from "../../data/queries";

const DIRECTION: Record<ClipboardGrantRow["direction"], string> = {
  rigToHost: "Copy from rigs to your computer",
  hostToRig: "Paste from your computer into rigs",
};

function GrantList({
  grants,
  label,
  busy,
  showWho,
  onRevoke,
}: {
  grants: ClipboardGrantRow[];
  label: string;
  busy: boolean;
  showWho: boolean;
  onRevoke(grant: ClipboardGrantRow): void;
}) {
  if (grants.length === 0) return <p>None.</p>;
  return (
    <ul className="grants" aria-label={label}>
      {grants.map((g) => (
        <li key={g.id}>
          <span>
            {showWho && <strong>{g.displayName}: </strong>}
            {DIRECTION[g.direction]} — {g.always ? "always allowed" : `allowed until ${when(g.expiresAt)}`}
          </span>
          <button
            type="button"
            className="secondary small"
            disabled={busy}
            aria-label={`Revoke: ${showWho ? `${g.displayName}, ` : ""}${DIRECTION[g.direction].toLowerCase()}`}
            onClick={() => onRevoke(g)}
          >
            Revoke
          </button>
        </li>
      ))}
    </ul>
  );
}

function Everyone({ selfId }: { selfId: string }) {
  const write = useWrite();
  const everyone = useRead("rig.clipboardGrants", { everyone: true });
  const action = useAction();
  const revoke = (g: ClipboardGrantRow) =>
    void action.report(async () => {
      everyone.set(await write("rig.clipboardRevoke", { direction: g.direction, userId: g.userId }));
      return `Revoked ${g.displayName}'s grant.`;
    });
  const others = (everyone.data?.grants ?? []).filter((g) => g.always && g.userId !== selfId);
  return (
    <>
      <h3>Everyone else's "always allow"</h3>
      {everyone.error ? (
        <p className="error" role="alert">
          {everyone.error.message}
        </p>
      ) : (
        <GrantList
          grants={others}
          label="Other people's always-allow grants"
          busy={action.busy}
          showWho
          onRevoke={revoke}
        />
      )}
      <Outcome action={action} />
    </>
  );
}

export function ClipboardAccess({ selfId, serverOwner }: { selfId: string; serverOwner: boolean }) {
  const write = useWrite();
  const mine = useRead("rig.clipboardGrants", {});
  const action = useAction();
  const revoke = (g: ClipboardGrantRow) =>
    void action.report(async () => {
      mine.set(await write("rig.clipboardRevoke", { direction: g.direction }));
      return g.direction === "rigToHost" ? "Revoked: copying from rigs asks again." : "Revoked.";
    });
  const always = () =>
    void action.report(async () => {
      mine.set(await write("rig.clipboardGrant", { direction: "rigToHost", always: true }));
      return "Copying from rigs to your computer is always allowed now.";
    });
  const own = mine.data?.grants ?? [];
  const alwaysOn = own.some((g) => g.direction === "rigToHost" && g.always);
  return (
    <section aria-labelledby="clipboard-access" className="panel">
      <h2 id="clipboard-access">Clipboard access</h2>
      <p className="hint">
        Yours alone, per direction. Pasting from your computer into a rig is allowed. Copying from a rig to your
        computer asks each time until you allow it for ten minutes (from the rig's live view) or always (here).
      </p>
      {mine.error && (
        <p className="error" role="alert">
          {mine.error.message}
        </p>
      )}
      {!mine.data && !mine.error && <p aria-busy="true">Loading your clipboard grants…</p>}
      {mine.data && (
        <>
          <h3>Your grants</h3>
          <GrantList grants={own} label="Your clipboard grants" busy={action.busy} showWho={false} onRevoke={revoke} />
          {!alwaysOn && (
            <button type="button" className="secondary" disabled={action.busy} onClick={always}>
              Always allow copying from rigs
            </button>
          )}
          <Outcome action={action} />
        </>
      )}
      {serverOwner && <Everyone selfId={selfId} />}
    </section>
  );
}
