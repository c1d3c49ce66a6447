"""Every registered pipeline body, listed explicitly.

Each module named in ``BODY_MODULES`` exposes ``BODIES``, a list of functions declared with ``@body``. A part
that contributes bodies adds one line here naming its module. The website generates the pipeline-steps
reference from ``all_bodies()`` (each spec has ``key`` and a one-line ``summary``).
"""

from __future__ import annotations

import importlib

from hangar.pipelines.bodies.spec import BodyRegistry, BodySpec, spec_of_body

BODY_MODULES: tuple[str, ...] = (
    "hangar.pipelines.bodies.trigger",
    "hangar.pipelines.bodies.shell",
    "hangar.pipelines.bodies.router",
    "hangar.pipelines.bodies.subpipeline",
    "hangar.agents.bodies",
)


def all_bodies() -> list[BodySpec]:
    """The specs of every body, sorted by key; a key declared twice is an error."""
    registry = BodyRegistry()
    for name in BODY_MODULES:
        module = importlib.import_module(name)
        for item in module.BODIES:
            registry.add(spec_of_body(item))
    return list(registry.specs)


def default_registry() -> BodyRegistry:
    return BodyRegistry(all_bodies())
