// Where the page is: its URL, title, readiness and layout sizes (viewport and whole document).
(function () {
  const root = document.documentElement;
  const body = document.body;
  return {
    url: location.href,
    title: document.title,
    ready: document.readyState,
    width: window.innerWidth,
    height: window.innerHeight,
    docWidth: Math.max(root ? root.scrollWidth : 0, body ? body.scrollWidth : 0, window.innerWidth),
    docHeight: Math.max(root ? root.scrollHeight : 0, body ? body.scrollHeight : 0, window.innerHeight),
    chromeWidth: window.outerWidth - window.innerWidth,
    chromeHeight: window.outerHeight - window.innerHeight,
  };
})
