"""The terminal image: the Debian root filesystem pack rigs boot from (``pack``) and its mirror (``mirror``)."""

from hangar.rigs.image.pack import PACK_NAME, TOOLSET_REVISION, PackInfo, ensure_pack, pack_path, pack_ready

__all__ = ["PACK_NAME", "TOOLSET_REVISION", "PackInfo", "ensure_pack", "pack_path", "pack_ready"]
