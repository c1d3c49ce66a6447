/** The connect screen (`/connect`, CONTRACTS.md sections 3, 4 and 9): a pairing code and a device name, or one
 * button per single sign-on provider of `/auth/providers`, each opening the `web-popup` sign-in (or, where pop-ups
 * are blocked, the same sign-in in this tab). Each sign-in carries a fresh `client_state` this tab keeps; only an
 * answer echoing it signs the tab in (`auth/signin.ts`). It says how the server owner gets in (the sign-in link the
 * server printed, or a new one from `hangar admin sign-in-link`).
 *
 * What people paste into the code box besides a code is taken for what it is: a whole sign-in link (its code is
 * redeemed), or a device credential (`hgr_…`, what `hangar admin owner-token` prints), which is checked with
 * `GET /auth/me` and kept when the server accepts it. This screen shows only where the browser keeps no
 * credential, so nothing is replaced, and the person typed it themselves. */
import { useEffect, useId, useState, type FormEvent } from "react";
import { linkCodeInFragment, startSignIn, takeStartedSignIn } from "../auth/signin";
import { pairWithCode, UNREACHABLE } from "../auth/signinLink";
import { markFirstRender } from "../perf";
import { holderOf } from "./ConfirmSignIn";

interface Provider {
  id: string;
  kind: string;
  label: string;
  loginUrl?: string;
}

interface Providers {
  providers: Provider[];
  pairingEnabled: boolean;
}

/** The message the server's `/auth/popup-complete` page posts to this tab (`hangar.sso.handoff`). */
const POPUP_MESSAGE_TYPE = "hangar:sso";

export function defaultDeviceName(userAgent: string): string {
  const browser = /Firefox\//.test(userAgent)
    ? "Firefox"
    : /Edg\//.test(userAgent)
      ? "Edge"
      : /Chrom(e|ium)\//.test(userAgent)
        ? "Chromium"
        : /Safari\//.test(userAgent)
          ? "Safari"
          : "Browser";
  return `${browser} (web)`;
}

/** Device credentials start so (`hangar.core.ids.new_token`); no pairing code does (codes are letters and digits). */
const CREDENTIAL_PREFIX = "hgr_";
const CREDENTIAL_REFUSED =
  "This is a device credential, not a pairing code, and this server does not accept it: it was revoked, has " +
  "expired, or belongs to another server.";

/** A credential pasted in the code box: kept when the server accepts it, else why not. */
async function checkedCredential(token: string): Promise<{ token: string } | { error: string }> {
  const found = await holderOf(token);
  if (found.kind === "found") return { token };
  return { error: found.kind === "rejected" ? CREDENTIAL_REFUSED : UNREACHABLE };
}

