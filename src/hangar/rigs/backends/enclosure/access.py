"""The tree a rig mounts at ``GUEST_WORKTREE``, opened once beneath its folder with no symlink followed: that
descriptor is what gets the rig user's ACLs (``hangar.core.guestacl.grant_tree``) and what bubblewrap mounts.
"""

from __future__ import annotations

import os

from hangar.core.beneath import NotBeneath, anchored, open_beneath
from hangar.errors import Refused
from hangar.rigs.backends.base import GuestTree


def open_tree(tree: GuestTree) -> int:
    """A descriptor of ``tree``'s directory, opened beneath its folder with no symlink followed; ``Refused``
    naming the tree when it is a symlink, leaves its folder, or is not a directory there."""
    try:
        with anchored(tree.folder) as folder:
            return open_beneath(folder, tree.beneath, os.O_RDONLY | os.O_DIRECTORY)
    except (NotBeneath, FileNotFoundError, NotADirectoryError) as exc:
        raise Refused(
            f"the rig's worktree {tree.beneath or tree.folder.name!r} is not a folder inside its space's folder "
            f"(it is gone, or a symbolic link): it is not mounted ({exc.strerror})"
        ) from None
