"""Rig image packs for the tests: one directory per machine (``HANGAR_TEST_PACKS``, default
``~/.cache/hangar-test/packs``), shared by every test and every process a test starts, built before the tests.

A pack takes minutes to build, far longer than a test waits for a rig, a shell step or a command agent. So no
test builds one: ``make test`` builds them all first (``make test-packs``), and a run of pytest alone builds,
before its first test, the packs its selected tests declare with ``@pytest.mark.packs("terminal", "engine-a",
...)``, through ``hangar rigs build-pack`` with its progress. A build under way elsewhere (another run sharing the
directory) is waited for, not repeated. When a build fails, the tests that declared the pack fail at once with
the reason instead of each trying again. The hooks here are the suite's (tests/conftest.py takes them) and make a
plugin of their own (``-p tests.support.packs``).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hangar.rigs.images.builder import TERMINAL, PackRecipe, pack_ready
from hangar.rigs.images.recipes import BROWSERS, DESKTOP

PACKS = Path(os.environ.get("HANGAR_TEST_PACKS") or Path.home() / ".cache" / "hangar-test" / "packs")
HANGAR = str(Path(sys.executable).parent / "hangar")
MARKER = "packs"

# Packs whose build failed in this session, with why.
_failed: dict[str, str] = {}


def recipe_for(key: str) -> PackRecipe:
    """``terminal``, ``desktop`` or a browser engine (``engine-a``), as tests name the packs they need."""
    if key == "desktop":
        return DESKTOP
    return TERMINAL if key == "terminal" else BROWSERS[key]


def declared(item: pytest.Item) -> list[PackRecipe]:
    return [recipe_for(key) for mark in item.iter_markers(MARKER) for key in mark.args]


def pytest_collection_finish(session: pytest.Session) -> None:
    """Build the packs the collected tests declare that are not built yet, before any test runs."""
    if session.config.option.collectonly:
        return
    wanted: dict[str, PackRecipe] = {}
    for item in session.items:
        wanted.update((r.name, r) for r in declared(item))
    missing = [r for r in wanted.values() if not pack_ready(PACKS, r)]
    if not missing or rigs_unavailable() is not None:
        return  # nothing to build, or the tests skip with the host's reason (``rigs_enclosure_env.ready_pack``)
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    capture = session.config.pluginmanager.get_plugin("capturemanager")
    names = [r.name for r in missing]
    with capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext():
        if reporter is not None:
            reporter.write_line(f"building rig packs the selected tests need into {PACKS}: {', '.join(names)}")
        done = subprocess.run(
            [HANGAR, "rigs", "build-pack", *names], env={**os.environ, "HANGAR_RIG_PACKS_DIR": str(PACKS)}, check=False
        )
    for recipe in missing:
        if not pack_ready(PACKS, recipe):
            _failed[recipe.name] = (
                f"the {recipe.label} was not built before the tests (`hangar rigs build-pack {recipe.name}` "
                f"exited with {done.returncode}; its error is printed above the test results)"
            )


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Fail a test at once when a pack it declared could not be built."""
    for recipe in declared(item):
        if recipe.name in _failed:
            pytest.fail(_failed[recipe.name], pytrace=False)


def rigs_unavailable() -> str | None:
    """Why this host cannot run rigs (the tests that need them skip saying so), or None."""
    from hangar.rigs.backends.enclosure import EnclosureBackend

    return EnclosureBackend(PACKS.parent / "probe", packs_root=PACKS).unavailable_reason()
