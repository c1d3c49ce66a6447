/** The list of keyboard shortcuts, opened with `?`. A modal `<dialog>`: the page behind is inert, Escape closes
 * it, and focus returns to where it was. Tab cycles inside it (a modal dialog alone lets Tab leave for the
 * browser's own controls). */
import { useEffect, useId, useRef, type KeyboardEvent } from "react";
import { SHORTCUTS } from "./shortcuts";
import "./shortcuts.css";

const FOCUSABLE = "a[href], button:not([disabled]), input:not([disabled]), [tabindex]:not([tabindex='-1'])";

export function ShortcutsDialog({ open, onClose }: { open: boolean; onClose(): void }) {
  const dialog = useRef<HTMLDialogElement>(null);
  const titleId = useId();

  useEffect(() => {
    const d = dialog.current;
    if (!d) return;
    if (open && !d.open) d.showModal();
    else if (!open && d.open) d.close();
  }, [open]);

  const trapTab = (e: KeyboardEvent<HTMLDialogElement>) => {
    if (e.key !== "Tab") return;
    const focusable = [...e.currentTarget.querySelectorAll<HTMLElement>(FOCUSABLE)];
    const first = focusable[0];
    const last = focusable[focusable.length - 1];
    if (!first || !last) return;
    const active = document.activeElement;
    if (e.shiftKey ? active === first || !e.currentTarget.contains(active) : active === last) {
      e.preventDefault();
      (e.shiftKey ? last : first).focus();
    }
  };

  return (
    <dialog ref={dialog} className="shortcuts" aria-labelledby={titleId} onClose={onClose} onKeyDown={trapTab}>
      <h2 id={titleId}>Keyboard shortcuts</h2>
      <p className="hint">They work anywhere in the app, except while you type in a field or a terminal.</p>
      <table>
        <thead>
          <tr>
            <th scope="col">Keys</th>
            <th scope="col">Does</th>
          </tr>
        </thead>
        <tbody>
          {SHORTCUTS.map((s) => (
            <tr key={s.keys.join(" ")}>
              <td>
                {s.keys.map((k, i) => (
                  <span key={i}>
                    {i > 0 && " then "}
                    <kbd>{k}</kbd>
                  </span>
                ))}
              </td>
              <td>{s.description}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <form method="dialog">
        <button type="submit" autoFocus>
          Close
        </button>
      </form>
    </dialog>
  );
}
