import { afterEach, describe, expect, it, vi } from "vitest";
import { loadToken, saveToken, TOKEN_KEY, type KeyValueStore } from "../src/auth/credential";
import {
  handoffInFragment,
  keepUnlessReplacing,
  linkCodeInFragment,
  MAX_STATES,
  randomState,
  SIGNIN_STATES_KEY,
  startSignIn,
  STATE_TTL_MS,
  takeFragmentHandoff,
  takeStartedSignIn,
} from "../src/auth/signin";
import { LINK_REFUSED, redeemLinkCode, sentence } from "../src/auth/signinLink";
import { nameOf } from "../src/screens/ConfirmSignIn";

function memoryStore(): KeyValueStore & { data: Map<string, string> } {
  const data = new Map<string, string>();
  return {
    data,
    getItem: (k) => data.get(k) ?? null,
    setItem: (k, v) => void data.set(k, v),
    removeItem: (k) => void data.delete(k),
  };
}

function brokenStore(): KeyValueStore {
  const fail = () => {
    throw new Error("storage is disabled");
  };
  return { getItem: fail, setItem: fail, removeItem: fail };
}

/** An address bar whose `location` is live, like the browser's: replacing the history entry changes it. */
function address(hash: string, pathname = "/workspaces/w1", search = "?x=1") {
  const replaced: string[] = [];
  const location = { hash, pathname, search };
  const history = {
    replaceState: (_d: unknown, _u: string, url: string) => {
      replaced.push(url);
      location.hash = "";
    },
  };
  return { location, history, replaced };
}

const T0 = 1_700_000_000_000;

describe("sign-in state", () => {
  it("is random, 43 base64url characters, the shape the server accepts", () => {
    const a = randomState();
    expect(a).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(randomState()).not.toBe(a);
  });

  it("answers the sign-in it was kept for once, and nothing else", () => {
    const session = memoryStore();
    const state = startSignIn(session, T0, () => "state-one-aaaaaaaaaaaa");
    expect(state).toBe("state-one-aaaaaaaaaaaa");
    expect(session.data.has(SIGNIN_STATES_KEY)).toBe(true);
    expect(takeStartedSignIn(session, "state-one-aaaaaaaaaaab", T0 + 1)).toBe(false);
    expect(takeStartedSignIn(session, "", T0 + 1)).toBe(false);
    expect(takeStartedSignIn(session, null, T0 + 1)).toBe(false);
    expect(takeStartedSignIn(session, 42, T0 + 1)).toBe(false);
    // A wrong guess leaves the real sign-in waiting.
    expect(takeStartedSignIn(session, state, T0 + 2)).toBe(true);
    expect(takeStartedSignIn(session, state, T0 + 3)).toBe(false); // used up
    expect(session.data.has(SIGNIN_STATES_KEY)).toBe(false);
  });

  it("keeps several sign-ins in flight, at most the last few", () => {
    const session = memoryStore();
    const states = Array.from({ length: MAX_STATES + 1 }, (_, i) =>
      startSignIn(session, T0 + i, () => `state-${i}-aaaaaaaaaaaaaaa`),
    );
    expect(takeStartedSignIn(session, states[0], T0 + 10)).toBe(false); // the oldest went
    for (const s of states.slice(1)) expect(takeStartedSignIn(session, s, T0 + 10)).toBe(true);
  });

  it("expires: a state is good until its time is up, not after", () => {
    const session = memoryStore();
    const a = startSignIn(session, T0, () => "state-a-aaaaaaaaaaaaaaa");
    const b = startSignIn(session, T0, () => "state-b-aaaaaaaaaaaaaaa");
    expect(takeStartedSignIn(session, a, T0 + STATE_TTL_MS - 1)).toBe(true);
    expect(takeStartedSignIn(session, b, T0 + STATE_TTL_MS)).toBe(false);
  });

  it("ignores what it did not write in the session store", () => {
    const session = memoryStore();
    session.data.set(SIGNIN_STATES_KEY, "{not json");
    expect(takeStartedSignIn(session, "anything-aaaaaaaaaaaaaa", T0)).toBe(false);
    session.data.set(SIGNIN_STATES_KEY, JSON.stringify([{ state: "forged-aaaaaaaaaaaaaaaa", at: T0 + 60_000 }, "x"]));
    // A state "from the future" is not taken either (the clock cannot run backwards for a real one).
    expect(takeStartedSignIn(session, "forged-aaaaaaaaaaaaaaaa", T0)).toBe(false);
  });

  it("still answers the popup in this page when session storage is disabled", () => {
    const session = brokenStore();
    const state = startSignIn(session, T0, () => "state-mem-aaaaaaaaaaaaa");
    expect(takeStartedSignIn(session, state, T0 + 1)).toBe(true);
    expect(takeStartedSignIn(session, state, T0 + 2)).toBe(false);
  });
});

