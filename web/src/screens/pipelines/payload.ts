/** A payload typed as JSON text (a run's start, a trigger's, an event that resumes a step): a JSON object, or
 * the one sentence that says what is wrong with it. Empty text is the empty object. */
export type Payload = { value: Record<string, unknown> } | { problem: string };

export function parsePayload(text: string): Payload {
  let value: unknown;
  try {
    value = JSON.parse(text || "{}");
  } catch (err) {
    return { problem: `The payload is not valid JSON: ${(err as Error).message}` };
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return { problem: 'The payload must be a JSON object, such as {"who": "Ann"}.' };
  }
  return { value: value as Record<string, unknown> };
}
