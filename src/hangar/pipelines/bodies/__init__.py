"""Pipeline bodies: the declaration API (``spec``) and the bodies this part owns (``pipelines.part.BODIES``).

Other parts list their own bodies in their ``Part``; the composition hands them to ``make_pipelines_part``.
"""
