"""The enclosure backend: rigs as Linux namespaces with bubblewrap, an overlay root over the image pack,
cgroup limits and parking, and an egress gate as the only way out."""

from hangar.rigs.backends.base import GUEST_WORKTREE
from hangar.rigs.backends.enclosure.backend import EnclosureBackend
from hangar.rigs.backends.enclosure.rig import GUEST_HOME, EnclosureRig

__all__ = ["GUEST_HOME", "GUEST_WORKTREE", "EnclosureBackend", "EnclosureRig"]
