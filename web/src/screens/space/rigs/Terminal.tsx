/** The live terminal of a rig: xterm.js on the PTY lane (`/rig/terminal/<rigId>`, a URL minted by
 * `rig.terminalUrl`, authenticated by a first text frame with the device credential). Keys and output travel as
 * binary frames; the terminal fits its box and tells the PTY its size. This module (and xterm.js with it) loads
 * only when a terminal tab opens. */
import { FitAddon } from "@xterm/addon-fit";
import { Terminal as Xterm, type ITheme } from "@xterm/xterm";
import "@xterm/xterm/css/xterm.css";
import { useCallback, useEffect, useRef, useState } from "react";
import { useWrite } from "../../../data/mutations";
import { openLane, type Lane, type LaneState } from "./lane";

const LIGHT: ITheme = { background: "#ffffff", foreground: "#1b1f24", cursor: "#1b1f24", selectionBackground: "#b6d4fe" };
const DARK: ITheme = { background: "#0d1117", foreground: "#e6edf3", cursor: "#e6edf3", selectionBackground: "#264f78" };

/** Open `xterm` in `el` with its styles kept within the server's Content-Security-Policy. xterm.js writes its
 * theme, scrollbar and row sizes into <style> elements, which `style-src 'self'` blocks; while it opens, each
 * <style> it creates is an inert, hidden stand-in whose text is mirrored into a constructed stylesheet adopted by
 * the document (a stylesheet built through the CSSOM is not an inline style). Returns the undo. */
function openWithinPolicy(xterm: Xterm, el: HTMLElement): () => void {
  const sheets: CSSStyleSheet[] = [];
  const observers: MutationObserver[] = [];
  const create = document.createElement;
  const standIn = (tag: string, options?: ElementCreationOptions): HTMLElement => {
    if (tag.toLowerCase() !== "style") return create.call(document, tag, options);
    const node = create.call(document, "xterm-style");
    node.hidden = true;
    const sheet = new CSSStyleSheet();
    sheets.push(sheet);
    document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];
    const mirror = new MutationObserver(() => sheet.replaceSync(node.textContent ?? ""));
    mirror.observe(node, { childList: true, characterData: true, subtree: true });
    observers.push(mirror);
    return node;
  };
  document.createElement = standIn as typeof document.createElement;
  try {
    xterm.open(el);
  } finally {
    document.createElement = create;
  }
  return () => {
    for (const o of observers) o.disconnect();
    document.adoptedStyleSheets = document.adoptedStyleSheets.filter((s) => !sheets.includes(s));
  };
}

export function Terminal({ workspaceId, rigId }: { workspaceId: string; rigId: string }) {
  const write = useWrite();
  const box = useRef<HTMLDivElement>(null);
  const term = useRef<Xterm | null>(null);
  const [state, setState] = useState<LaneState>("connecting");
  const [notice, setNotice] = useState<string | null>(null);
  const [attempt, setAttempt] = useState(0);

  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const dark = window.matchMedia?.("(prefers-color-scheme: dark)").matches ?? false;
    const xterm = new Xterm({
      cursorBlink: true,
      fontFamily: 'ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace',
      fontSize: 14,
      scrollback: 5000,
      theme: dark ? DARK : LIGHT,
    });
    const fit = new FitAddon();
    xterm.loadAddon(fit);
    const unstyle = openWithinPolicy(xterm, el);
    fit.fit();
    term.current = xterm;
    let lane: Lane | null = null;
    const encoder = new TextEncoder();
    const sendBytes = (data: string | Uint8Array) => {
      const socket = lane?.socket;
      if (socket?.readyState === WebSocket.OPEN) socket.send(typeof data === "string" ? encoder.encode(data) : data);
    };

    // Copy and paste: Ctrl+Shift+C / Ctrl+Shift+V (Ctrl+C stays the terminal's interrupt); the browser's own
    // paste (context menu, Cmd+V) reaches the terminal through xterm.js.
    xterm.attachCustomKeyEventHandler((e) => {
      if (e.type !== "keydown" || !e.ctrlKey || !e.shiftKey) return true;
      if (e.code === "KeyC" && xterm.hasSelection()) {
        void navigator.clipboard?.writeText(xterm.getSelection());
        return false;
      }
      if (e.code === "KeyV") {
        navigator.clipboard?.readText().then((t) => xterm.paste(t), () => undefined);
        return false;
      }
      return true;
    });
    const typed = xterm.onData((d) => sendBytes(d));
    const binary = xterm.onBinary((d) => sendBytes(Uint8Array.from(d, (c) => c.charCodeAt(0))));
    const resized = xterm.onResize(({ cols, rows }) => {
      const socket = lane?.socket;
      if (socket?.readyState === WebSocket.OPEN) socket.send(JSON.stringify({ type: "resize", cols, rows }));
    });
    const fitter = new ResizeObserver(() => {
      if (el.clientWidth > 0 && el.clientHeight > 0) fit.fit();
    });
    fitter.observe(el);

    setNotice(null);
    lane = openLane<{ type?: string; message?: string }>({
      mint: () => write("rig.terminalUrl", { workspace_id: workspaceId, rigId }),
      query: () => ({ cols: xterm.cols, rows: xterm.rows }),
      onState: setState,
      onError: setNotice,
      onOpen: () => xterm.focus(),
      onBinary: (data) => xterm.write(new Uint8Array(data)),
      onNotice: (frame) => {
        if (frame.type === "readonly") setNotice("Someone else has control: what you type is not sent.");
        else if (frame.type === "error") setNotice(frame.message ?? "The terminal lane refused.");
      },
    });

    return () => {
      lane?.close();
      fitter.disconnect();
      typed.dispose();
      binary.dispose();
      resized.dispose();
      xterm.dispose();
      unstyle();
      term.current = null;
    };
  }, [write, workspaceId, rigId, attempt]);

  const copy = useCallback(() => {
    const t = term.current;
    if (t?.hasSelection()) void navigator.clipboard?.writeText(t.getSelection());
    t?.focus();
  }, []);
  const paste = useCallback(() => {
    navigator.clipboard?.readText().then(
      (text) => {
        term.current?.paste(text);
        term.current?.focus();
      },
      () => setNotice("The browser did not allow reading the clipboard; paste with Ctrl+Shift+V."),
    );
  }, []);

  return (
    <div className="terminal">
      <div className="terminal-bar">
        <p className="lane" role="status" data-state={state}>
          {state === "open" ? "Terminal connected" : state === "connecting" ? "Connecting the terminal…" : "Terminal closed"}
        </p>
        <button type="button" className="secondary small" onClick={copy}>
          Copy selection
        </button>
        <button type="button" className="secondary small" onClick={paste}>
          Paste
        </button>
        {state === "closed" && (
          <button type="button" className="small" onClick={() => setAttempt((a) => a + 1)}>
            Reconnect
          </button>
        )}
      </div>
      {notice && <p className="notice">{notice}</p>}
      <div className="xterm-box" ref={box} aria-label="Terminal" role="group" />
    </div>
  );
}
