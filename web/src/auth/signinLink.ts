/** Codes redeemed for a credential at `POST /auth/pair` (CONTRACTS.md section 3): a pairing code typed on the
 * connect screen, and the code of the server owner's one-time sign-in link (`#signin=<code>`, printed by the
 * server at its first start and by `hangar admin sign-in-link`).
 *
 * A link's code is redeemed once per page, whoever asks (a screen mounted twice must not spend it twice: the second
 * request would find it used). Where the browser keeps a credential already, the one the link yields is only
 * offered (`signin.ts`); declined, it is revoked (`data/credentials.ts`), so no unused device of the owner is left behind. */
export type Redeemed = { ok: true; token: string } | { ok: false; status: number | null; code: string | null; message: string };

/** The sentence a link's refused code gets (used, late, or never printed: the server does not say which). */
export const LINK_REFUSED =
  "This sign-in link does not work: it was used already or has expired (a link works once, within 15 minutes of " +
  "being printed). Print a new one on the server's machine with hangar admin sign-in-link (the server's output " +
  "shows the full command), then open it here.";
export const UNREACHABLE = "The server could not be reached. Check that it is running, then try again.";

/** A server message as a sentence on its own: without the `field: ` it starts with, capitalized, with a stop. */
export function sentence(message: string, field?: unknown): string {
  const prefix = typeof field === "string" ? `${field}: ` : null;
  const bare = prefix && message.startsWith(prefix) ? message.slice(prefix.length) : message;
  const capital = bare.charAt(0).toUpperCase() + bare.slice(1);
  return /[.!?]$/.test(capital) ? capital : `${capital}.`;
}

async function refusal(response: Response): Promise<Redeemed> {
  let code: string | null = null;
  let message = `The server answered ${response.status}.`;
  try {
    const body = (await response.json()) as { error?: { code?: unknown; message?: unknown; field?: unknown } };
    const error = body.error;
    if (typeof error?.code === "string") code = error.code;
    if (typeof error?.message === "string" && error.message) message = sentence(error.message, error.field);
  } catch {
    /* not JSON: the status says it */
  }
  return { ok: false, status: response.status, code, message };
}

/** Redeem a pairing, invite or sign-in link code for a new device credential named `deviceName`. */
export async function pairWithCode(code: string, deviceName: string): Promise<Redeemed> {
  try {
    const response = await fetch("/auth/pair", {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json" },
      body: JSON.stringify({ code, deviceName }),
    });
    if (!response.ok) return await refusal(response);
    const body = (await response.json()) as { token?: unknown };
    if (typeof body.token !== "string" || !body.token) {
      return { ok: false, status: response.status, code: null, message: "The server did not hand over a credential." };
    }
    return { ok: true, token: body.token };
  } catch {
    return { ok: false, status: null, code: null, message: UNREACHABLE };
  }
}

const redeeming = new Map<string, Promise<Redeemed>>();

/** Redeem a sign-in link's code, once per page; a refused code answers `LINK_REFUSED`. A server that could not be
 * reached has not seen the code, so a later try asks again. */
export function redeemLinkCode(code: string, deviceName: string): Promise<Redeemed> {
  let pending = redeeming.get(code);
  if (!pending) {
    pending = pairWithCode(code, deviceName).then((r): Redeemed => {
      if (!r.ok && r.status === null) redeeming.delete(code);
      return !r.ok && r.code === "invalid_args" ? { ...r, message: LINK_REFUSED } : r;
    });
    redeeming.set(code, pending);
  }
  return pending;
}
