/** The template editor: YAML or JSON text, checked as it is typed (the parser here, then
 * `pipelines.templates.validate`, which also looks up every agent, team, space and repo the template names), each
 * problem shown at its line in the gutter and listed below with a button that puts the cursor there; pickers that
 * name those records for the step at the cursor and write their ids into the text; the graph drawn beside it; saved
 * with `pipelines.templates.create` or `.update`. */
import { useEffect, useId, useMemo, useRef, useState } from "react";
import { RpcError } from "../../rpc/errors";
import { useAction, useWrite } from "../../data/mutations";
import { useRead } from "../../data/queries";
import { graphOf } from "./graph";
import { GraphCanvas } from "./GraphCanvas";
import { ReferencePicker } from "./ReferencePicker";
import {
  loadYaml,
  NEW_TEMPLATE,
  parseTemplateText,
  problemPath,
  setInText,
  templateToText,
  type Format,
  type ParsedText,
  type Path,
  type YamlModule,
} from "./templateText";

const CHECK_AFTER_MS = 350;
const LINE_PX = 21; // the textarea's line height (pipelines.css), for scrolling to a line
// The text area grows with the template between these many lines, then scrolls.
const MIN_LINES = 12;
const MAX_LINES = 32;

interface Problem {
  message: string;
  line: number | null;
}

interface Check {
  problems: Problem[];
  warnings: Problem[];
  /** The text the check is of: a stale check is not shown as current. */
  text: string;
}

function lineStart(text: string, line: number): number {
  let at = 0;
  for (let i = 1; i < line; i++) {
    const next = text.indexOf("\n", at);
    if (next < 0) return text.length;
    at = next + 1;
  }
  return at;
}

function placed(messages: string[], parsed: ParsedText): Problem[] {
  return messages.map((message) => {
    const path = problemPath(message, parsed.value);
    return { message, line: path ? parsed.lineOf(path) : null };
  });
}