describe("the #token= hand-off", () => {
  it("reads the credential and the state from the fragment, decoded", () => {
    expect(handoffInFragment("#token=a%2Bb&state=s1")).toEqual({ token: "a+b", state: "s1" });
    expect(handoffInFragment("#state=s1&token=t2")).toEqual({ token: "t2", state: "s1" });
    expect(handoffInFragment("#token=t3")).toEqual({ token: "t3", state: null });
    expect(handoffInFragment("#token=")).toBeNull();
    expect(handoffInFragment("#token=%E0%A4%A")).toBeNull();
    expect(handoffInFragment("#section")).toBeNull();
  });

  it("keeps the answer to a sign-in this tab started, without asking", () => {
    const session = memoryStore();
    const local = memoryStore();
    const state = startSignIn(session, T0);
    const { location, history, replaced } = address(`#token=mine&state=${state}`);
    expect(takeFragmentHandoff(location, history, session, local, T0 + 5)).toEqual({ kind: "started", token: "mine" });
    expect(loadToken(local)).toBe("mine");
    expect(replaced).toEqual(["/workspaces/w1?x=1"]);
  });

  it("never stores a link's credential by itself: it is offered, and the stored one stays", () => {
    const session = memoryStore();
    const local = memoryStore();
    saveToken(local, "victim");
    startSignIn(session, T0, () => "kept-state-aaaaaaaaaaaa");
    for (const hash of ["#token=attacker", "#token=attacker&state=wrong-state-aaaaaaaaa", "#state=&token=attacker"]) {
      const { location, history, replaced } = address(hash);
      expect(takeFragmentHandoff(location, history, session, local, T0 + 5)).toEqual({
        kind: "offered",
        token: "attacker",
      });
      expect(local.data.get(TOKEN_KEY)).toBe("victim");
      expect(replaced).toEqual(["/workspaces/w1?x=1"]); // gone from the address all the same
    }
    // The real sign-in is still awaited after the forged ones.
    expect(takeStartedSignIn(session, "kept-state-aaaaaaaaaaaa", T0 + 6)).toBe(true);
  });

  it("keeps a link's credential when nothing is stored: there is nothing to replace", () => {
    const session = memoryStore();
    const local = memoryStore();
    const { location, history, replaced } = address("#token=theirs");
    expect(takeFragmentHandoff(location, history, session, local, T0)).toEqual({ kind: "started", token: "theirs" });
    expect(loadToken(local)).toBe("theirs");
    expect(replaced).toEqual(["/workspaces/w1?x=1"]);
  });

  it("takes a state that came back too late as an offer, stored credential or not", () => {
    const session = memoryStore();
    const local = memoryStore();
    const state = startSignIn(session, T0);
    const { location, history } = address(`#token=late&state=${state}`);
    expect(takeFragmentHandoff(location, history, session, local, T0 + STATE_TTL_MS)).toEqual({
      kind: "offered",
      token: "late",
    });
    expect(loadToken(local)).toBeNull();
    saveToken(local, "victim");
    const again = startSignIn(session, T0);
    const later = address(`#token=late&state=${again}`);
    expect(takeFragmentHandoff(later.location, later.history, session, local, T0 + STATE_TTL_MS)).toEqual({
      kind: "offered",
      token: "late",
    });
    expect(loadToken(local)).toBe("victim");
  });

  it("asks about a hand-off answering a sign-in this tab did not start, even with nothing stored", () => {
    const session = memoryStore();
    const local = memoryStore();
    startSignIn(session, T0, () => "kept-state-aaaaaaaaaaaa");
    const { location, history } = address("#token=forged&state=someone-elses-state-aaaa");
    expect(takeFragmentHandoff(location, history, session, local, T0 + 5)).toEqual({ kind: "offered", token: "forged" });
    expect(loadToken(local)).toBeNull();
  });

  it("leaves an address without a hand-off alone, and strips an empty one", () => {
    const session = memoryStore();
    const local = memoryStore();
    const plain = address("#section");
    expect(takeFragmentHandoff(plain.location, plain.history, session, local, T0)).toBeNull();
    expect(plain.replaced).toEqual([]);
    const empty = address("#token=&state=x");
    expect(takeFragmentHandoff(empty.location, empty.history, session, local, T0)).toBeNull();
    expect(empty.replaced).toEqual(["/workspaces/w1?x=1"]);
  });
});

