"""The ``mobile-emulator`` backend: phones driven over Debian's ``adb``, either an emulator the host's vendor SDK
boots for each rig (``emulator``) or a device or emulator already running that adb reaches (``host``: the server
settings naming one). ``adb`` runs adb itself (never through a host shell), ``words`` writes the command lines
the device's own shell reads, ``apk`` opens a package to install without following anything a guest planted, and
``backend`` is the backend and its rigs (``PhoneRig``)."""

from hangar.rigs.backends.mobile.backend import MobileBackend, PhoneRig

__all__ = ["MobileBackend", "PhoneRig"]
