/** The address bar of a browser rig's live view (the current page's address, back, forward, reload) and the list
 * of the session's pages (a page that opened another; choose one to drive). The pages come from the live view lane
 * as they change; the moves go through `rig.navigate`, which the server allows only to the person holding control,
 * so without control the bar shows where the page is and says how to drive it. */
import { useEffect, useRef, useState, type FormEvent } from "react";
import type { PageRow } from "../../../generated/ops";
import { useAction, useWrite } from "../../../data/mutations";
import "./rigs.css";

type Move =
  | { action: "navigate"; url: string }
  | { action: "history"; direction: "back" | "forward" }
  | { action: "reload" }
  | { action: "switch_page"; page: string };

const BUTTONS: [string, string, Move][] = [
  ["Back", "Going back…", { action: "history", direction: "back" }],
  ["Forward", "Going forward…", { action: "history", direction: "forward" }],
  ["Reload", "Reloading…", { action: "reload" }],
];

/** What a person typed as an address: an address without a scheme is taken as https. */
export function addressOf(typed: string): string {
  const text = typed.trim();
  return /^[a-z][a-z0-9+.-]*:/i.test(text) ? text : `https://${text}`;
}

interface Props {
  workspaceId: string;
  rigId: string;
  pages: PageRow[] | null;
  inControl: boolean;
  onPages(pages: PageRow[]): void;
}

export function BrowserBar({ workspaceId, rigId, pages, inControl, onPages }: Props) {
  const write = useWrite();
  const navigation = useAction();
  const current = pages?.find((p) => p.current) ?? null;
  const [typed, setTyped] = useState<string | null>(null); // what the person is typing, until they go or leave
  const [busy, setBusy] = useState<string | null>(null);
  const error = navigation.error?.message ?? null;
  const field = useRef<HTMLInputElement>(null);

  const { clear } = navigation;
  useEffect(clear, [inControl, clear]);
  // The page moved (a link, an agent, a redirect): the field shows where it is now, unless the person is typing.
  const shown = current?.url;
  useEffect(() => {
    if (document.activeElement !== field.current) setTyped(null);
  }, [shown]);

  const move = (what: string, action: Move) => {
    setBusy(what);
    void navigation
      .run(() => write("rig.navigate", { workspace_id: workspaceId, rigId, action }))
      .then((reply) => {
        if (reply) {
          onPages(reply.pages);
          setTyped(null);
        }
        setBusy(null);
      });
  };

  const go = (e: FormEvent) => {
    e.preventDefault();
    const text = typed ?? "";
    if (!text.trim()) return;
    move("Loading the page…", { action: "navigate", url: addressOf(text) });
  };

  const off = !inControl || busy !== null;
  return (
    <div className="browser-bar">
      <form className="address" onSubmit={go} role="search" aria-label="Browser address">
        {BUTTONS.map(([label, doing, action]) => (
          <button key={label} type="button" className="secondary small" disabled={off} onClick={() => move(doing, action)}>
            {label}
          </button>
        ))}
        <label className="address-field">
          <span className="visually-hidden">Address</span>
          <input
            ref={field}
            type="text"
            inputMode="url"
            spellCheck={false}
            autoComplete="off"
            value={typed ?? current?.url ?? ""}
            readOnly={!inControl}
            placeholder={current ? "" : "Waiting for the page…"}
            onChange={(e) => setTyped(e.target.value)}
            onFocus={(e) => inControl && e.target.select()}
            onKeyDown={(e) => {
              if (e.key === "Escape") {
                setTyped(null);
                field.current?.blur();
              }
            }}
          />
        </label>
        <button type="submit" className="small" disabled={off || !typed?.trim()}>
          Go
        </button>
      </form>
      {busy && (
        <p role="status" className="hint">
          {busy}
        </p>
      )}
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      {pages && pages.length > 1 && (
        <section className="pages" aria-labelledby={`pages-${rigId}`}>
          <h3 id={`pages-${rigId}`}>Pages ({pages.length})</h3>
          <ul aria-label="Pages of this browser">
            {pages.map((p) => (
              <li key={p.pageId} aria-current={p.current ? "page" : undefined}>
                <span className="page-title">{p.title || "Untitled page"}</span>
                <span className="page-url">
                  {p.url}
                  {p.stale ? " (as it was when last shown)" : ""}
                </span>
                {p.current ? (
                  <span className="badge">Shown</span>
                ) : (
                  <button
                    type="button"
                    className="secondary small"
                    disabled={off}
                    aria-label={`Switch to ${p.title || p.url || "this page"}`}
                    onClick={() => move("Switching pages…", { action: "switch_page", page: p.pageId })}
                  >
                    Switch to
                  </button>
                )}
              </li>
            ))}
          </ul>
        </section>
      )}
    </div>
  );
}