export function TemplateEditor(props: {
  workspaceId: string;
  /** The stored template being edited, or null for a new one. */
  templateId: string | null;
  onSaved(id: string): void;
  onClose(): void;
}) {
  const { workspaceId, templateId } = props;
  const write = useWrite();
  const action = useAction();
  const [yaml, setYaml] = useState<YamlModule | null>(null);
  const [format, setFormat] = useState<Format>("yaml");
  const [text, setText] = useState<string | null>(templateId ? null : NEW_TEMPLATE);
  const [check, setCheck] = useState<Check | null>(null);
  const { busy, done: saved } = action;
  const [loadFailure, setLoadFailure] = useState<string | null>(null);
  const [cursorLine, setCursorLine] = useState(1);
  const area = useRef<HTMLTextAreaElement>(null);
  const gutter = useRef<HTMLDivElement>(null);
  const ids = useId();

  useEffect(() => {
    let live = true;
    loadYaml().then(
      (m) => live && setYaml(m),
      () => live && setLoadFailure("The editor could not load its YAML parser; reload the page."),
    );
    return () => {
      live = false;
    };
  }, []);

  // An existing template is read and shown as text once the parser is here (once: a later read of it, after the
  // save, does not replace what is being typed).
  const stored = useRead("pipelines.templates.get", { workspace_id: workspaceId, templateId: templateId ?? "" }, { enabled: !!templateId });
  const shownFor = useRef<string | null>(null);
  // While it loads, the last template read may stand in for it: not shown.
  const storedTemplate = stored.loading ? undefined : stored.data?.template;
  useEffect(() => {
    if (!templateId || !yaml || storedTemplate === undefined || shownFor.current === templateId) return;
    shownFor.current = templateId;
    setText(templateToText(yaml, storedTemplate, "yaml"));
  }, [templateId, yaml, storedTemplate]);
  const failure = loadFailure ?? stored.error?.message ?? action.error?.message ?? null;

  const parsed = useMemo(() => (yaml && text !== null ? parseTemplateText(yaml, text) : null), [yaml, text]);
  const lastGood = useRef<unknown>(undefined);
  if (parsed && parsed.value !== undefined) lastGood.current = parsed.value;
  const graph = useMemo(() => graphOf(parsed?.value ?? lastGood.current), [parsed]);

  // The server's check, a moment after the typing stops.
  useEffect(() => {
    if (!parsed || text === null) return;
    if (parsed.syntaxError) {
      const { message, line } = parsed.syntaxError;
      setCheck({ problems: [{ message: `not valid ${format === "json" ? "JSON/YAML" : "YAML"}: ${message}`, line }], warnings: [], text });
      return;
    }
    const value = parsed.value;
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      setCheck({ problems: [{ message: "a template must be a mapping with id, steps and edges", line: 1 }], warnings: [], text });
      return;
    }
    let live = true;
    const timer = setTimeout(() => {
      write("pipelines.templates.validate", { workspace_id: workspaceId, template: value as Record<string, unknown> }).then(
        (r) => live && setCheck({ problems: placed(r.problems, parsed), warnings: placed(r.warnings, parsed), text }),
        (e: unknown) => {
          if (!live || !(e instanceof RpcError) || e.code === "unavailable") return;
          setCheck({ problems: [{ message: e.message, line: null }], warnings: [], text });
        },
      );
    }, CHECK_AFTER_MS);
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [write, workspaceId, parsed, text, format]);

  const current = check && check.text === text ? check : null;
  const badLines = new Map<number, string>();
  for (const p of current?.problems ?? []) if (p.line !== null && !badLines.has(p.line)) badLines.set(p.line, p.message);
  const warnLines = new Set((current?.warnings ?? []).map((w) => w.line).filter((l) => l !== null));
  const lineCount = (text ?? "").split("\n").length;
  const codeHeight = { height: `${Math.min(MAX_LINES, Math.max(MIN_LINES, lineCount + 1)) * LINE_PX + 16}px` };

  const jump = (line: number) => {
    const el = area.current;
    if (!el || text === null) return;
    const start = lineStart(text, line);
    const end = text.indexOf("\n", start);
    el.focus();
    el.setSelectionRange(start, end < 0 ? text.length : end);
    el.scrollTop = Math.max(0, (line - 3) * LINE_PX);
  };

  const followCursor = (el: HTMLTextAreaElement) => {
    setCursorLine(el.value.slice(0, el.selectionStart).split("\n").length);
  };

  // A record chosen in a picker: its id written where the step's setting goes.
  const setReference = (path: Path, value: unknown) => {
    if (!yaml || text === null) return;
    const next = setInText(yaml, text, format, path, value);
    if (next !== null) setText(next);
  };

  const switchFormat = (next: Format) => {
    if (next === format) return;
    if (yaml && parsed && parsed.value !== undefined) setText(templateToText(yaml, parsed.value, next));
    setFormat(next);
  };

  const save = async () => {
    if (!parsed || parsed.value === undefined || typeof parsed.value !== "object" || parsed.value === null) return;
    const template = parsed.value as Record<string, unknown>;
    const done = await action.run(
      () =>
        templateId
          ? write("pipelines.templates.update", { workspace_id: workspaceId, templateId, template })
          : write("pipelines.templates.create", { workspace_id: workspaceId, template }),
      (r) => `Saved ${r.id}.${r.warnings.length ? ` Warnings: ${r.warnings.join("; ")}` : ""}`,
    );
    if (done) props.onSaved(done.id);
  };

  const heading = templateId ? `Edit ${templateId}` : "New template";
  const problemsId = `${ids}-problems`;
  const hasProblems = (current?.problems.length ?? 0) > 0;
  return (
    <section className="editor card" aria-labelledby={`${ids}-title`}>
      <div className="row">
        <h2 id={`${ids}-title`}>{heading}</h2>
        <fieldset className="format">
          <legend className="sr-only">Format</legend>
          {(["yaml", "json"] as const).map((f) => (
            <label key={f}>
              <input
                type="radio"
                name={`${ids}-format`}
                value={f}
                checked={format === f}
                disabled={!parsed || parsed.value === undefined}
                onChange={() => switchFormat(f)}
              />
              {f.toUpperCase()}
            </label>
          ))}
        </fieldset>
      </div>
      {!yaml || text === null ? (
        failure ? (
          <p className="error" role="alert">
            {failure}
          </p>
        ) : (
          <p aria-busy="true">Loading the editor…</p>
        )
      ) : (
        <div className="editor-body">
          <div className="code">
            <div className="gutter" ref={gutter} aria-hidden="true" style={codeHeight}>
              {Array.from({ length: lineCount }, (_, i) => {
                const n = i + 1;
                const bad = badLines.get(n);
                return (
                  <div key={n} className={bad ? "bad" : warnLines.has(n) ? "warn" : undefined} title={bad}>
                    {n}
                  </div>
                );
              })}
            </div>
            <label htmlFor={`${ids}-text`} className="sr-only">
              Template text ({format.toUpperCase()})
            </label>
            <textarea
              id={`${ids}-text`}
              ref={area}
              value={text}
              spellCheck={false}
              wrap="off"
              style={codeHeight}
              aria-invalid={hasProblems}
              aria-describedby={problemsId}
              onChange={(e) => {
                setText(e.target.value);
                followCursor(e.currentTarget);
              }}
              onSelect={(e) => followCursor(e.currentTarget)}
              onScroll={(e) => {
                if (gutter.current) gutter.current.scrollTop = e.currentTarget.scrollTop;
              }}
            />
          </div>
          <div id={problemsId} className="checks" aria-live="polite">
            {!current ? (
              <p className="hint" aria-busy="true">
                Checking…
              </p>
            ) : current.problems.length === 0 ? (
              <p className="ok-text">The template is valid.</p>
            ) : (
              <ul className="problems" aria-label="Problems">
                {current.problems.map((p, i) => (
                  <li key={i}>
                    {p.line !== null && (
                      <button type="button" className="linkish" onClick={() => jump(p.line!)}>
                        Line {p.line}
                      </button>
                    )}{" "}
                    <span className="error">{p.message}</span>
                  </li>
                ))}
              </ul>
            )}
            {current && current.warnings.length > 0 && (
              <ul className="problems" aria-label="Warnings">
                {current.warnings.map((w, i) => (
                  <li key={i}>
                    {w.line !== null && (
                      <button type="button" className="linkish" onClick={() => jump(w.line!)}>
                        Line {w.line}
                      </button>
                    )}{" "}
                    <span className="warn-text">{w.message}</span>
                  </li>
                ))}
              </ul>
            )}
          </div>
          <ReferencePicker
            workspaceId={workspaceId}
            templateId={templateId}
            value={parsed?.value ?? lastGood.current}
            cursorStep={parsed && parsed.value !== undefined ? parsed.stepAt(cursorLine) : null}
            onSet={setReference}
          />
          <GraphCanvas graph={graph} title="Preview of the pipeline graph" />
        </div>
      )}
      {failure && text !== null && (
        <p className="error" role="alert">
          {failure}
        </p>
      )}
      {saved && (
        <p className="ok-text" role="status">
          {saved}
        </p>
      )}
      <div className="row actions">
        <button type="button" onClick={save} disabled={busy || !parsed || hasProblems || !current}>
          {busy ? "Saving…" : templateId ? "Save changes" : "Create template"}
        </button>
        <button type="button" className="secondary" onClick={props.onClose}>
          Close editor
        </button>
      </div>
    </section>
  );
}
