"""A rig while it lives in this process: ``rigs`` (``LiveRig``, its handle, boot, lanes, in-flight actions and
control, and ``LiveRigs``, those of this process), and what each live rig keeps: its port forwards (``ports``),
the egress refusals its watchers are told of (``refusals``) and the people's kept terminals (``terminals``)."""
