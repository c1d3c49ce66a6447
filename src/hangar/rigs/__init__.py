"""Rigs: machines agents and people drive (terminal first), their lifecycle, ports and lanes.

The public surface for other parts: ``hangar.rigs.part.RIGS_PART`` (handed to the server), the domain events
in ``hangar.rigs.events`` and the ``RigManager`` service (``ctx.service(RigManager)``). This module imports
nothing so that importing a submodule (a backend, the errors) never drags the manager in.
"""
