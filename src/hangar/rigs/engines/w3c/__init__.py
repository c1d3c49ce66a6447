"""What the W3C-driven engines (Firefox over BiDi, WebKit over classic WebDriver) share: input action sequences
(``actions``), error codes as ``hangar.errors`` (``errors``), and the session verbs built on them (``session``)."""
