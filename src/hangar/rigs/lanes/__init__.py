"""Lanes: the ways people and agents reach into a running rig, other than its ops.

- ``access``: authorizing a lane request (the device credential, a signed target, the rig's space);
  ``signing``: the signed targets themselves; ``socketlane``: what the WebSocket lanes share.
- ``files``: the file lane (drops in, files out); ``clipboard``: the clipboard lane, under ``consent`` (per person
  and direction, with the grants' table and migrations).
- ``terminal``: the live terminal over a WebSocket; ``liveview``: a browser rig's page as moving pictures, with
  ``pagefeed``, its list of pages.
- ``browseruse``: ``browser_use``, each parsed verb carried out on the rig's engine; ``fence``: what a page hands
  back, fenced as untrusted text.
"""
