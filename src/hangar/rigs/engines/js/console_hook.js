// Wraps console.* (and uncaught errors) into a bounded buffer on the window, for engines with no console feed.
// Idempotent: a second call on the same document keeps the first hook. The buffer keeps the most recent
// entries within maxEntries and maxBytes and counts what it dropped. Output logged before the hook ran
// (while the page loaded) is not in it.
(function (maxEntries, maxBytes, maxEntryChars) {
  const KEY = "__hangarConsole";
  if (Object.prototype.hasOwnProperty.call(window, KEY)) return false;
  const state = { entries: [], bytes: 0, dropped: 0 };
  Object.defineProperty(window, KEY, { value: state, enumerable: false, configurable: false, writable: false });
  const show = (value) => {
    if (typeof value === "string") return value;
    if (value instanceof Error) return value.stack ? String(value) + "\n" + value.stack : String(value);
    if (value === undefined || typeof value === "function" || typeof value === "symbol") return String(value);
    try {
      const json = JSON.stringify(value);
      return json === undefined ? String(value) : json;
    } catch (e) {
      return Object.prototype.toString.call(value);
    }
  };
  const record = (level, args) => {
    let text = Array.from(args, show).join(" ");
    if (text.length > maxEntryChars) text = text.slice(0, maxEntryChars - 1) + "\u2026";
    state.entries.push({ level: level, text: text });
    state.bytes += text.length;
    while (state.entries.length > maxEntries || state.bytes > maxBytes) {
      state.bytes -= state.entries.shift().text.length;
      state.dropped += 1;
    }
  };
  for (const level of ["log", "info", "warn", "error", "debug", "trace"]) {
    const original = console[level];
    if (typeof original !== "function") continue;
    console[level] = function () {
      try {
        record(level, arguments);
      } catch (e) {
        // a console call must never throw because of the hook
      }
      return original.apply(this, arguments);
    };
  }
  window.addEventListener("error", (event) => record("exception", [event.error || event.message]));
  window.addEventListener("unhandledrejection", (event) => record("exception", ["Unhandled rejection:", event.reason]));
  return true;
})
