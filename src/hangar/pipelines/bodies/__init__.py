"""Pipeline bodies: the declaration API (``spec``) and the bodies this part owns; ``catalog`` lists them all."""
