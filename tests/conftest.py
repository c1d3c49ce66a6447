from __future__ import annotations

import os

import pytest

from tests.support.packs import PACKS, build_declared, refuse_without_packs

# Tests never touch a user's real data directory.
os.environ.pop("HANGAR_DATA_DIR", None)
os.environ.pop("HANGAR_PUBLIC_URL", None)
os.environ.pop("SERVER_WEB_CLIENT_URL", None)
# Every server a test starts (in this process or as a child) boots rigs, confined shell steps and command
# agents from one set of image packs per machine, built before the tests (tests/support/packs.py); a server a
# test starts never begins a build of its own at start.
os.environ["HANGAR_RIG_PACKS_DIR"] = str(PACKS)
os.environ["HANGAR_PREPARE_PACK"] = "0"


def pytest_collection_finish(session: pytest.Session) -> None:
    build_declared(session)


def pytest_runtest_setup(item: pytest.Item) -> None:
    refuse_without_packs(item)
