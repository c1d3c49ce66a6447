"""Rig backends: the interface (``base``), the capabilities a rig offers (``capabilities``), booting a browser
engine inside a rig through them (``engineboot``), and the implementations (``enclosure``; ``mobile``: phones over
adb). ``simulator`` says why simulator rigs cannot run on this host."""
