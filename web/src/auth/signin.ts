/** Sign-ins this tab started, and what becomes of a credential that arrives in the address (CONTRACTS.md
 * sections 4 and 9).
 *
 * A link carrying `#token=<credential>` may come from anyone: opened silently, someone else's credential would
 * sign this browser into their account (login CSRF), and the person would then work, and type, in their
 * workspaces. So every sign-in this client starts (the SSO popup, or the same-tab redirect when pop-ups are
 * blocked) carries a random `client_state` that this tab keeps in `sessionStorage`, which no other site can
 * read; the server echoes it in the hand-off (`#token=...&state=...`, or in the popup's message). A credential
 * comes in without a question only with a state this tab kept (once), or from a plain link (no state) where the
 * browser keeps none (there is nothing to replace, CONTRACTS.md 9). Any other is an offer: kept in memory, never stored, until the person has
 * seen whose account it is and said yes (`screens/ConfirmSignIn`). Either way the fragment leaves the address
 * bar and the history at once.
 *
 * A one-time sign-in link (`#signin=<code>`, the server owner's, printed by the server) carries a code instead of
 * a credential, and follows the same rule once the code is redeemed (`signinLink.ts`): the credential it yields is
 * kept without a question where the browser keeps none, and is otherwise an offer. The code leaves the address bar
 * and the history at once like a credential, and is redeemed only by this client's request. */
import { loadToken, saveToken, type KeyValueStore } from "./credential";

export const SIGNIN_STATES_KEY = "hangar.signin.states";
/** How long a started sign-in may take to come back; the server forgets its side after ten minutes. */
export const STATE_TTL_MS = 15 * 60 * 1000;
/** Sign-ins one tab may have in flight (a person trying one provider, then another). */
export const MAX_STATES = 5;

interface Kept {
  state: string;
  at: number;
}

// Where states live when the tab's session storage is unavailable: the popup's answer still finds them.
let inMemory: Kept[] = [];

function parse(raw: string | null): unknown {
  try {
    return raw ? JSON.parse(raw) : [];
  } catch {
    return []; // not what this module wrote
  }
}

function read(session: KeyValueStore, now: number): Kept[] {
  let kept: unknown;
  try {
    kept = parse(session.getItem(SIGNIN_STATES_KEY));
  } catch {
    kept = inMemory; // session storage unavailable
  }
  if (!Array.isArray(kept)) return [];
  return kept.filter(
    (k): k is Kept =>
      typeof k === "object" &&
      k !== null &&
      typeof (k as Kept).state === "string" &&
      typeof (k as Kept).at === "number" &&
      now - (k as Kept).at >= 0 &&
      now - (k as Kept).at < STATE_TTL_MS,
  );
}

function write(session: KeyValueStore, kept: Kept[]): void {
  inMemory = kept;
  try {
    if (kept.length) session.setItem(SIGNIN_STATES_KEY, JSON.stringify(kept));
    else session.removeItem(SIGNIN_STATES_KEY);
  } catch {
    /* unavailable: kept in memory for this page */
  }
}

/** 32 random bytes, base64url: the shape the server accepts for `client_state` (16 to 128 of `[A-Za-z0-9_-]`). */
export function randomState(): string {
  const bytes = new Uint8Array(32);
  crypto.getRandomValues(bytes);
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** Start a sign-in: a fresh state, kept for this tab; pass it to the login as `client_state`. */
export function startSignIn(
  session: KeyValueStore,
  now: number = Date.now(),
  random: () => string = randomState,
): string {
  const state = random();
  write(session, [...read(session, now), { state, at: now }].slice(-MAX_STATES));
  return state;
}

/** Whether `state` answers a sign-in this tab started and has not seen answered yet; a match is used up. */
export function takeStartedSignIn(session: KeyValueStore, state: unknown, now: number = Date.now()): boolean {
  if (typeof state !== "string" || !state) return false;
  const kept = read(session, now);
  const match = kept.findIndex((k) => sameString(k.state, state));
  if (match < 0) {
    write(session, kept); // drops the expired ones
    return false;
  }
  write(session, kept.filter((_, i) => i !== match));
  return true;
}

// Compares every character whatever the first difference, so the comparison's time says nothing about the state.
function sameString(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

export interface Handoff {
  token: string;
  state: string | null;
}

function fragmentParam(hash: string, name: string): string | null {
  const match = new RegExp(`[#&]${name}=([^&]*)`).exec(hash);
  if (!match?.[1]) return null;
  try {
    return decodeURIComponent(match[1]);
  } catch {
    return null;
  }
}

/** The credential and state of a URL fragment (`#token=...&state=...`, among other parameters), decoded. */
export function handoffInFragment(hash: string): Handoff | null {
  const token = fragmentParam(hash, "token");
  return token ? { token, state: fragmentParam(hash, "state") } : null;
}

/** The code of a one-time sign-in link (`#signin=<code>`), decoded. */
export function linkCodeInFragment(hash: string): string | null {
  return fragmentParam(hash, "signin");
}

/** `started`: the answer to a sign-in this tab started, or a plain link's credential where none is kept; already
 * kept. `offered`: anything else (one that would replace the kept credential, or a hand-off answering a sign-in
 * this tab did not start), not kept; the person confirms it first. `link`: a sign-in link's code, to redeem. */
export type Arrival =
  | { kind: "started"; token: string }
  | { kind: "offered"; token: string }
  | { kind: "link"; code: string };

/** A credential that answers no sign-in this tab started (a plain link's, or the one a sign-in link's code was
 * redeemed for): kept without a question only where the browser keeps none, as there is nothing to replace
 * (CONTRACTS.md 9); otherwise offered, and the kept one stays. */
export function keepUnlessReplacing(local: KeyValueStore, token: string): Arrival {
  if (loadToken(local) !== null) return { kind: "offered", token };
  saveToken(local, token);
  return { kind: "started", token };
}

/** Take a hand-off from the address. The fragment leaves the address bar and the history whatever it holds (a
 * credential is neither bookmarked nor shared by copying the URL). */
export function takeFragmentHandoff(
  location: { hash: string; pathname: string; search: string },
  history: { replaceState(data: unknown, unused: string, url: string): void },
  session: KeyValueStore,
  local: KeyValueStore,
  now: number = Date.now(),
): Arrival | null {
  const hash = location.hash; // read first: `location` may be the live one, which the next line changes
  if (!/[#&](token|state|signin)=/.test(hash)) return null;
  history.replaceState(null, "", location.pathname + location.search);
  const handoff = handoffInFragment(hash);
  if (!handoff) {
    const code = linkCodeInFragment(hash);
    return code ? { kind: "link", code } : null;
  }
  // A state this tab kept is used up whether or not a credential is stored (it answers one sign-in only).
  if (takeStartedSignIn(session, handoff.state, now)) {
    saveToken(local, handoff.token);
    return { kind: "started", token: handoff.token };
  }
  // With no credential kept there is nothing to replace: a plain link signs in without a question (CONTRACTS.md
  // 9). A hand-off carrying a state this tab did not keep answers someone else's sign-in: asked about.
  if (handoff.state === null) return keepUnlessReplacing(local, handoff.token);
  return { kind: "offered", token: handoff.token };
}
