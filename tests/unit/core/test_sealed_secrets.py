"""The secrets an install keeps: files in the data directory on SQLite, sealed rows in the database on PostgreSQL
(``hangar.core.sealed``), behind one interface; the key file's refusals; a moved row; rotation; a workspace's
secrets gone with it."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
import sqlalchemy as sa

from hangar.core.postgresql import SERVER_SCHEMA
from hangar.core.sealed import KEY_CHECK, SealedSecrets
from hangar.core.sealed_tables import qualified
from hangar.core.secretfiles import FileSecretFolder
from hangar.core.secretkey import KEY_FILE, SecretKey, create_key, read_key
from hangar.core.secrets import SecretsFile
from hangar.errors import Internal, Unavailable
from tests.support.dialects import DIALECTS, app_on, database_url


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_one_interface_on_both_engines(dialect: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    async with app_on(tmp_path, database_url(dialect, request)) as app:
        on_pg = app.sealed is not None
        assert isinstance(app.secrets, SecretsFile) is (not on_pg)
        assert isinstance(app.secret_folder("chat_credentials"), FileSecretFolder) is (not on_pg)
        s = app.secrets
        assert s.get("agents.w.a.apiKey") is None and not s.has("agents.w.a.apiKey")
        s.set("agents.w.a.apiKey", "sk-one")
        s.set("agents.w.a.env.X", "x")
        s.set("agents.w.b.apiKey", "sk-two")
        assert s.get("agents.w.a.apiKey") == "sk-one" and s.has("agents.w.a.apiKey")
        s.set("agents.w.a.apiKey", "sk-one-again")  # replaced
        assert s.get("agents.w.a.apiKey") == "sk-one-again"
        s.delete_prefix("agents.w.a.")
        assert s.get("agents.w.a.apiKey") is None and s.get("agents.w.a.env.X") is None
        assert s.get("agents.w.b.apiKey") == "sk-two"
        s.delete("agents.w.b.apiKey")
        assert not s.has("agents.w.b.apiKey")
        # Made once: a second maker (another process, at the same instant) gets the first one's value.
        assert s.set_if_absent("servers.relayKey", "first") == "first"
        assert s.set_if_absent("servers.relayKey", "second") == "first" and s.get("servers.relayKey") == "first"

        for ws in ("ws-1", "ws-2"):  # a workspace's folder comes with it (SQLite's files go in it)
            (app.datadir.root / ws).mkdir()
        folder = app.secret_folder("chat_credentials")
        assert folder.read("ws-1", "slack") is None and not folder.exists("ws-1", "slack")
        folder.write("ws-1", "slack", {"botToken": "xoxb-1"})
        assert folder.read("ws-1", "slack") == {"botToken": "xoxb-1"} and folder.exists("ws-1", "slack")
        assert folder.read("ws-2", "slack") is None  # another workspace's are its own
        folder.remove("ws-1", "slack")
        assert folder.read("ws-1", "slack") is None

        key_file = app.datadir.root / KEY_FILE
        if on_pg:
            # Nothing readable in the database; the key made on first use, 0600.
            assert stat.S_IMODE(os.stat(key_file).st_mode) == 0o600
            s.set("sso.oidc.clientSecret", "very-secret-value")
            with app.dbs.sync_engine().connect() as conn:
                dumped = b"".join(bytes(r[0]) for r in conn.execute(sa.select(qualified.c.sealed)))
            assert b"very-secret-value" not in dumped
        else:
            assert not key_file.exists()  # SQLite installs keep files, as before


async def test_a_process_without_the_key_or_with_another_refuses_and_changes_nothing(
    tmp_path: Path, pg_url: str
) -> None:
    async with app_on(tmp_path, pg_url) as app:
        assert app.sealed is not None
        app.secrets.set("agents.w.a.apiKey", "sk-one")
        engine, key_path = app.dbs.sync_engine(), app.sealed.key_path
        with engine.connect() as conn:
            before = conn.execute(sa.select(qualified).order_by(qualified.c.scope, qualified.c.name)).all()

        other_host = tmp_path / "other" / KEY_FILE
        missing = SealedSecrets(engine, other_host, "the database")
        with pytest.raises(Unavailable) as refused:
            missing.put("", "agents.w.a.apiKey", b"overwritten")
        assert refused.value.message == (
            f"the secrets in the database are sealed with this installation's key and {other_host} is missing: "
            f"copy the file secret-key of a host already serving this database to {other_host} (or name it with "
            "HANGAR_SECRET_KEY_FILE)"
        )
        assert not other_host.exists()  # no key made beside stored secrets

        create_key(other_host)  # a key of its own: not the installation's
        wrong = SealedSecrets(engine, other_host, "the database")
        for attempt in (
            lambda: wrong.get("", "agents.w.a.apiKey"),
            lambda: wrong.put("", "agents.w.a.apiKey", b"x"),
            wrong.rotate,
        ):
            with pytest.raises(Unavailable) as refused:
                attempt()
            assert refused.value.message.startswith(f"{other_host} is not the key the secrets in the database are ")
            assert refused.value.message.endswith("; nothing stored was changed")
        other_host.write_text("not a key\n")
        with pytest.raises(Unavailable, match="is not a Hangar secret key"):
            SealedSecrets(engine, other_host, "the database").get("", "agents.w.a.apiKey")

        with engine.connect() as conn:
            assert conn.execute(sa.select(qualified).order_by(qualified.c.scope, qualified.c.name)).all() == before
        assert app.secrets.get("agents.w.a.apiKey") == "sk-one"  # the right key still opens everything
        assert read_key(key_path) is not None


async def test_a_sealed_value_moved_to_another_name_or_workspace_does_not_open(tmp_path: Path, pg_url: str) -> None:
    async with app_on(tmp_path, pg_url) as app:
        app.secrets.set("agents.w.a.apiKey", "sk-a")
        app.secrets.set("agents.w.b.apiKey", "sk-b")
        folder = app.secret_folder("chat_credentials")
        folder.write("ws-1", "slack", {"botToken": "xoxb-1"})
        folder.write("ws-2", "slack", {"botToken": "xoxb-2"})
        engine = app.dbs.sync_engine()

        def move(src: tuple[str, str], dst: tuple[str, str]) -> None:
            with engine.begin() as conn:
                sealed = conn.execute(
                    sa.select(qualified.c.sealed).where(qualified.c.scope == src[0], qualified.c.name == src[1])
                ).scalar_one()
                conn.execute(
                    sa.update(qualified)
                    .where(qualified.c.scope == dst[0], qualified.c.name == dst[1])
                    .values(sealed=sealed)
                )

        move(("", "agents.w.a.apiKey"), ("", "agents.w.b.apiKey"))
        with pytest.raises(Internal) as refused:
            app.secrets.get("agents.w.b.apiKey")
        assert refused.value.message.startswith("the sealed secret agents.w.b.apiKey in postgresql://")
        assert refused.value.message.endswith(" does not open under its name")
        assert "sk-a" not in refused.value.message
        move(("ws-1", "chat_credentials/slack"), ("ws-2", "chat_credentials/slack"))
        with pytest.raises(Internal, match="of workspace ws-2 in"):
            folder.read("ws-2", "slack")
        assert app.secrets.get("agents.w.a.apiKey") == "sk-a" and folder.read("ws-1", "slack") == {"botToken": "xoxb-1"}


async def test_rotation_reseals_every_value_and_replaces_the_key_file(tmp_path: Path, pg_url: str) -> None:
    async with app_on(tmp_path, pg_url) as app:
        assert app.sealed is not None
        app.secrets.set("lanes.key", "lane-key")
        app.secret_folder("forge_credentials").write("ws-1", "github", {"token": "ghp"})
        engine, key_path = app.dbs.sync_engine(), app.sealed.key_path
        old = read_key(key_path)
        with engine.connect() as conn:
            before = {n: v for n, v in conn.execute(sa.select(qualified.c.name, qualified.c.sealed))}
        assert app.sealed.rotate() == 3  # the two and the key's check row
        new = read_key(key_path)
        assert new is not None and new != old and stat.S_IMODE(os.stat(key_path).st_mode) == 0o600
        assert not key_path.with_name(KEY_FILE + ".new").exists()
        with engine.connect() as conn:
            after = {n: v for n, v in conn.execute(sa.select(qualified.c.name, qualified.c.sealed))}
        assert all(after[n] != before[n] for n in before)
        assert app.secrets.get("lanes.key") == "lane-key"
        assert app.secret_folder("forge_credentials").read("ws-1", "github") == {"token": "ghp"}
        # A process still holding the old key (another host not yet given the new file) refuses.
        stale = tmp_path / "stale" / KEY_FILE
        stale.parent.mkdir()
        assert old is not None
        stale.write_bytes(old.text())
        with pytest.raises(Unavailable, match="is not the key"):
            SealedSecrets(engine, stale, "the database").get("", "lanes.key")


async def test_a_rotation_that_fails_leaves_the_values_and_the_key_as_they_were(tmp_path: Path, pg_url: str) -> None:
    async with app_on(tmp_path, pg_url) as app:
        assert app.sealed is not None
        app.secrets.set("a", "1")
        app.secrets.set("b", "2")
        engine, key_path = app.dbs.sync_engine(), app.sealed.key_path
        with engine.begin() as conn:  # b's value replaced by a's: the rotation cannot open b
            a = conn.execute(sa.select(qualified.c.sealed).where(qualified.c.name == "a")).scalar_one()
            conn.execute(sa.update(qualified).where(qualified.c.name == "b").values(sealed=a))
            before = conn.execute(sa.select(qualified).order_by(qualified.c.name)).all()
        key_before = key_path.read_bytes()
        with pytest.raises(Internal, match="does not open under its name: nothing was re-sealed"):
            app.sealed.rotate()
        with engine.connect() as conn:
            assert conn.execute(sa.select(qualified).order_by(qualified.c.name)).all() == before
        assert key_path.read_bytes() == key_before and not key_path.with_name(KEY_FILE + ".new").exists()


async def test_a_dropped_workspace_takes_its_sealed_secrets_with_it(tmp_path: Path, pg_url: str) -> None:
    async with app_on(tmp_path, pg_url) as app:
        folder = app.secret_folder("chat_credentials")
        folder.write("ws-1", "slack", {"botToken": "1"})
        folder.write("ws-2", "slack", {"botToken": "2"})
        app.secrets.set("agents.ws-1.a.apiKey", "server scope stays")
        await app.dbs.drop_workspace("ws-1")
        assert folder.read("ws-1", "slack") is None and folder.read("ws-2", "slack") == {"botToken": "2"}
        with app.dbs.sync_engine().connect() as conn:
            scopes = set(conn.execute(sa.select(qualified.c.scope)).scalars())
        assert scopes == {"", "ws-2", KEY_CHECK[0]}


def test_the_key_file_is_made_once_and_never_replaced(tmp_path: Path) -> None:
    path = tmp_path / KEY_FILE
    first = create_key(path)
    assert create_key(path) == first  # a second maker finds the first one's file
    assert read_key(path) == first and stat.S_IMODE(os.stat(path).st_mode) == 0o600
    os.chmod(path, 0o644)
    assert read_key(path) == first and stat.S_IMODE(os.stat(path).st_mode) == 0o600  # narrowed again
    key = SecretKey.fresh()
    sealed = key.seal("a\nb", b"value")
    assert key.open("a\nb", sealed) == b"value"
    assert key.open("a\nc", sealed) is None and SecretKey.fresh().open("a\nb", sealed) is None
    assert key.open("a\nb", sealed[:-1] + bytes([sealed[-1] ^ 1])) is None
    assert qualified.schema == SERVER_SCHEMA


async def test_a_command_on_the_database_alone_makes_no_key(tmp_path: Path, pg_url: str) -> None:
    async with app_on(tmp_path, pg_url) as app:
        engine, scratch = app.dbs.sync_engine(), tmp_path / "scratch" / KEY_FILE
        alone = SealedSecrets(engine, scratch, "the database", make_key=False)
        with pytest.raises(Unavailable) as refused:
            alone.put("", "a", b"1")
        assert refused.value.message == (
            "this command acts on the database alone and has no secret key: name a copy of the installation's "
            "secret-key with HANGAR_SECRET_KEY_FILE, or give --data-dir"
        )
        assert not scratch.exists()
        with engine.connect() as conn:
            assert conn.execute(sa.select(qualified)).all() == []  # no check row either
        # Given a copy of the key (as HANGAR_SECRET_KEY_FILE names it), the same command uses it.
        app.secrets.set("a", "1")  # the server's process makes the key
        assert app.sealed is not None
        scratch.parent.mkdir()
        scratch.write_bytes(app.sealed.key_path.read_bytes())
        assert SealedSecrets(engine, scratch, "the database", make_key=False).get("", "a") == b"1"


async def test_a_process_that_checked_its_key_before_a_rotation_elsewhere_neither_reads_nor_writes(
    tmp_path: Path, pg_url: str
) -> None:
    async with app_on(tmp_path, pg_url) as app:
        assert app.sealed is not None
        app.secrets.set("a", "1")
        engine = app.dbs.sync_engine()
        other_host = tmp_path / "other" / KEY_FILE  # a copy of the key, as another host holds it
        other_host.parent.mkdir()
        other_host.write_bytes(app.sealed.key_path.read_bytes())
        stale = SealedSecrets(engine, other_host, "the database")
        assert stale.get("", "a") == b"1"  # its key checked, and kept while its file is unchanged
        reader = SealedSecrets(engine, other_host, "the database")
        assert reader.get("", "a") == b"1"
        app.sealed.rotate()  # on this host; the other host's file is not copied yet
        with pytest.raises(Unavailable, match="is not the key"):  # checked again in the write's transaction
            stale.put("", "b", b"written under the old key")  # would be unreadable to every other host
        with pytest.raises(Unavailable, match="is not the key"):
            stale.get("", "a")  # refused as a stale key, not as a moved value
        with pytest.raises(Unavailable, match="is not the key"):
            reader.get("", "a")  # a value its checked key no longer opens: the check row read again says why
        assert not app.secrets.has("b") and app.secrets.get("a") == "1"
        other_host.write_bytes(app.sealed.key_path.read_bytes())  # the new file copied over
        assert stale.get("", "a") == b"1"


async def test_secrets_without_their_check_row_are_refused_to_any_key(tmp_path: Path, pg_url: str) -> None:
    async with app_on(tmp_path, pg_url) as app:
        app.secrets.set("a", "1")
        engine = app.dbs.sync_engine()
        with engine.begin() as conn:
            conn.execute(sa.delete(qualified).where(qualified.c.scope == KEY_CHECK[0]))
        other = tmp_path / "other" / KEY_FILE
        create_key(other)
        with pytest.raises(Unavailable, match=r"have lost the row their key is checked against \(key-check\)"):
            SealedSecrets(engine, other, "the database").put("", "b", b"2")
        with engine.connect() as conn:
            assert [r.name for r in conn.execute(sa.select(qualified))] == ["a"]  # no check row sealed by another key
