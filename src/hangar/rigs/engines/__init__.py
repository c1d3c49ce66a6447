"""Browser engines: one protocol client per engine behind ``EngineSession``, and the recipes that launch them."""