describe("the confirmation", () => {
  it("names an account by its display name, else its email, else its id", () => {
    expect(nameOf({ userId: "u1", displayName: "Mallory", email: "m@example.com" })).toBe("Mallory");
    expect(nameOf({ userId: "u1", displayName: null, email: "m@example.com" })).toBe("m@example.com");
    expect(nameOf({ userId: "u1", displayName: null, email: null })).toBe("u1");
  });
});

describe("the one-time sign-in link", () => {
  afterEach(() => vi.unstubAllGlobals());

  it("reads the code from the fragment, never from anywhere else", () => {
    expect(linkCodeInFragment("#signin=ABCD2345")).toBe("ABCD2345");
    expect(linkCodeInFragment("#x=1&signin=ABCD2345")).toBe("ABCD2345");
    expect(linkCodeInFragment("#signin=")).toBeNull();
    expect(linkCodeInFragment("#token=t")).toBeNull();
  });

  it("takes the code out of the address at once and leaves the stored credential alone", () => {
    const session = memoryStore();
    const local = memoryStore();
    saveToken(local, "mine");
    const { location, history, replaced } = address("#signin=ABCD2345");
    expect(takeFragmentHandoff(location, history, session, local, T0)).toEqual({ kind: "link", code: "ABCD2345" });
    expect(replaced).toEqual(["/workspaces/w1?x=1"]);
    expect(loadToken(local)).toBe("mine");
  });

  it("keeps the redeemed credential only where none is stored; otherwise offers it", () => {
    const local = memoryStore();
    expect(keepUnlessReplacing(local, "owner")).toEqual({ kind: "started", token: "owner" });
    expect(loadToken(local)).toBe("owner");
    expect(keepUnlessReplacing(local, "other")).toEqual({ kind: "offered", token: "other" });
    expect(loadToken(local)).toBe("owner");
  });

  it("spends a code once per page, and says to print a new link when it is refused", async () => {
    const replies = [
      new Response(JSON.stringify({ token: "hgr_one", userId: "u" }), { status: 200 }),
      new Response(JSON.stringify({ error: { code: "invalid_args", message: "code: used", field: "code" } }), {
        status: 400,
      }),
    ];
    const fetched = vi.fn(async () => replies.shift() as Response);
    vi.stubGlobal("fetch", fetched);
    const [a, b] = await Promise.all([redeemLinkCode("CODE-ONE", "Browser"), redeemLinkCode("CODE-ONE", "Browser")]);
    expect(a).toEqual({ ok: true, token: "hgr_one" });
    expect(b).toBe(a);
    expect(fetched).toHaveBeenCalledTimes(1);
    const refused = await redeemLinkCode("CODE-TWO", "Browser");
    expect(refused.ok).toBe(false);
    expect(!refused.ok && refused.message).toBe(LINK_REFUSED);
    expect(LINK_REFUSED).toContain("hangar admin sign-in-link");
  });

  it("asks again after the server could not be reached (it never saw the code)", async () => {
    let calls = 0;
    vi.stubGlobal("fetch", async () => {
      calls += 1;
      if (calls === 1) throw new TypeError("network down");
      return new Response(JSON.stringify({ token: "hgr_two", userId: "u" }), { status: 200 });
    });
    expect((await redeemLinkCode("CODE-THREE", "Browser")).ok).toBe(false);
    expect(await redeemLinkCode("CODE-THREE", "Browser")).toEqual({ ok: true, token: "hgr_two" });
  });

  it("shows a server message as a sentence", () => {
    expect(sentence("code: the pairing code is unknown, used or expired", "code")).toBe(
      "The pairing code is unknown, used or expired.",
    );
    expect(sentence("Too many attempts.")).toBe("Too many attempts.");
  });
});
