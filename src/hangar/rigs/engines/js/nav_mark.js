// Marks the current document with token (a navigation is about to start) and answers where it is; called
// again with mark false, it answers whether the document is still the marked one and how far it loaded. A new
// document has no mark, a same-document navigation keeps it and changes the URL.
(function (token, mark) {
  const KEY = "__hangarNavigation";
  if (mark) {
    try {
      Object.defineProperty(window, KEY, { value: token, configurable: true, enumerable: false });
    } catch (e) {
      // a page that froze the window keeps no mark: its navigation is told apart by its URL alone
    }
  }
  return { marked: window[KEY] === token, url: location.href, ready: document.readyState };
})
