"""Secrets shared by servers on one PostgreSQL database, each on a data directory of its own (as on separate
hosts): an agent's API key, the OIDC client secret and a chat connection's credentials saved through A are used
by B at once; a server with another key, or none, refuses to start in one line naming what to copy where; a
sealed value moved to another name does not open; the secrets reach no log, reply or audit row; migrating an
install from SQLite seals its secrets; the key file is in no backup.

Real processes: two ``hangar serve`` on the suite's throwaway cluster, the Slack emulator, a fake model server.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import psycopg
import pytest
from sqlalchemy.engine import make_url

from hangar.core.dbfailures import shown
from hangar.core.postgresql import SERVER_SCHEMA
from hangar.core.secretkey import KEY_FILE, create_key
from tests.integration.test_chat_two_servers import replies_in
from tests.integration.test_postgresql_url import hangar, serve
from tests.peers.slack_emulator import APP_TOKEN, BOT_TOKEN, running_slack
from tests.support.chat import ALICE, GENERAL, PROVIDER, until
from tests.support.processes import cli, hangar_serve, owner_token
from tests.support.rpc import RpcClient, RpcError
from tests.support.server import running_server
from tests.unit.agents.fake_openai import running_fake_openai, text

pytestmark = pytest.mark.slow

API_KEY = "sk-sealed-" + "k" * 24
CLIENT_SECRET = "oidc-sealed-" + "s" * 24


def conninfo(pg_url: str) -> str:
    return make_url(pg_url).set(drivername="postgresql").render_as_string(hide_password=False)


def sealed_rows(pg_url: str) -> dict[tuple[str, str], bytes]:
    with psycopg.connect(conninfo(pg_url)) as conn:
        rows = conn.execute(f"SELECT scope, name, sealed FROM {SERVER_SCHEMA}.sealed_secrets").fetchall()
    return {(scope, name): bytes(sealed) for scope, name, sealed in rows}


def audit_and_events_text(pg_url: str) -> str:
    with psycopg.connect(conninfo(pg_url)) as conn:
        schemas = [r[0] for r in conn.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'ws\\_%'")]
        found = []
        for schema in schemas:
            for table in ("audit_log", "domain_events"):
                found += [str(r) for r in conn.execute(f'SELECT * FROM "{schema}".{table}')]
    return "\n".join(found)


async def test_secrets_saved_through_one_server_are_used_by_another_on_its_own_data_directory(
    tmp_path: Path, pg_url: str
) -> None:
    data_a, data_b = tmp_path / "a", tmp_path / "b"
    async with running_slack() as slack, running_fake_openai() as model:
        env = {"HANGAR_CHATPROVIDER_API_URL": slack.api_url, "HANGAR_CHAT_CLAIM_TTL_SECONDS": "3"}
        with hangar_serve(data_a, "--database-url", pg_url, "--no-prepare-pack", env=env, log=tmp_path / "a.log") as a:
            key = (data_a / KEY_FILE).read_bytes()  # made by A's start, the first process that needed it
            data_b.mkdir(mode=0o700)
            (data_b / KEY_FILE).write_bytes(key)  # copied once to the other host, like a TLS key
            (data_b / KEY_FILE).chmod(0o600)
            token = owner_token(data_a)
            with hangar_serve(
                data_b, "--database-url", pg_url, "--no-prepare-pack", env=env, log=tmp_path / "b.log"
            ) as b:
                async with RpcClient(a.ws_url, token) as ca, RpcClient(b.ws_url, token) as cb:
                    ws = (await ca.call("workspaces.create", name="acme"))["id"]
                    adapter = {"type": "openai", "baseUrl": model.url, "model": "m", "apiKey": API_KEY}
                    agent = await ca.call("agents.create", workspace_id=ws, name="Ada", adapter=adapter)
                    seen = await cb.call("agents.get", workspace_id=ws, agentId=agent["id"])
                    assert seen["adapter"]["hasApiKey"] is True and API_KEY not in json.dumps(seen)

                    config = {"issuer": "https://idp.example", "clientId": "hangar", "clientSecret": CLIENT_SECRET}
                    saved = await ca.call("sso.saveConfig", kind="oidc", config=config)
                    assert CLIENT_SECRET not in json.dumps(saved)
                    assert (await cb.call("sso.getConfig", kind="oidc"))["clientSecretPresent"] is True

                    creds = {"botToken": BOT_TOKEN, "appToken": APP_TOKEN}
                    await ca.call("chat.connect", workspace_id=ws, provider=PROVIDER, credentials=creds)
                    await slack.wait_hellos(1, timeout=60)
                    code = (await ca.call("chat.beginUserLink", workspace_id=ws, provider=PROVIDER))["code"]
                    answer = await slack.acked(await slack.slash("/hangar", f"link {code.lower()}", ALICE, GENERAL))
                    assert answer is not None and "Linked" in answer["text"], answer
                    holder = (await cb.call("chat.status", workspace_id=ws, provider=PROVIDER))["owner"]
                    await ca.call("workspaces.export", workspace_id=ws)  # A makes the export key, sealed
                hellos = slack.hellos
                a.kill9()
                if holder["pid"] == a.proc.pid:  # B takes the connection over with the credentials A saved
                    await slack.wait_hellos(hellos + 1, timeout=60)  # (the emulator accepts only the real tokens)
                model.script("m", text("Answered by B."))
                sent = await slack.mention(GENERAL, ALICE, "are you there?")
                await until(lambda: replies_in(slack, sent.ts), timeout=90)
                assert "Answered by B." in replies_in(slack, sent.ts)[0].text
                assert model.headers[-1]["authorization"] == f"Bearer {API_KEY}"
                b_log = b.log_text()
        for text_seen in (a.log_text(), b_log, audit_and_events_text(pg_url)):
            for secret in (API_KEY, CLIENT_SECRET, BOT_TOKEN, APP_TOKEN):
                assert secret not in text_seen
        rows = sealed_rows(pg_url)
        assert ("", "sso.oidc.clientSecret") in rows and (ws, "chat_credentials/" + PROVIDER) in rows
        assert all(s not in b"".join(rows.values()) for s in (API_KEY.encode(), BOT_TOKEN.encode()))
        assert not (data_a / "secrets.json").exists() and not (data_b / "secrets.json").exists()
        assert not (data_a / ws / "chat_credentials").exists()

        # A server with another key refuses to start, naming what to copy where; one with none too.
        (data_b / KEY_FILE).unlink()
        create_key(data_b / KEY_FILE)
        done = serve(data_b)
        assert done.returncode == 1, done.stderr
        assert done.stderr.strip() == (
            f"the server cannot start: {data_b / KEY_FILE} is not the key the secrets in {shown(make_url(pg_url))} "
            "are sealed with: "
            f"copy the file secret-key of a host already serving this database to {data_b / KEY_FILE} (or name it "
            "with HANGAR_SECRET_KEY_FILE); nothing stored was changed"
        )
        (data_b / KEY_FILE).unlink()
        done = serve(data_b)
        assert done.returncode == 1 and f"and {data_b / KEY_FILE} is missing: copy the file secret-key" in done.stderr
        assert not (data_b / KEY_FILE).exists()
        assert sealed_rows(pg_url) == rows  # nothing re-sealed or overwritten

        # The key given by HANGAR_SECRET_KEY_FILE instead: the server starts.
        elsewhere = tmp_path / "keys" / "hangar.key"
        elsewhere.parent.mkdir()
        shutil.copy(data_a / KEY_FILE, elsewhere)
        with hangar_serve(data_b, "--no-prepare-pack", env={"HANGAR_SECRET_KEY_FILE": str(elsewhere)}) as b2:
            async with RpcClient(b2.ws_url, token) as cb:
                assert (await cb.call("sso.getConfig", kind="oidc"))["clientSecretPresent"] is True
                assert (await cb.call("workspaces.export", workspace_id=ws))["url"]  # the key A made, used by B
                # A sealed value moved to another name does not open: the agent's key put in the export key's row.
                with psycopg.connect(conninfo(pg_url)) as conn:
                    conn.execute(
                        f"UPDATE {SERVER_SCHEMA}.sealed_secrets SET sealed = %s WHERE scope = '' AND name = %s",
                        (rows[("", f"agents.{ws}.{agent['id']}.apiKey")], "workspaces.exportKey"),
                    )
                with pytest.raises(RpcError) as refused:
                    await cb.call("workspaces.export", workspace_id=ws)
                assert refused.value.code == "internal", refused.value
                assert f"the sealed secret workspaces.exportKey in {shown(make_url(pg_url))} does not open" in str(
                    refused.value
                )
                assert API_KEY not in str(refused.value)
            assert API_KEY not in b2.log_text() and CLIENT_SECRET not in b2.log_text()


async def test_migrating_from_sqlite_seals_the_secrets_and_a_backup_carries_no_key(tmp_path: Path, pg_url: str) -> None:
    data = tmp_path / "data"
    creds = {"botToken": BOT_TOKEN, "appToken": APP_TOKEN}
    async with running_server(data) as srv:  # a SQLite install, its secrets in files
        ws = await srv.new_workspace("acme")
        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            adapter = {"type": "openai", "baseUrl": "http://127.0.0.1:9", "model": "m", "apiKey": API_KEY}
            agent = (await c.call("agents.create", workspace_id=ws, name="Ada", adapter=adapter))["id"]
            config = {"issuer": "https://idp.example", "clientId": "hangar", "clientSecret": CLIENT_SECRET}
            await c.call("sso.saveConfig", kind="oidc", config=config)
        srv.ctx.secret_folder("chat_credentials").write(ws, PROVIDER, creds)
    done = hangar("admin", "migrate-to-postgresql", "--from", str(data), "--database-url", pg_url)
    assert done.returncode == 0, done.stderr
    assert "sealed 3 secrets" in done.stdout and f"under the key {data / KEY_FILE}" in done.stdout, done.stdout
    for secret in (API_KEY, CLIENT_SECRET, BOT_TOKEN):
        assert secret not in done.stdout + done.stderr
    rows = sealed_rows(pg_url)
    assert set(rows) == {
        ("", f"agents.{ws}.{agent}.apiKey"),
        ("", "sso.oidc.clientSecret"),
        (ws, f"chat_credentials/{PROVIDER}"),
        ("*", "key-check"),
    }
    assert all(s not in b"".join(rows.values()) for s in (API_KEY.encode(), BOT_TOKEN.encode()))
    # The key rotated: every value re-sealed, the new key written; the install reads them all under it.
    old_key = (data / KEY_FILE).read_bytes()
    done = hangar("admin", "secret-key", "rotate", "--data-dir", str(data))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"re-sealed 4 values under a new key, written to {data / KEY_FILE}; copy that file")
    assert (data / KEY_FILE).read_bytes() != old_key
    assert all(sealed_rows(pg_url)[k] != v for k, v in rows.items())
    # The install, now on PostgreSQL, reads them from the database.
    async with running_server(data) as srv:
        assert srv.ctx.sealed is not None
        assert srv.ctx.secrets.get(f"agents.{ws}.{agent}.apiKey") == API_KEY
        assert srv.ctx.secrets.get("sso.oidc.clientSecret") == CLIENT_SECRET
        assert srv.ctx.secret_folder("chat_credentials").read(ws, PROVIDER) == creds

    backup = tmp_path / "backup.tar"
    done = hangar("admin", "backup", "--data-dir", str(data), "--to", str(backup))
    assert done.returncode == 0, done.stderr
    listing = subprocess.run(["tar", "-tf", str(backup)], capture_output=True, text=True, check=True).stdout
    names = listing.split()
    assert "postgresql.dump" in names and "secrets.json" in names, names  # (left by SQLite: the README says so)
    assert not [n for n in names if n.rsplit("/", 1)[-1].startswith(KEY_FILE)], names


@pytest.mark.sqlite_only("an install on SQLite has no sealed secret")
def test_rotating_the_key_of_an_install_on_sqlite_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "data"
    cli(data, "admin", "owner-token")
    done = hangar("admin", "secret-key", "rotate", "--data-dir", str(data))
    assert done.returncode == 1
    assert done.stderr.strip() == (
        "this install keeps its records in SQLite and its secrets in the data directory's secrets.json: there is no "
        "sealed secret to rotate (the key seals the secrets of an install on PostgreSQL)"
    )
    assert not (data / KEY_FILE).exists()
