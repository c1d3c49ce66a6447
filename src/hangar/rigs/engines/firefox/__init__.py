"""Firefox ESR (``engine-b`` on the wire): its launch recipe and session (``engine``) and a small WebDriver BiDi
client (``bidi``)."""
