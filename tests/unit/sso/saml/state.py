"""A real server database with the SSO tables for unit tests: migrated once, copied per use (fast and isolated)."""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
import uuid
from pathlib import Path

from hangar.core.migrating import apply_migrations
from hangar.core.sqlite_writer import SqliteRunner
from hangar.sso.config import MIGRATIONS
from hangar.sso.state import BUSY_MS


@functools.lru_cache(maxsize=1)
def _template() -> Path:
    root = Path(tempfile.mkdtemp(prefix="hangar-sso-state-"))
    atexit.register(shutil.rmtree, root, True)
    path = root / "template.db"
    apply_migrations(path, [MIGRATIONS])
    return path


def state_db() -> SqliteRunner:
    """A fresh migrated server database of its own."""
    template = _template()
    path = template.with_name(f"{uuid.uuid4().hex}.db")
    shutil.copyfile(template, path)
    return SqliteRunner(path, busy_ms=BUSY_MS)