export function Connect({ notice, onConnected }: { notice: string | null; onConnected(token: string): void }) {
  const [providers, setProviders] = useState<Providers | null>(null);
  const [code, setCode] = useState("");
  const [deviceName, setDeviceName] = useState(() => defaultDeviceName(navigator.userAgent));
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const codeId = useId();
  const nameId = useId();

  useEffect(() => markFirstRender(), []);

  useEffect(() => {
    let live = true;
    fetch("/auth/providers", { headers: { Accept: "application/json" } })
      .then(async (r) => (r.ok ? ((await r.json()) as Providers) : null))
      .then((p) => live && setProviders(p ?? { providers: [], pairingEnabled: true }))
      .catch(() => live && setProviders({ providers: [], pairingEnabled: true }));
    return () => {
      live = false;
    };
  }, []);

  useEffect(() => {
    const receive = (event: MessageEvent) => {
      // Only the server's own popup page may hand a credential over (it is served from this origin).
      if (event.origin !== window.location.origin) return;
      const data = event.data as { type?: unknown; token?: unknown; state?: unknown } | null;
      if (data?.type !== POPUP_MESSAGE_TYPE || typeof data.token !== "string" || !data.token) return;
      // Only the answer to a sign-in this tab started: any other page of this origin could post the message.
      if (takeStartedSignIn(window.sessionStorage, data.state)) onConnected(data.token);
      else setError("A sign-in answer this tab did not ask for was ignored. Sign in again from here.");
    };
    window.addEventListener("message", receive);
    return () => window.removeEventListener("message", receive);
  }, [onConnected]);

  const pair = async (e: FormEvent) => {
    e.preventDefault();
    setError(null);
    setBusy(true);
    try {
      const typed = code.trim();
      if (typed.startsWith(CREDENTIAL_PREFIX)) {
        const checked = await checkedCredential(typed);
        if ("token" in checked) onConnected(checked.token);
        else setError(checked.error);
        return;
      }
      // A whole sign-in link pasted: its code.
      const fromLink = typed.includes("#") ? linkCodeInFragment(typed.slice(typed.indexOf("#"))) : null;
      const result = await pairWithCode(fromLink ?? typed, deviceName.trim());
      if (result.ok) onConnected(result.token);
      else setError(result.message);
    } finally {
      setBusy(false);
    }
  };

  const signIn = (provider: Provider) => {
    setError(null);
    const login = provider.loginUrl ?? `/${provider.kind}/login`;
    const state = startSignIn(window.sessionStorage);
    const origin = window.location.origin;
    const query = new URLSearchParams({ relay: "web-popup", client_origin: origin, client_state: state });
    const popup = window.open(`${login}?${query.toString()}`, "hangar-sign-in", "popup,width=520,height=680");
    // Pop-ups blocked: the same sign-in in this tab; it comes back to `/` with the state this tab kept.
    if (!popup) window.location.assign(`${login}?${new URLSearchParams({ client_state: state }).toString()}`);
  };

  const pairing = providers?.pairingEnabled !== false;
  return (
    <main className="connect" aria-labelledby="connect-title">
      <h1 id="connect-title">Connect to Hangar</h1>
      {notice && (
        <p className="notice" role="alert">
          {notice}
        </p>
      )}
      {pairing ? (
        <form className="card" onSubmit={pair} aria-labelledby="pair-title">
          <h2 id="pair-title">With a pairing code</h2>
          <p className="hint">
            Get a code from a device you are already connected with, or from the invite a workspace admin sent you. A
            device credential or a whole sign-in link works here too.
          </p>
          <label htmlFor={codeId}>Pairing code</label>
          <input
            id={codeId}
            name="code"
            autoComplete="one-time-code"
            autoCapitalize="characters"
            spellCheck={false}
            required
            value={code}
            onChange={(e) => setCode(e.target.value)}
          />
          <label htmlFor={nameId}>Device name</label>
          <input
            id={nameId}
            name="deviceName"
            autoComplete="off"
            maxLength={120}
            value={deviceName}
            onChange={(e) => setDeviceName(e.target.value)}
          />
          {error && (
            <p className="error" role="alert">
              {error}
            </p>
          )}
          <button type="submit" disabled={busy || !code.trim()}>
            {busy ? "Connecting…" : "Connect"}
          </button>
        </form>
      ) : (
        <p className="hint">Pairing with a code is turned off on this server; sign in with your organization.</p>
      )}
      {providers && providers.providers.length > 0 && (
        <section className="card" aria-labelledby="sso-title">
          <h2 id="sso-title">With your organization</h2>
          <ul className="providers">
            {providers.providers.map((p) => (
              <li key={p.id}>
                <button type="button" className="secondary" onClick={() => signIn(p)}>
                  Sign in with {p.label}
                </button>
              </li>
            ))}
          </ul>
          {!pairing && error && (
            <p className="error" role="alert">
              {error}
            </p>
          )}
        </section>
      )}
      <section className="card" aria-labelledby="owner-title">
        <h2 id="owner-title">Server owner</h2>
        <p className="hint">
          Open the sign-in link the server printed when it started. For a new one, run{" "}
          <code>hangar admin sign-in-link</code> on the server's machine: the server's output shows the full command.
          A link works once, within 15 minutes.
        </p>
      </section>
    </main>
  );
}
