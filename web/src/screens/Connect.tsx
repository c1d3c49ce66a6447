/** The connect screen (`/connect`, CONTRACTS.md sections 3, 4 and 9): a pairing code and a device name, or one
 * button per single sign-on provider of `/auth/providers`, each opening the `web-popup` sign-in (or, where pop-ups
 * are blocked, the same sign-in in this tab). Each sign-in carries a fresh `client_state` this tab keeps; only an
 * answer echoing it signs the tab in (`auth/signin.ts`). */
import { useEffect, useId, useState, type FormEvent } from "react";
import { startSignIn, takeStartedSignIn } from "../auth/signin";
import { markFirstRender } from "../perf";

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

async function errorMessage(response: Response): Promise<string> {
  try {
    const body = (await response.json()) as { error?: { message?: string } };
    if (body.error?.message) return body.error.message;
  } catch {
    /* not JSON: fall through */
  }
  return `The server answered ${response.status}.`;
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
      const response = await fetch("/auth/pair", {
        method: "POST",
        headers: { "Content-Type": "application/json", Accept: "application/json" },
        body: JSON.stringify({ code: code.trim(), deviceName: deviceName.trim() }),
      });
      if (!response.ok) {
        setError(await errorMessage(response));
        return;
      }
      const body = (await response.json()) as { token?: unknown };
      if (typeof body.token !== "string") {
        setError("The server did not hand over a credential.");
        return;
      }
      onConnected(body.token);
    } catch {
      setError("The server could not be reached. Check that it is running, then try again.");
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
            Get a code from a device you are already connected with, or from the invite a workspace admin sent you.
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
    </main>
  );
}
