"""Agent skills: what a workspace installs for its agents, pinned by digest, and the supply-chain scan over them.

A skill is a ``SKILL.md`` (instructions an agent reads) alone, or an archive holding one with the scripts and files
it bundles. A workspace admin installs one from an agent-skills discovery index (format 0.2.0, the one the product
site publishes) or uploads its bytes; either way the SHA-256 of the exact bytes is pinned when it is installed and a
mismatch is refused, naming both digests. The scan (``skills.analyze``, run at install and by the pipeline body of
that name) records a verdict per skill, ``pass``, ``review`` or ``blocked``, with its findings. Agents load only
skills that passed, or whose ``review`` a workspace admin overrode (an audit row); a blocked skill is never loaded.

- ``index``: the discovery index, parsed totally (a malformed one is refused naming the field);
- ``archive``: a skill's bytes unpacked as hostile input (no absolute path, no ``..``, no link, bounded);
- ``fetch``: the index and skill downloads, held to the server's outbound address rules;
- ``checks``: the text checks (network destinations, secrets, obfuscation, binaries, instruction overrides);
- ``analysers``: bandit and shellcheck run confined, each with a time bound;
- ``scan``: one skill's findings and verdict; ``store``: the ``skills`` table; ``ops``: ``skills.*``; ``body``:
  the ``skills.analyze`` pipeline body.
"""
