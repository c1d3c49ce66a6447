"""Dev domains: names under ``.test`` or ``.localhost`` a space's browser rigs reach a rig's guest port by.

- ``names``: the names, their table and rules; ``router``: which rig and port a name reaches, and each live rig's
  lanes, resolver names and HTTPS leaf; ``lanes``: a rig's HTTP and HTTPS lanes on its own loopback, routing each
  connection by name; ``tls``: the server-local certificate authority and its leaves.
"""
