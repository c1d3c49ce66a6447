/** A performance mark at the first screen's first paint-ready render, read by the end-to-end tests' figures. */
export const FIRST_RENDER_MARK = "hangar:first-render";

export function markFirstRender(): void {
  if (performance.getEntriesByName(FIRST_RENDER_MARK).length === 0) performance.mark(FIRST_RENDER_MARK);
}
