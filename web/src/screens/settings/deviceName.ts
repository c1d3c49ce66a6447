/** A device's name as a person types it, checked here as the server checks it (`devices.rename`, pairing): 1 to
 * `MAX_DEVICE_NAME` characters once trimmed, no control characters. The server has the last word. */

export const MAX_DEVICE_NAME = 100;

/** What is wrong with a name, in the server's words, or null when it would be taken. */
export function deviceNameProblem(typed: string): string | null {
  const name = typed.trim();
  if (!name) return "a device name cannot be empty";
  // Characters as the server counts them (code points, not UTF-16 units).
  const length = [...name].length;
  if (length > MAX_DEVICE_NAME) {
    return `a device name is at most ${MAX_DEVICE_NAME} characters; this one has ${length}`;
  }
  // Control characters as Unicode counts them (category Cc): C0, DEL and C1.
  if (/[\u0000-\u001f\u007f-\u009f]/.test(name)) return "a device name cannot hold control characters (line breaks, tabs)";
  return null;
}
