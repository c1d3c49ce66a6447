/** An instant as the person's locale writes it; "never" when there is none, the text itself when it is no date. */
export function when(iso: string | null | undefined): string {
  if (!iso) return "never";
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString();
}
