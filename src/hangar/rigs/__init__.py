"""Rigs: machines agents and people drive (terminal first), their lifecycle, ports and lanes.

Other parts need nothing from it today: the server composes ``hangar.rigs.part.RIGS_PART``, and the rest of the
product reaches rigs through their ops and domain events. Confinement of user code is offered through the kernel's
``hangar.core.confine.Confinement``, which this part provides. This module imports nothing so that importing a
submodule (a backend, the errors) never drags the manager in.
"""
