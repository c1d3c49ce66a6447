/** The ids behind the names a row shows (`user:<id>`, a pack's cache name), in a disclosure anyone can open: a
 * keyboard, a screen reader. Where a screen names records for people, this keeps what a program would need at hand. */
import "./ids.css";

export function IdDetails({ items, label = "Ids" }: { items: ReadonlyArray<readonly [string, string]>; label?: string }) {
  if (items.length === 0) return null;
  return (
    <details className="ids">
      <summary>{label}</summary>
      <dl>
        {items.map(([what, value]) => (
          <div key={what}>
            <dt>{what}</dt>
            <dd>
              <code>{value}</code>
            </dd>
          </div>
        ))}
      </dl>
    </details>
  );
}
