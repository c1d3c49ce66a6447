"""The rigs part's ops (CONTRACTS section 6), one module per family; ``RIG_OPS`` lists them all for ``part.py``.

- ``rig``: open, list, get, close and exec a rig, its control, watch, ports, host grants, lane addresses, the
  ``*_use`` verbs and the action log (and the helpers the other modules share: ``manager``, ``guarded``).
- ``navigation``: ``rig.navigate``, a person moving a browser rig's page from the live view.
- ``clipboard``: a person's clipboard consent (``rig.clipboardGrant``, ``rig.clipboardRevoke``,
  ``rig.clipboardGrants``).
- ``devdomains``: a space's dev domains (``rig.devDomains``, ``rig.setDevDomain``, ``rig.removeDevDomain``).
- ``host``: the host's rigs, for the server owner (``rigs.status``, ``rigs.setMemoryBudget``, the image packs).
- ``images``: desktop images for full-VM rigs, for the server owner (``rigs.images``, ``rigs.importImage``).
"""

from hangar.core.part import OpFunction
from hangar.rigs.ops import clipboard, devdomains, host, images, navigation, rig

RIG_OPS: list[OpFunction] = [*rig.OPS, *navigation.OPS, *clipboard.OPS, *devdomains.OPS, *host.OPS, *images.OPS]
