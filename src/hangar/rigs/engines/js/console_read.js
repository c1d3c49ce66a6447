// The console buffer console_hook.js keeps: entries and how many were dropped; hooked is false when the
// document has no hook (it navigated since).
(function () {
  const state = window.__hangarConsole;
  if (!state) return { hooked: false, entries: [], dropped: 0 };
  return { hooked: true, entries: state.entries.map((e) => [e.level, e.text]), dropped: state.dropped };
})
