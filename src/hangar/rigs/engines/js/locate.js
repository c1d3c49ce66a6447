// Scroll the first element matching selector into view and return its centre in viewport CSS pixels.
(function (selector) {
  let el;
  try {
    el = document.querySelector(selector);
  } catch (e) {
    return { invalid: String(e && e.message) };
  }
  if (!el) return { missing: true };
  el.scrollIntoView({ block: "center", inline: "center", behavior: "instant" });
  const rect = el.getBoundingClientRect();
  return { x: Math.round(rect.left + rect.width / 2), y: Math.round(rect.top + rect.height / 2) };
})
