from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def dist() -> Path:
    """The built web client (``web/dist``) the browser tests serve, built first when it is missing or stale. Of
    session scope: a worker checks it once, and a module using it is not bound to one worker for it (a fixture of
    module scope would group the module's tests, tests/support/parallel.py)."""
    from tests.support.webclient import built_web_client  # Playwright loads only for the tests that need it

    return built_web_client()
