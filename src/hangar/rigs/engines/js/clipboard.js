// Read or write the clipboard's text through the page's clipboard API, which exists in secure contexts only.
(async function (op, text) {
  if (!(window.isSecureContext && navigator.clipboard)) return { absent: true };
  try {
    if (op === "read") return { text: await navigator.clipboard.readText() };
    await navigator.clipboard.writeText(text);
    return { ok: true };
  } catch (e) {
    return { denied: String((e && e.name) || "") + ": " + String((e && e.message) || e) };
  }
})
