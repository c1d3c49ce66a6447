"""Where a backup's passphrase comes from: a file (``--passphrase-file``) or the environment, never the command
line (every user of the machine can read another's command line)."""

from __future__ import annotations

import os
from pathlib import Path

from hangar.backup.archive import BackupRefused
from hangar.backup.crypt import check_passphrase

PASSPHRASE_ENV = "HANGAR_BACKUP_PASSPHRASE"


def read_passphrase(file: Path | None) -> bytes | None:
    """The passphrase in ``file`` (its first line), else in ``HANGAR_BACKUP_PASSPHRASE``, else None."""
    if file is not None:
        try:
            text = file.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise BackupRefused(f"there is no passphrase file at {file}") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise BackupRefused(f"the passphrase file {file} cannot be read: {exc}") from None
        lines = text.splitlines()
        where = f"the file {file}"
        value = lines[0] if lines else ""
    else:
        env = os.environ.get(PASSPHRASE_ENV)
        if env is None:
            return None
        where, value = PASSPHRASE_ENV, env
    try:
        return check_passphrase(value, where)
    except ValueError as exc:
        raise BackupRefused(str(exc)) from None
