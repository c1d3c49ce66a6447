// Put one PNG or JPEG image on the clipboard, or take the clipboard's image, through the page's async clipboard
// API (secure contexts only). Every engine runs this same function (engine A through Runtime.callFunctionOn).
// write(data, mime): data is base64; a clipboard that does not take the type but takes PNG (Chromium and WebKit take PNG only)
// gets the image converted to PNG on a canvas; afterwards the clipboard is read back for the type, because a
// clipboard may accept a write and keep nothing of it. read(cap): the first PNG or JPEG on the clipboard as
// base64, unless it is over cap bytes (then only its size, so the answer stays bounded).
(async function (op, data, mime, cap) {
  if (!(window.isSecureContext && navigator.clipboard)) return { absent: true };
  if (typeof ClipboardItem === "undefined" || !navigator.clipboard.write || !navigator.clipboard.read) {
    return { unsupported: "the page's clipboard API has no ClipboardItem, so it takes text only" };
  }
  const failed = (e) => ({ denied: String((e && e.name) || "") + ": " + String((e && e.message) || e) });
  const takes = (type) => typeof ClipboardItem.supports !== "function" || ClipboardItem.supports(type);
  if (op === "write") {
    const text = atob(data);
    const bytes = new Uint8Array(text.length);
    for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
    let blob = new Blob([bytes], { type: mime });
    let converted = false;
    if (!takes(mime)) {
      if (mime === "image/png" || !takes("image/png")) {
        return { unsupported: "the clipboard does not take " + mime + " images" };
      }
      try {
        const bitmap = await createImageBitmap(blob);
        const canvas = document.createElement("canvas");
        canvas.width = bitmap.width;
        canvas.height = bitmap.height;
        canvas.getContext("2d").drawImage(bitmap, 0, 0);
        blob = await new Promise((resolve) => canvas.toBlob(resolve, "image/png"));
      } catch (e) {
        return { unsupported: "the page could not convert the image to PNG (" + failed(e).denied + ")" };
      }
      if (!blob) return { unsupported: "the page could not convert the image to PNG (too large for a canvas)" };
      converted = true;
    }
    try {
      await navigator.clipboard.write([new ClipboardItem({ [blob.type]: blob })]);
      const items = await navigator.clipboard.read();
      return { kept: items.some((item) => item.types.includes(blob.type)), type: blob.type, converted: converted };
    } catch (e) {
      return failed(e);
    }
  }
  try {
    for (const item of await navigator.clipboard.read()) {
      const type = ["image/png", "image/jpeg"].find((t) => item.types.includes(t));
      if (!type) continue;
      const blob = await item.getType(type);
      if (blob.size > cap) return { tooLarge: blob.size, type: type };
      const url = await new Promise((resolve, reject) => {
        const reader = new FileReader();
        reader.onload = () => resolve(String(reader.result));
        reader.onerror = () => reject(reader.error);
        reader.readAsDataURL(blob);
      });
      return { type: type, data: url.slice(url.indexOf(",") + 1) };
    }
    return { none: true };
  } catch (e) {
    return failed(e);
  }
})
