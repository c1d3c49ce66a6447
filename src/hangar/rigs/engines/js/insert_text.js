// Insert text at the caret of the focused editable element, as a paste of typed text would (input events fire);
// false when nothing editable has focus.
(function (text) {
  const el = document.activeElement;
  if (!el || el === document.body) return false;
  const editable = el.isContentEditable || el instanceof HTMLTextAreaElement ||
    (el instanceof HTMLInputElement && !["checkbox", "radio", "file", "button", "submit", "reset"].includes(el.type));
  if (!editable) return false;
  return document.execCommand("insertText", false, text);
})
