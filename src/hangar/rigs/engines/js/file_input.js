// The file input at (x, y): the element there, the control of a label there, or the one file input inside a
// small enclosing block (a styled drop zone around a hidden input); null when there is none. Blocks as large
// as a page section are not searched: a point on unrelated content must not find the page's only input.
(function (x, y) {
  const MAX_BLOCK_AREA = 640 * 480;
  const isFile = (el) => el instanceof HTMLInputElement && el.type === "file";
  const el = document.elementFromPoint(x, y);
  if (!el) return null;
  if (isFile(el)) return el;
  const label = el.closest("label");
  if (label && isFile(label.control)) return label.control;
  let block = el;
  for (let depth = 0; block && depth < 4; depth += 1, block = block.parentElement) {
    if (block === document.body || block === document.documentElement) return null;
    const rect = block.getBoundingClientRect();
    if (rect.width * rect.height > MAX_BLOCK_AREA) return null;
    const inputs = block.querySelectorAll("input[type=file]");
    if (inputs.length === 1) return inputs[0];
    if (inputs.length > 1) return null;
  }
  return null;
})
