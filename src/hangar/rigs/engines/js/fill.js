// Replace the value of the form field matching selector and fire the input and change events typing fires.
// The value goes through the prototype's setter, past any setter a framework put on the element itself, so
// frameworks that track the last value they saw notice the change.
(function (selector, value) {
  let el;
  try {
    el = document.querySelector(selector);
  } catch (e) {
    return { invalid: String(e && e.message) };
  }
  if (!el) return { missing: true };
  el.scrollIntoView({ block: "center", inline: "center", behavior: "instant" });
  el.focus();
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
