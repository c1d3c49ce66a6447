"""Browser engines: one protocol client per browser behind ``EngineSession``, and the recipes that launch them.

- ``session``: the engine interface the browser verbs and the live view ask of one running engine; ``pages``:
  following a session's top-level pages (shared by every engine); ``keys``, ``pixels``, ``clipboard_image``,
  ``scripts`` (the page scripts in ``js/``): what the engines share.
- ``launch``: a recipe, the same wherever the engine runs; ``registry``: the recipes by their wire value, one line
  each; ``hostlaunch``: an engine run on this host, outside any rig (conformance tests, the benchmark).
- ``chromium/`` (``engine-a`` on the wire): Debian's Chromium over the DevTools protocol.
- ``firefox/`` (``engine-b``): Firefox ESR over WebDriver BiDi.
- ``webkit/`` (``engine-c``): WebKitGTK's MiniBrowser over classic W3C WebDriver.
- ``w3c/``: what the Firefox and WebKit sessions share (W3C input actions, error codes, the verbs a script does).

Engines know nothing of rigs or backends: a backend boots a recipe inside a rig (``hangar.rigs.backends``).
"""
