// Scale an encoded image to width x height and re-encode it as mime. Decoding bytes (not a URL) keeps the
// page's content security policy and the network out of it, and leaves the canvas untainted.
(async function (base64, sourceMime, width, height, mime, quality) {
  const binary = atob(base64);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i += 1) bytes[i] = binary.charCodeAt(i);
  const bitmap = await createImageBitmap(new Blob([bytes], { type: sourceMime }));
  const canvas = document.createElement("canvas");
  canvas.width = width;
  canvas.height = height;
  const context = canvas.getContext("2d");
  context.imageSmoothingQuality = "high";
  context.drawImage(bitmap, 0, 0, width, height);
  const url = canvas.toDataURL(mime, quality);
  return url.slice(url.indexOf(",") + 1);
})
