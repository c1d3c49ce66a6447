// Resolve true once an element matches selector, false after timeoutMs. Mutations wake it at once; a slow
// poll catches changes no mutation announces (a :checked state, a style).
(function (selector, timeoutMs) {
  try {
    if (document.querySelector(selector)) return true;
  } catch (e) {
    return { invalid: String(e && e.message) };
  }
  return new Promise((resolve) => {
    let done = false;
    const finish = (found) => {
      if (done) return;
      done = true;
      observer.disconnect();
      clearInterval(poll);
      clearTimeout(timer);
      resolve(found);
    };
    const check = () => {
      if (document.querySelector(selector)) finish(true);
    };
    const observer = new MutationObserver(check);
    observer.observe(document, { childList: true, subtree: true, attributes: true, characterData: true });
    const poll = setInterval(check, 100);
    const timer = setTimeout(() => finish(false), timeoutMs);
  });
})
