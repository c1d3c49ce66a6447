// The document's markup, cut at maxChars; total says how long it was.
(function (maxChars) {
  const html = document.documentElement ? document.documentElement.outerHTML : "";
  return { html: html.slice(0, maxChars), total: html.length };
})
