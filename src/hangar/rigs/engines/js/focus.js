// Focus the first element matching selector.
(function (selector) {
  let el;
  try {
    el = document.querySelector(selector);
  } catch (e) {
    return { invalid: String(e && e.message) };
  }
  if (!el) return { missing: true };
  el.scrollIntoView({ block: "center", inline: "center", behavior: "instant" });
  el.focus();
  return { ok: true };
})
