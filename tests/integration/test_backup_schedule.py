"""Scheduled backups: a running server takes one when none is newer than ``backup.intervalHours``, keeps the
newest ``backup.keep``, and a failed one is logged and recorded (never a file at its name); the settings' bounds on
both sides."""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
from pathlib import Path

import pytest

from hangar.backup.part import make_backup_part
from hangar.backup.schedule import MAX_FOLDER, MAX_INTERVAL_HOURS, MAX_KEEP, BackupSchedule, backups_in
from hangar.errors import InvalidArgs
from hangar.identity import IdentityService
from hangar.server.parts import all_parts
from tests.support.records import restore_flags
from tests.support.server import running_server

HANGAR = str(Path(sys.executable).parent / "hangar")
FAST = [make_backup_part(tick=0.05) if p.name == "backup" else p for p in all_parts()]


async def wait_for(check: object, timeout: float = 60.0) -> None:
    assert callable(check)
    for _ in range(int(timeout / 0.05)):
        if check():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("timed out")


async def test_a_scheduled_backup_is_taken_and_the_oldest_beyond_keep_removed(tmp_path: Path) -> None:
    data, folder = tmp_path / "data", tmp_path / "backups"
    folder.mkdir()
    for day in ("20200101T000000Z", "20200102T000000Z", "20200103T000000Z"):
        (folder / f"hangar-{day}.backup").write_bytes(b"old")
    (folder / "notes.txt").write_text("not a backup: never removed")
    async with running_server(data, parts=FAST) as srv:
        identity = srv.ctx.service(IdentityService)
        await identity.set_setting("backup.folder", str(folder))
        await identity.set_setting("backup.keep", 2)
        await identity.set_setting("backup.intervalHours", 24)
        await wait_for(
            lambda: len(backups_in(folder)) == 2 and backups_in(folder)[0][1].name.endswith("03T000000Z.backup")
        )
        newest = backups_in(folder)[-1][1]
        assert newest.stat().st_size > 1000 and (newest.stat().st_mode & 0o777) == 0o600
        assert (folder / "notes.txt").exists()
        assert await srv.ctx.service(BackupSchedule).pass_once() is None  # the newest is within the interval
    restore = [HANGAR, "admin", "restore", str(newest), "--data-dir", str(tmp_path / "r")]
    assert subprocess.run([*restore, *restore_flags(tmp_path / "r")]).returncode == 0
    listed = subprocess.run([HANGAR, "admin", "backups", "--data-dir", str(data)], capture_output=True, text=True)
    assert str(newest) in listed.stdout and "bytes" in listed.stdout


async def test_a_failed_scheduled_backup_is_logged_and_recorded(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    data = tmp_path / "data"
    blocker = tmp_path / "a-file"
    blocker.write_text("a file where the folder should be")
    async with running_server(data) as srv:
        identity = srv.ctx.service(IdentityService)
        await identity.set_setting("backup.folder", str(blocker / "backups"))
        await identity.set_setting("backup.intervalHours", 1)
        with caplog.at_level(logging.ERROR, logger="hangar.backup"):
            assert await srv.ctx.service(BackupSchedule).pass_once() is None
        assert any("the scheduled backup to" in r.getMessage() and "failed" in r.getMessage() for r in caplog.records)
    listed = subprocess.run([HANGAR, "admin", "backups", "--data-dir", str(data)], capture_output=True, text=True)
    assert "failed: " in listed.stdout and str(blocker) in listed.stdout
    assert not list(tmp_path.glob("**/hangar-*.backup"))


async def test_the_schedule_settings_bounds_on_both_sides(tmp_path: Path) -> None:
    async with running_server(tmp_path / "data") as srv:
        identity = srv.ctx.service(IdentityService)
        for key, good, bad in (
            ("backup.intervalHours", [0, MAX_INTERVAL_HOURS], [-1, MAX_INTERVAL_HOURS + 1, "24", True]),
            ("backup.keep", [1, MAX_KEEP], [0, MAX_KEEP + 1]),
            (
                "backup.folder",
                ["/srv/backups", "", "/" + "x" * (MAX_FOLDER - 1)],
                ["relative/dir", "/" + "x" * MAX_FOLDER],
            ),
            ("backup.withoutFiles", [True, False], ["yes"]),
        ):
            for value in good:
                await identity.set_setting(key, value)
                assert await identity.get_setting(key) == value
            for value in bad:
                with pytest.raises(InvalidArgs, match=key.replace(".", r"\.")):
                    await identity.set_setting(key, value)


async def test_the_backup_passphrase_seals_scheduled_backups_and_no_child_of_the_server_inherits_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hangar.backup.crypt import is_sealed
    from hangar.cli.root import settings_from

    secret = "a passphrase no child may see"
    monkeypatch.setenv("HANGAR_BACKUP_PASSPHRASE", secret)
    settings = settings_from(data_dir=tmp_path / "data")  # as `hangar serve` reads its settings
    started = subprocess.run(["env"], capture_output=True, text=True, check=True)
    assert secret not in started.stdout
    assert settings.backup_passphrase is not None and secret not in repr(settings)
    folder = tmp_path / "backups"
    folder.mkdir()
    async with running_server(settings.data_dir, parts=FAST, backup_passphrase=settings.backup_passphrase) as srv:
        # A process the server starts (git for a repository, mmdebstrap for an image) inherits its environment.
        child = await asyncio.create_subprocess_exec("env", stdout=asyncio.subprocess.PIPE)
        out, _ = await child.communicate()
        assert secret.encode() not in out
        identity = srv.ctx.service(IdentityService)
        await identity.set_setting("backup.folder", str(folder))
        await identity.set_setting("backup.intervalHours", 24)
        await wait_for(lambda: len(backups_in(folder)) == 1)
    taken = backups_in(folder)[0][1]
    with taken.open("rb") as f:
        assert is_sealed(f.read(8))  # the server still has the passphrase: its backups are sealed with it
    env = {"HANGAR_BACKUP_PASSPHRASE": secret, "PATH": "/usr/bin:/bin"}
    restored = subprocess.run(
        [HANGAR, "admin", "restore", str(taken), "--data-dir", str(tmp_path / "r"), *restore_flags(tmp_path / "r")],
        env=env,
        capture_output=True,
    )
    assert restored.returncode == 0, restored.stderr
