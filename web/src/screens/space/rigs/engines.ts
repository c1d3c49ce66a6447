/** Browser engines as people know them. The wire keeps the engine values of the contract (`engine-a`...); the
 * screens name the browser. */

export const ENGINES = [
  { value: "engine-a", label: "Chromium" },
  { value: "engine-b", label: "Firefox" },
  { value: "engine-c", label: "WebKit" },
] as const;

export type EngineValue = (typeof ENGINES)[number]["value"];

/** The browser's name for an engine value; an engine this client does not know keeps its value. */
export function engineLabel(engine: string | null | undefined): string {
  return ENGINES.find((e) => e.value === engine)?.label ?? engine ?? "browser";
}
