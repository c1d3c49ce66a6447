"""Where a backup's passphrase comes from: a file (``--passphrase-file``) or the environment, never the command
line (every user of the machine can read another's command line)."""

from __future__ import annotations

from pathlib import Path

from pydantic import SecretStr

from hangar.backup.archive import BackupRefused
from hangar.backup.crypt import check_passphrase

PASSPHRASE_ENV = "HANGAR_BACKUP_PASSPHRASE"


def read_passphrase(file: Path | None, from_env: SecretStr | None) -> bytes | None:
    """The passphrase in ``file`` (its first line), else ``from_env`` (``HANGAR_BACKUP_PASSPHRASE``, which the
    command line takes into ``Settings.backup_passphrase`` and out of the environment), else None."""
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
        if from_env is None:
            return None
        where, value = PASSPHRASE_ENV, from_env.get_secret_value()
    try:
        return check_passphrase(value, where)
    except ValueError as exc:
        raise BackupRefused(str(exc)) from None
