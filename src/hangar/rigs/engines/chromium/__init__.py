"""Chromium (``engine-a`` on the wire): its launch recipe (``engine``), a small DevTools protocol client (``cdp``),
and the session driving it (``session``) with its parts: the current page (``current``), page targets
(``targets``), input (``inputs``), what runs inside the page (``page``) and pictures (``capture``)."""
