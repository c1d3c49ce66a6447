/** Reconnect delays: exponential from `baseMs`, capped at `maxMs`, with "equal jitter" (half fixed, half random)
 * so that many tabs cut off by one server restart do not all come back in the same instant. */
export interface Backoff {
  baseMs: number;
  maxMs: number;
}

export const DEFAULT_BACKOFF: Backoff = { baseMs: 250, maxMs: 15_000 };

export function backoffDelay(attempt: number, random: () => number, policy: Backoff = DEFAULT_BACKOFF): number {
  const ceiling = Math.min(policy.maxMs, policy.baseMs * 2 ** Math.max(0, attempt));
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}
