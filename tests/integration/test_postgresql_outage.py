"""The database going away under a running server and coming back: a real ``hangar serve`` on a PostgreSQL
cluster of this module's own, which the test stops (fast shutdown: every connection cut) and starts again.

While the database is gone the server lives on: a request answers ``unavailable`` naming the database (never
its password), ``/readyz`` says what is not ready; once it is back everything resumes by itself, and an event
committed by another process while the server's listener was away reaches a watcher (LISTEN re-issued, missed
events read from the table).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
from sqlalchemy.engine import make_url

from tests.support.postgres import PostgresCluster
from tests.support.processes import ServeProcess, cli, hangar_serve
from tests.support.rpc import RpcClient, RpcError

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def own_cluster() -> Iterator[PostgresCluster]:
    """A cluster this module may stop: the session's is shared with every other test."""
    cluster = PostgresCluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def secret_url(own_cluster: PostgresCluster) -> Iterator[tuple[str, str]]:
    """A fresh database on ``own_cluster`` reached by a role with a password: its URL and the password."""
    with own_cluster.database() as name:
        user, password = own_cluster.login_role(name)
        url = make_url(own_cluster.url(name)).set(username=user, password=password)
        yield url.render_as_string(hide_password=False), password


def readyz(server: ServeProcess) -> httpx.Response:
    return httpx.get(f"{server.url}/readyz", timeout=30)


async def eventually_ready(server: ServeProcess, timeout: float = 90) -> None:
    async with asyncio.timeout(timeout):
        while readyz(server).status_code != 200:
            await asyncio.sleep(0.2)


async def test_a_server_whose_database_goes_away_answers_unavailable_and_resumes_when_it_is_back(
    tmp_path: Path, own_cluster: PostgresCluster, secret_url: tuple[str, str]
) -> None:
    url, password = secret_url
    data = tmp_path / "data"
    cli(data, "admin", "trusted-host-exec", "off", "--database-url", url)
    token = cli(data, "admin", "owner-token", "--database-url", url).stdout.strip()
    with hangar_serve(data, log=tmp_path / "serve.log", env={"HANGAR_DATABASE_URL": url}) as server:
        async with RpcClient(server.ws_url, token) as c:
            ws = (await c.call("workspaces.create", name="outage"))["id"]
            assert readyz(server).status_code == 200
            own_cluster.halt()
            try:
                with pytest.raises(RpcError) as refused:
                    await c.call("workspaces.list")
                assert refused.value.code == "unavailable", refused.value
                assert "PostgreSQL database" in refused.value.message, refused.value.message
                assert password not in refused.value.message and quote(password) not in refused.value.message
                async with asyncio.timeout(30):  # an answer is kept two seconds
                    while (not_ready := readyz(server)).status_code == 200:
                        await asyncio.sleep(0.2)
                assert not_ready.status_code == 503, not_ready.text
                assert "database" in not_ready.json()["status"], not_ready.text
                assert password not in not_ready.text
                assert server.proc.poll() is None  # alive: nothing crashed
                await asyncio.sleep(12)  # every loop of the server tries (and fails) to reach it meanwhile
            finally:
                own_cluster.resume()
            await eventually_ready(server)
            async with asyncio.timeout(60):
                while True:  # the pool's dead connections are replaced, not handed out
                    try:
                        listed = await c.call("workspaces.list")
                        break
                    except RpcError as exc:
                        assert exc.code == "unavailable", exc
                        await asyncio.sleep(0.2)
            assert ws in [w["id"] for w in listed]
            async with asyncio.timeout(60):  # the listener is back (LISTEN again, then a catch-up from the table)
                while "are back" not in server.log_text():
                    await asyncio.sleep(0.2)
    log = server.log_text()
    assert password not in log and quote(password) not in log
    assert "Traceback" not in log, log[-3000:]
    assert "access monitor resumed" in log
