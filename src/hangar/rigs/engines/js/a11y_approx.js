// A DOM-derived approximation of the accessibility tree, for engines with no platform tree to read.
// Roles come from ARIA role attributes or the element's tag, names from aria-labelledby, aria-label, labels,
// alt, title, placeholder or text; values and states from the form controls. Generic containers are flattened,
// hidden subtrees skipped. The result is compact indented text capped at maxChars.
(function (maxChars) {
  const IMPLICIT = {
    A: (el) => (el.hasAttribute("href") ? "link" : null), ARTICLE: "article", ASIDE: "complementary",
    BUTTON: "button", DETAILS: "group", DIALOG: "dialog", FIELDSET: "group", FIGURE: "figure", FORM: "form",
    H1: "heading", H2: "heading", H3: "heading", H4: "heading", H5: "heading", H6: "heading", HR: "separator",
    IFRAME: "iframe", IMG: (el) => (el.getAttribute("alt") === "" ? null : "img"), LI: "listitem", MAIN: "main",
    MENU: "list", METER: "meter", NAV: "navigation", OL: "list", OPTION: "option", P: "paragraph",
    PROGRESS: "progressbar", SELECT: (el) => (el.multiple || el.size > 1 ? "listbox" : "combobox"),
    SUMMARY: "button", TABLE: "table", TD: "cell", TEXTAREA: "textbox", TH: "columnheader", TR: "row", UL: "list",
    HEADER: (el) => (el.closest("article, aside, main, nav, section") ? null : "banner"),
    FOOTER: (el) => (el.closest("article, aside, main, nav, section") ? null : "contentinfo"),
    SECTION: (el) => (el.hasAttribute("aria-label") || el.hasAttribute("aria-labelledby") ? "region" : null),
    INPUT: (el) => {
      const type = (el.getAttribute("type") || "text").toLowerCase();
      if (type === "hidden") return null;
      const byType = {
        button: "button", submit: "button", reset: "button", image: "button", checkbox: "checkbox",
        radio: "radio", range: "slider", number: "spinbutton", search: "searchbox", file: "button",
      };
      return byType[type] || "textbox";
    },
  };
  const NAME_FROM_CONTENT = new Set([
    "button", "link", "heading", "option", "tab", "menuitem", "cell", "columnheader", "rowheader", "switch",
    "treeitem", "tooltip", "checkbox", "radio",
  ]);
  const SKIP = new Set(["SCRIPT", "STYLE", "NOSCRIPT", "TEMPLATE", "HEAD", "META", "LINK", "TITLE"]);
  const clip = (s, n) => {
    const t = String(s == null ? "" : s).replace(/\s+/g, " ").trim();
    return t.length > n ? t.slice(0, n - 1) + "\u2026" : t;
  };
  const hidden = (el) => {
    if (el.hidden || el.getAttribute("aria-hidden") === "true") return true;
    const style = getComputedStyle(el);
    return style.display === "none" || style.visibility === "hidden";
  };
  const roleOf = (el) => {
    const explicit = (el.getAttribute("role") || "").trim().split(/\s+/)[0];
    if (explicit) return explicit === "none" ? "presentation" : explicit;
    const implicit = IMPLICIT[el.tagName];
    return typeof implicit === "function" ? implicit(el) : implicit || null;
  };
  const textOf = (el) => clip(el.innerText !== undefined ? el.innerText : el.textContent, 120);
  const labelsOf = (el) => {
    if (el.labels && el.labels.length) return Array.from(el.labels, (l) => l.innerText || l.textContent).join(" ");
    return "";
  };
  const nameOf = (el, role) => {
    const by = el.getAttribute("aria-labelledby");
    if (by) {
      const text = by.split(/\s+/).map((id) => document.getElementById(id)).filter(Boolean)
        .map((n) => n.innerText || n.textContent).join(" ");
      if (text.trim()) return clip(text, 120);
    }
    const aria = el.getAttribute("aria-label");
    if (aria && aria.trim()) return clip(aria, 120);
    const labels = labelsOf(el);
    if (labels.trim()) return clip(labels, 120);
    if (el.tagName === "IMG" || (el.tagName === "INPUT" && el.type === "image")) return clip(el.alt, 120);
    if (el.tagName === "INPUT" && ["button", "submit", "reset"].includes(el.type)) return clip(el.value, 120);
    if (el.tagName === "FIELDSET") {
      const legend = el.querySelector(":scope > legend");
      if (legend) return clip(legend.textContent, 120);
    }
    if (el.tagName === "TABLE" && el.caption) return clip(el.caption.textContent, 120);
    if (role && NAME_FROM_CONTENT.has(role)) {
      const text = textOf(el);
      if (text) return text;
    }
    return clip(el.getAttribute("title") || el.getAttribute("placeholder") || "", 120);
  };
  const valueOf = (el, role) => {
    if (el.tagName === "INPUT") {
      if (["checkbox", "radio", "button", "submit", "reset", "image"].includes(el.type)) return null;
      if (el.type === "password") return el.value ? "\u2022".repeat(Math.min(el.value.length, 8)) : "";
      if (el.type === "file") return Array.from(el.files || [], (f) => f.name).join(", ");
      return clip(el.value, 200);
    }
    if (el.tagName === "TEXTAREA") return clip(el.value, 200);
    if (el.tagName === "SELECT") return clip(Array.from(el.selectedOptions, (o) => o.text).join(", "), 200);
    if (el.tagName === "PROGRESS" || el.tagName === "METER") return String(el.value);
    const now = el.getAttribute("aria-valuenow");
    if (now !== null) return clip(el.getAttribute("aria-valuetext") || now, 200);
    if (el.isContentEditable && role === "textbox") return textOf(el);
    return null;
  };
  const statesOf = (el, role) => {
    const states = [];
    if (/^H[1-6]$/.test(el.tagName)) states.push("level=" + el.tagName[1]);
    else if (role === "heading" && el.getAttribute("aria-level")) states.push("level=" + el.getAttribute("aria-level"));
    if (el.checked === true || el.getAttribute("aria-checked") === "true") states.push("checked");
    if (el.getAttribute("aria-checked") === "mixed" || el.indeterminate) states.push("mixed");
    if (el.disabled === true || el.getAttribute("aria-disabled") === "true") states.push("disabled");
    if (el.required === true || el.getAttribute("aria-required") === "true") states.push("required");
    if (el.readOnly === true || el.getAttribute("aria-readonly") === "true") states.push("readonly");
    if (el.getAttribute("aria-invalid") && el.getAttribute("aria-invalid") !== "false") states.push("invalid");
    const expanded = el.getAttribute("aria-expanded");
    if (expanded !== null) states.push(expanded === "true" ? "expanded" : "collapsed");
    if (el.tagName === "DETAILS") states.push(el.open ? "expanded" : "collapsed");
    if (el.getAttribute("aria-pressed") === "true") states.push("pressed");
    if (el.selected === true || el.getAttribute("aria-selected") === "true") states.push("selected");
    if (el === document.activeElement && el !== document.body) states.push("focused");
    return states;
  };
  const lines = [];
  let size = 0;
  let truncated = false;
  const emit = (depth, text) => {
    if (truncated) return;
    const line = "  ".repeat(depth) + text;
    if (size + line.length + 1 > maxChars) {
      truncated = true;
      return;
    }
    lines.push(line);
    size += line.length + 1;
  };
  const childrenOf = (node) => {
    if (node.shadowRoot) return Array.from(node.shadowRoot.childNodes);
    if (node.tagName === "SLOT") {
      const assigned = node.assignedNodes({ flatten: true });
      if (assigned.length) return assigned;
    }
    return Array.from(node.childNodes);
  };
  const walk = (node, depth) => {
    if (truncated) return;
    if (node.nodeType === Node.TEXT_NODE) {
      const text = clip(node.textContent, 200);
      if (text) emit(depth, "text " + JSON.stringify(text));
      return;
    }
    if (node.nodeType !== Node.ELEMENT_NODE || SKIP.has(node.tagName) || hidden(node)) return;
    let role = roleOf(node);
    if (role === "presentation" || role === "generic") role = null;
    let next = depth;
    if (role) {
      const name = nameOf(node, role);
      const value = valueOf(node, role);
      const states = statesOf(node, role);
      let line = role;
      if (name) line += " " + JSON.stringify(name);
      if (value !== null && value !== "") line += " value=" + JSON.stringify(value);
      if (states.length) line += " [" + states.join(", ") + "]";
      emit(depth, line);
      next = depth + 1;
      if (NAME_FROM_CONTENT.has(role) && name && !node.querySelector("input, select, textarea, img[alt]")) return;
    }
    if (node.tagName === "IFRAME" || node.tagName === "SELECT" || node.tagName === "TEXTAREA") return;
    for (const child of childrenOf(node)) walk(child, next);
  };
  emit(0, "document " + JSON.stringify(clip(document.title, 200)));
  if (document.body) for (const child of childrenOf(document.body)) walk(child, 1);
  if (truncated) lines.push("\u2026 (truncated at " + maxChars + " characters)");
  return lines.join("\n");
})
