/** Where the browser keeps its device credential, and the `#token=` hand-off (CONTRACTS.md sections 4 and 9).
 * The key is the one the server's own `/auth/complete` page writes, so both hand-offs land in the same place. */
export const TOKEN_KEY = "hangar.token";

export interface KeyValueStore {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

export function loadToken(store: KeyValueStore): string | null {
  try {
    const token = store.getItem(TOKEN_KEY);
    return token ? token : null;
  } catch {
    return null; // storage disabled: the person connects each visit
  }
}

export function saveToken(store: KeyValueStore, token: string): void {
  try {
    store.setItem(TOKEN_KEY, token);
  } catch {
    /* storage disabled: the credential lives for this page only */
  }
}

export function clearToken(store: KeyValueStore): void {
  try {
    store.removeItem(TOKEN_KEY);
  } catch {
    /* nothing kept, nothing to clear */
  }
}

/** The credential in a URL fragment (`#token=...`, possibly among other fragment parameters), decoded. */
export function tokenInFragment(hash: string): string | null {
  const match = /[#&]token=([^&]*)/.exec(hash);
  if (!match?.[1]) return null;
  try {
    return decodeURIComponent(match[1]);
  } catch {
    return null;
  }
}

/** Take `#token=` from the address: keep it and remove the fragment from the address bar and history, so the
 * credential is neither bookmarked nor shared by copying the URL. Returns the credential taken, if any. */
export function adoptFragmentToken(
  location: { hash: string; pathname: string; search: string },
  history: { replaceState(data: unknown, unused: string, url: string): void },
  store: KeyValueStore,
): string | null {
  const token = tokenInFragment(location.hash);
  if (location.hash.includes("token=")) history.replaceState(null, "", location.pathname + location.search);
  if (token) saveToken(store, token);
  return token;
}
