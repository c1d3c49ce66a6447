// Find the first element matching selector, scroll it into view, then do verb to it:
// - "locate": return its centre in viewport CSS pixels;
// - "focus": focus it;
// - "fill": focus it, replace the value of the form field and fire the input and change events typing fires.
//   The value goes through the prototype's setter, past any setter a framework put on the element itself, so
//   frameworks that track the last value they saw notice the change.
(function (selector, verb, value) {
  let el;
  try {
    el = document.querySelector(selector);
  } catch (e) {
    return { invalid: String(e && e.message) };
  }
  if (!el) return { missing: true };
  el.scrollIntoView({ block: "center", inline: "center", behavior: "instant" });
  if (verb === "locate") {
    const rect = el.getBoundingClientRect();
    return { x: Math.round(rect.left + rect.width / 2), y: Math.round(rect.top + rect.height / 2) };
  }
  el.focus();
  if (verb === "focus") return { ok: true };
  const setter = (proto) => Object.getOwnPropertyDescriptor(proto, "value").set;
  if (el instanceof HTMLInputElement) {
    if (["checkbox", "radio", "file", "button", "submit", "reset", "image", "hidden"].includes(el.type)) {
      return { notEditable: "input type=" + el.type };
    }
    setter(HTMLInputElement.prototype).call(el, value);
  } else if (el instanceof HTMLTextAreaElement) {
    setter(HTMLTextAreaElement.prototype).call(el, value);
  } else if (el instanceof HTMLSelectElement) {
    setter(HTMLSelectElement.prototype).call(el, value);
  } else if (el.isContentEditable) {
    el.textContent = value;
  } else {
    return { notEditable: el.tagName.toLowerCase() };
  }
  el.dispatchEvent(new InputEvent("input", { bubbles: true, inputType: "insertReplacementText", data: value }));
  el.dispatchEvent(new Event("change", { bubbles: true }));
  return { ok: true };
})
