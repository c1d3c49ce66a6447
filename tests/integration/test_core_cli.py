"""The command line as an operator uses it: owner-token, then serve, then a request with that credential."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

HANGAR = str(Path(sys.executable).parent / "hangar")


@pytest.mark.sqlite_only("checks server.db's file mode")
def test_owner_token_and_serve(tmp_path: Path) -> None:
    env = {**os.environ, "HANGAR_DATA_DIR": str(tmp_path / "data")}
    token = subprocess.run([HANGAR, "admin", "owner-token"], env=env, check=True, capture_output=True, text=True)
    token2 = subprocess.run([HANGAR, "admin", "owner-token"], env=env, check=True, capture_output=True, text=True)
    assert token.stdout.strip() != token2.stdout.strip()
    proc = subprocess.Popen(
        [HANGAR, "serve", "--port", "0", "--site-port", "0"], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        urls: dict[str, str] = {}
        for line in proc.stdout:
            name, _, url = line.strip().partition(": ")
            if name in ("server", "website"):
                urls[name] = url
            if len(urls) == 2:
                break
        for url in urls.values():
            r = httpx.get(f"{url}/healthz")
            assert r.status_code == 200 and r.json()["status"] == "ok"
        me = httpx.get(f"{urls['server']}/auth/me", headers={"Authorization": f"Bearer {token.stdout.strip()}"})
        assert me.status_code == 200 and me.json()["isServerOwner"] is True
    finally:
        proc.terminate()
        proc.wait(20)
    assert proc.returncode == 0
    db = tmp_path / "data" / "server.db"
    assert db.exists() and oct(db.stat().st_mode & 0o777) == "0o600"
    assert json.loads(json.dumps({"ok": True}))


def test_bad_flag_is_named(tmp_path: Path) -> None:
    r = subprocess.run(
        [HANGAR, "serve", "--web-client-url", "nope", "--data-dir", str(tmp_path)], capture_output=True, text=True
    )
    assert r.returncode == 2 and "--web-client-url" in r.stderr


def test_the_website_builds_links_from_its_configured_origin_never_the_host_header(tmp_path: Path) -> None:
    env = {**os.environ, "HANGAR_DATA_DIR": str(tmp_path / "data")}
    proc = subprocess.Popen(
        [HANGAR, "serve", "--port", "0", "--site-port", "0", "--site-url", "https://docs.hangar.example"],
        env=env, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        site = next(line.strip().partition(": ")[2] for line in proc.stdout if line.startswith("website"))
        sitemap = httpx.get(f"{site}/llms.txt", headers={"Host": "evil.example"})
        assert sitemap.status_code == 200
        assert "https://docs.hangar.example/" in sitemap.text and "evil.example" not in sitemap.text
    finally:
        proc.terminate()
        proc.wait(20)


def test_the_server_says_what_it_is_at_its_root_and_what_the_host_lacks(tmp_path: Path) -> None:
    # Without a built web client, the root is the landing page that says how to build it.
    env = {
        **os.environ,
        "HANGAR_DATA_DIR": str(tmp_path / "data"),
        "HANGAR_WEB_DIST": str(tmp_path / "not-built"),
        "PATH": "/nonexistent",
    }
    proc = subprocess.Popen(
        [HANGAR, "serve", "--port", "0", "--no-site"], env=env, stdout=subprocess.PIPE, text=True
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        lines = []
        for line in proc.stdout:
            lines.append(line.strip())
            if line.startswith("server"):
                break
        server = lines[-1].partition(": ")[2]
        unavailable = [line for line in lines if line.startswith("unavailable:")]
        assert len(unavailable) == 1 and "bubblewrap" in unavailable[0] and "sudo apt-get install" in unavailable[0]
        page = httpx.get(f"{server}/")
        assert page.status_code == 200 and "Hangar server" in page.text and "owner-token" in page.text
        assert "npm run build" in page.text
        assert "default-src 'none'" in page.headers["content-security-policy"]
    finally:
        proc.terminate()
        proc.wait(20)


async def test_an_operator_sets_a_limit_and_the_running_server_reads_it_at_once(tmp_path: Path) -> None:
    from hangar.pipelines.engine import PipelineEngine
    from tests.support.server import running_server

    data = tmp_path / "data"
    async with running_server(data) as srv:
        engine = srv.ctx.service(PipelineEngine)
        assert await engine.slots_limit() == 8  # the default
        setting = [HANGAR, "admin", "setting", "pipelines.maxRunningRuns"]
        done = subprocess.run([*setting, "3", "--data-dir", str(data)], capture_output=True, text=True, check=False)
        assert done.returncode == 0 and done.stdout.strip() == "3", done
        assert await engine.slots_limit() == 3
        refused = subprocess.run([*setting, "0", "--data-dir", str(data)], capture_output=True, text=True, check=False)
        assert refused.returncode == 2 and "pipelines.maxRunningRuns must be a whole number" in refused.stderr
        assert await engine.slots_limit() == 3  # nothing stored
        listed = subprocess.run([HANGAR, "admin", "setting", "--data-dir", str(data)], capture_output=True, text=True)
        assert "pipelines.maxRunningRuns = 3" in listed.stdout and "confine.runDiskMb = (default)" in listed.stdout
