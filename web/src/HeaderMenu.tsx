/** The header's person, settings links and sign-out. On a wide screen they sit in the header's row as they always
 * did; on a phone they fold behind one "Menu" button (a disclosure: `aria-expanded`, Escape or a click elsewhere
 * closes it and Escape returns the focus to the button), so the header stays a single row and the screen keeps
 * its height for the work. Going to another screen closes it. */
import { useEffect, useId, useRef, useState, type ReactNode } from "react";
import { useLocation } from "./router";
import "./header.css";

export function HeaderMenu({ children }: { children: ReactNode }) {
  const [open, setOpen] = useState(false);
  const id = useId();
  const button = useRef<HTMLButtonElement>(null);
  const panel = useRef<HTMLDivElement>(null);
  const location = useLocation();
  useEffect(() => setOpen(false), [location]);
  useEffect(() => {
    if (!open) return;
    const onKey = (e: KeyboardEvent) => {
      if (e.key !== "Escape") return;
      setOpen(false);
      button.current?.focus();
    };
    const onPointer = (e: PointerEvent) => {
      const target = e.target as Node | null;
      if (!panel.current?.contains(target) && !button.current?.contains(target)) setOpen(false);
    };
    window.addEventListener("keydown", onKey);
    window.addEventListener("pointerdown", onPointer);
    return () => {
      window.removeEventListener("keydown", onKey);
      window.removeEventListener("pointerdown", onPointer);
    };
  }, [open]);
  return (
    <>
      <button
        ref={button}
        type="button"
        className="secondary menu-toggle"
        aria-expanded={open}
        aria-controls={id}
        onClick={() => setOpen((o) => !o)}
      >
        Menu
      </button>
      <div id={id} ref={panel} className="menu-panel" data-open={open || undefined}>
        {children}
      </div>
    </>
  );
}
