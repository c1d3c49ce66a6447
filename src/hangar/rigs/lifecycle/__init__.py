"""The life of rigs: ``manager`` (``RigManager``, what agents and people do with a rig, composed of the parts
below), ``opening`` (reuse, provisioning, booting), ``upkeep`` (the sweep, parking and waking, ports),
``closing`` (every way a rig ends) and ``budget`` (the one memory budget of this server's enclosures). The pure
decisions they carry out are ``hangar.rigs.policy``."""
