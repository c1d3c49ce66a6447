/** Where the browser keeps its device credential (CONTRACTS.md sections 3 and 9). What may put one here: a pairing
 * the person made on the connect screen, the answer to a sign-in this tab started, or a link's credential the
 * person confirmed (`signin.ts`). */
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
