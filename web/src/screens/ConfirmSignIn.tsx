/** Confirming a credential a link offered (`#token=` that answers no sign-in this tab started; `auth/signin.ts`).
 *
 * Nothing runs with the offered credential but `GET /auth/me`, which says whose it is. The person sees that
 * account and, when this browser is signed in already, the account it is signed in as now; the stored credential
 * is replaced only by a click on the button naming the new account. Declining keeps everything as it was. */
import { useEffect, useState } from "react";

export interface Holder {
  userId: string;
  displayName: string | null;
  email: string | null;
}

export type Lookup =
  | { kind: "loading" }
  | { kind: "found"; who: Holder }
  | { kind: "rejected" }
  | { kind: "unreachable" };

const REJECTED =
  "This sign-in link does not work: the server does not accept its credential (revoked, expired or made up).";
const UNREACHABLE = "The server could not be reached to check this sign-in link.";

/** Who holds `token`, by `GET /auth/me`: `rejected` when the server refuses it (revoked, expired, made up). */
export async function holderOf(token: string): Promise<Lookup> {
  try {
    const response = await fetch("/auth/me", {
      headers: { Authorization: `Bearer ${token}`, Accept: "application/json" },
      cache: "no-store",
    });
    if (response.status === 401 || response.status === 403) return { kind: "rejected" };
    if (!response.ok) return { kind: "unreachable" };
    const body = (await response.json()) as Partial<Holder>;
    if (typeof body.userId !== "string") return { kind: "unreachable" };
    return {
      kind: "found",
      who: {
        userId: body.userId,
        displayName: typeof body.displayName === "string" && body.displayName ? body.displayName : null,
        email: typeof body.email === "string" && body.email ? body.email : null,
      },
    };
  } catch {
    return { kind: "unreachable" };
  }
}

/** The name to show for an account: its display name, else its email, else its id. */
export function nameOf(who: Holder): string {
  return who.displayName ?? who.email ?? who.userId;
}

function useHolder(token: string | null): Lookup | null {
  const [lookup, setLookup] = useState<Lookup | null>(token ? { kind: "loading" } : null);
  useEffect(() => {
    if (!token) {
      setLookup(null);
      return;
    }
    let live = true;
    setLookup({ kind: "loading" });
    void holderOf(token).then((found) => live && setLookup(found));
    return () => {
      live = false;
    };
  }, [token]);
  return lookup;
}

function Account({ who }: { who: Holder }) {
  const name = nameOf(who);
  return (
    <p className="account">
      <strong>{name}</strong>
      {who.email && who.email !== name && <span className="hint"> ({who.email})</span>}
    </p>
  );
}

/** A link that signed nothing in: why, that nothing changed, and the way on. */
export function Unchanged({ why, onContinue }: { why: string; onContinue(): void }) {
  return (
    <>
      <p className="error" role="alert">
        {why} Nothing was changed.
      </p>
      <div className="choices">
        <button type="button" onClick={onContinue}>
          Continue
        </button>
      </div>
    </>
  );
}

export function ConfirmSignIn({
  offered,
  current,
  onAccept,
  onDecline,
}: {
  offered: string;
  current: string | null;
  onAccept(): void;
  onDecline(): void;
}) {
  const offer = useHolder(offered);
  const now = useHolder(current);
  const server = window.location.host;

  const switching = current !== null;
  const title = switching ? "Switch accounts?" : "Sign in?";
  let body;
  if (!offer || offer.kind === "loading") {
    body = <p role="status">Checking whose sign-in this link holds…</p>;
  } else if (offer.kind !== "found") {
    body = <Unchanged why={offer.kind === "rejected" ? REJECTED : UNREACHABLE} onContinue={onDecline} />;
  } else {
    const newName = nameOf(offer.who);
    const nowName = now?.kind === "found" ? nameOf(now.who) : null;
    body = (
      <>
        <p>
          A link asks this browser to sign in to Hangar on <strong>{server}</strong> as
        </p>
        <Account who={offer.who} />
        {switching ? (
          <>
            <p>This browser is signed in now as</p>
            {now?.kind === "found" ? (
              <Account who={now.who} />
            ) : (
              <p className="hint">{now?.kind === "loading" ? "…" : "an account this server no longer accepts"}</p>
            )}
            <p className="hint">
              Switch only if you asked for this sign-in yourself. A link from someone else puts you in their account:
              what you do and type would happen there.
            </p>
          </>
        ) : (
          <p className="hint">
            Continue only if you asked for this sign-in yourself. A link from someone else puts you in their account:
            what you do and type would happen there.
          </p>
        )}
        <div className="choices">
          <button type="button" onClick={onAccept}>
            {switching ? `Switch to ${newName}` : `Sign in as ${newName}`}
          </button>
          <button type="button" className="secondary" onClick={onDecline}>
            {switching ? (nowName ? `Stay signed in as ${nowName}` : "Keep the current sign-in") : "Cancel"}
          </button>
        </div>
      </>
    );
  }
  return (
    <main className="connect" aria-labelledby="confirm-title">
      <h1 id="confirm-title">{title}</h1>
      <section className="card" aria-label="The link's sign-in">
        {body}
      </section>
    </main>
  );
}
