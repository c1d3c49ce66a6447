"""Confinement of user code on the rig backend (the kernel's ``hangar.core.confine.Confinement``, which rigs
provide): ``scopes`` runs each scope's jobs in one rig of its own, ``waits`` tells a job's caller what it waits
for."""
