"""The suite in parallel processes (pytest-xdist; README "Tests"): which tests must share a worker.

``make pytest`` runs ``--dist loadgroup``: tests are handed to the workers one by one, except those with an
``xdist_group`` mark, which all run on one worker. A module whose tests share a fixture of module scope (a server, a
booted rig, a browser, a built site, all costly to start) is one such group, named for the module: split across
workers, each would start its own copy, and tests written against one shared fixture (its state carried from test
to test, its event loop) would see another. The mark is added here, from each test's fixtures, so a module that
gains such a fixture is grouped without anyone remembering to. The hook is the suite's (tests/conftest.py takes it).

pytest-xdist 3.8 applies the mark by renaming ``item._nodeid``, which pytest 9.2 no longer reads (a node's id is
``item._id``): under these versions the groups are not kept and each worker sets up its own copy of a module's
fixture (the suite passes that way: each copy lives in the worker's own temporary directory, on its own ports).
"""

from __future__ import annotations

from collections.abc import Generator

import pytest

SHARED_SCOPES = frozenset({"module", "package", "class"})


def shares_module_fixture(item: pytest.Item) -> bool:
    """True when ``item`` uses a fixture that lives longer than one test but less than the session (a session's
    fixtures are each worker's own: its PostgreSQL cluster)."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    return any(d.scope in SHARED_SCOPES for defs in info.name2fixturedefs.values() for d in defs)


@pytest.hookimpl(wrapper=True)  # a wrapper's first half runs before every plain hook, xdist's reading the marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> Generator[None, None, None]:
    if config.pluginmanager.hasplugin("xdist"):  # else (`-p no:xdist`) no marks to read, nor is the mark registered
        for item in items:
            if shares_module_fixture(item):
                module = getattr(item, "module", None)
                item.add_marker(pytest.mark.xdist_group(module.__name__ if module is not None else item.nodeid))
    return (yield)
