"""Rig backends: the interface (``base``) and the implementations (``enclosure``)."""
