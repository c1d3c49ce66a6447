"""Rig images: what a rig boots from.

- ``settings``: the workspace settings naming a custom machine image (registry references only).
- ``recipes``: the packs rigs boot from (the terminal's toolset, one browser pack per engine); ``home/`` the
  browser's start page they carry.
- ``builder``: building a pack once (a Debian root filesystem made with mmdebstrap, kept pre-extracted);
  ``mirror``: which Debian mirrors it is built from.
- ``packs``: the packs as the Rigs settings screen shows them (ready, building, failed) and the build steps.
- ``versions``: each build a version of its own, the pack's name a link to the current one, swapped atomically;
  rigs hold the version they boot from and unused old versions are removed.
- ``archive``: the release dates of the Debian suites a pack is built from; ``refresh``: checking a ready pack
  against them and the record of its last check and rebuild.
"""
