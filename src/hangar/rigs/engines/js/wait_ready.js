// Resolve once the document finished loading (readyState complete), or after timeoutMs.
(function (timeoutMs) {
  if (document.readyState === "complete") return true;
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), timeoutMs);
    window.addEventListener("load", () => {
      clearTimeout(timer);
      resolve(true);
    }, { once: true });
  });
})
