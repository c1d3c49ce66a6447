"""``rigs.packs`` and ``rigs.buildPack`` on the real server and the enclosure backend: a build started by the
server owner runs in the background, shows its step while under way, ends ready (or failed, with the reason),
and a second request joins the build under way; a build in another process shows too and is waited for, and a
stopped build leaves nothing running. ``mmdebstrap`` is a stand-in (tests/support/fake_mmdebstrap.py):
the real build takes minutes and the network."""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hangar.core.context import AppContext
from hangar.rigs.backends.base import RigHandle, RigSpec
from hangar.rigs.backends.enclosure import EnclosureBackend
from hangar.rigs.images.builder import MARKER, build_under_way, ensure_pack
from hangar.rigs.images.mirror import mirror_hosts
from hangar.rigs.lifecycle.manager import RigManager
from hangar.rigs.part import make_rigs_part
from hangar.server.parts import all_parts
from hangar.workspace.part import WORKSPACE_PART
from tests.support.fake_mmdebstrap import install_fake_mmdebstrap
from tests.support.processes import HANGAR
from tests.support.rpc import RpcClient, RpcError
from tests.support.server import running_server


class RecordingBackend(EnclosureBackend):
    """The enclosure backend, remembering the specs it was asked to start."""

    specs: list[RigSpec]

    async def start(self, spec: RigSpec, progress: Callable[[str], None]) -> RigHandle:
        self.specs.append(spec)
        return await super().start(spec, progress)


def parts_with_packs_in(packs: Path, specs: list[RigSpec] | None = None) -> list[Any]:
    def backend(app: AppContext) -> EnclosureBackend:
        made = RecordingBackend(app.datadir.sub("rigs"), packs_root=packs)
        made.specs = specs if specs is not None else []
        return made

    rigs = make_rigs_part(backend)
    parts = [p for p in all_parts() if p.name != "rigs"]
    if not any(p.name == WORKSPACE_PART.name for p in parts):
        parts.append(WORKSPACE_PART)
    return [*parts, rigs]


TERMINAL = "terminal-tools-v1-base-v2"
BROWSER_A = "browser-engine-a-debian-bookworm-audio-v1-engine-a-base-v2"


async def pack_named(client: RpcClient, name: str = TERMINAL) -> dict[str, Any]:
    return dict(next(p for p in await client.call("rigs.packs") if p["name"] == name))


async def wait_for_state(client: RpcClient, want: str, timeout: float = 20.0, name: str = TERMINAL) -> dict[str, Any]:
    async with asyncio.timeout(timeout):
        while True:
            pack = await pack_named(client, name)
            if pack["state"] == want:
                return pack
            await asyncio.sleep(0.05)


async def test_a_pack_build_shows_its_step_then_ends_ready(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = install_fake_mmdebstrap(tmp_path, monkeypatch)
    packs = tmp_path / "packs"
    async with (
        running_server(tmp_path / "data", parts=parts_with_packs_in(packs)) as srv,
        RpcClient(srv.ws_url, srv.owner_token) as c,
    ):
        listed = await c.call("rigs.packs")
        assert [(p["name"], p["surface"], p["state"]) for p in listed] == [
            (TERMINAL, "terminal", "missing"),
            *((f"browser-engine-{e}-debian-bookworm-audio-v1-engine-{e}-base-v2", "browser", "missing") for e in "abc"),
            ("desktop-debian-bookworm-desktop-v2-base-v2", "computer", "missing"),
        ]
        pack = await pack_named(c)
        assert pack | {"step": None} == {
            "name": TERMINAL,
            "surface": "terminal",
            "revision": "tools-v1",
            "state": "missing",
            "step": None,
            "stepIndex": 0,
            "steps": 0,
            "error": None,
            "label": "Terminal image",
            "engine": None,
            "builtAt": None,
            "archiveDate": None,
            "archiveDates": {},
            "refresh": None,
        }
        started = await c.call("rigs.buildPack", name=TERMINAL)
        assert [p["state"] for p in started] == ["building", "missing", "missing", "missing", "missing"]
        async with asyncio.timeout(20):
            while (pack := await pack_named(c))["stepIndex"] < 4:
                await asyncio.sleep(0.05)
        assert pack["state"] == "building"
        assert pack["step"] == "terminal image: downloading packages (4/10)"
        assert pack["steps"] == 10
        # Asking again while it builds joins the build under way.
        again = (await c.call("rigs.buildPack", name=TERMINAL))[0]
        assert again["state"] == "building" and again["stepIndex"] == 4
        fake.finish()
        ready = await wait_for_state(c, "ready")
        assert ready["step"] is None and ready["error"] is None and ready["builtAt"] and ready["refresh"] is None
        assert ready["archiveDates"] == {}  # the archive could not be read (no real mirror in tests): stale at once
        assert (packs / TERMINAL / ".hangar-pack.json").is_file()


async def test_a_failed_build_says_why_and_can_be_retried(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = install_fake_mmdebstrap(tmp_path, monkeypatch)
    packs = tmp_path / "packs"
    async with (
        running_server(tmp_path / "data", parts=parts_with_packs_in(packs)) as srv,
        RpcClient(srv.ws_url, srv.owner_token) as c,
    ):
        fake.finish(exit_code=2)
        await c.call("rigs.buildPack", name=TERMINAL)
        failed = await wait_for_state(c, "failed")
        assert "exit code 2" in failed["error"] and "mirror answered 404" in failed["error"]
        fake.finish()
        retry = (await c.call("rigs.buildPack", name=TERMINAL))[0]
        assert retry["state"] == "building" and retry["error"] is None
        await wait_for_state(c, "ready")


async def test_a_browser_pack_builds_on_its_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = install_fake_mmdebstrap(tmp_path, monkeypatch)
    packs = tmp_path / "packs"
    async with (
        running_server(tmp_path / "data", parts=parts_with_packs_in(packs)) as srv,
        RpcClient(srv.ws_url, srv.owner_token) as c,
    ):
        started = {p["name"]: p["state"] for p in await c.call("rigs.buildPack", name=BROWSER_A)}
        assert started[BROWSER_A] == "building" and started[TERMINAL] == "missing"
        fake.finish()
        ready = await wait_for_state(c, "ready", name=BROWSER_A)
        assert ready["surface"] == "browser" and ready["revision"] == "audio-v1-engine-a"
        # Named for people (the pack's name is a cache key): the browser, not the engine's wire value.
        assert (ready["label"], ready["engine"]) == ("Chromium browser image", "engine-a")
        labels = {(p["surface"], p["engine"]): p["label"] for p in await c.call("rigs.packs")}
        assert labels == {
            ("terminal", None): "Terminal image",
            ("browser", "engine-a"): "Chromium browser image",
            ("browser", "engine-b"): "Firefox browser image",
            ("browser", "engine-c"): "WebKit browser image",
            ("computer", None): "Desktop image",
        }
        assert (packs / BROWSER_A / ".hangar-pack.json").is_file()
        assert (await pack_named(c))["state"] == "missing"  # packs are never shared


async def test_a_browser_rigs_first_boot_builds_its_pack_and_may_reach_the_archives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The boot that builds an engine's pack shows the build's steps and gets the package archive hosts; a
    failed build fails the rig, saying why."""
    fake = install_fake_mmdebstrap(tmp_path, monkeypatch)
    specs: list[RigSpec] = []
    async with (
        running_server(tmp_path / "data", parts=parts_with_packs_in(tmp_path / "packs", specs)) as srv,
        RpcClient(srv.ws_url, srv.owner_token) as c,
    ):
        if srv.ctx.service(RigManager).backend.unavailable_reason() is not None:
            pytest.skip(f"enclosures cannot run here: {srv.ctx.service(RigManager).backend.unavailable_reason()}")
        ws = await srv.new_workspace()
        space = (await c.call("spaces.create", workspace_id=ws, title="first boot"))["id"]
        opening = asyncio.create_task(c.call("rig.open", workspace_id=ws, space_id=space, surface="browser"))
        async with asyncio.timeout(20):
            while (
                not (rows := await c.call("rig_list", workspace_id=ws)) or "downloading" not in rows[0]["statusDetail"]
            ):
                await asyncio.sleep(0.05)
        assert rows[0]["statusDetail"] == "Chromium browser image: downloading packages (4/10)"
        (spec,) = specs
        assert spec.engine == "engine-a" and spec.display == (1280, 800)
        assert spec.allow_hosts == mirror_hosts() and spec.allow_hosts  # the archives, and nothing else
        fake.finish(exit_code=2)
        with pytest.raises(RpcError) as failed:
            await opening
        assert failed.value.code == "unavailable" and "exit code 2" in failed.value.message
        (row,) = await c.call("rig_list", workspace_id=ws, includeClosed=True)
        assert row["status"] == "failed" and "mirror answered 404" in row["statusDetail"]


async def test_packs_are_the_server_owners_and_an_unknown_pack_is_named(tmp_path: Path) -> None:
    async with running_server(tmp_path / "data", parts=parts_with_packs_in(tmp_path / "packs")) as srv:
        ws = await srv.new_workspace()
        member = await srv.new_user_token(ws, "owner", name="wsowner")
        async with RpcClient(srv.ws_url, member) as c:
            for op, args in (("rigs.packs", {}), ("rigs.buildPack", {"name": TERMINAL})):
                with pytest.raises(RpcError) as refused:
                    await c.call(op, **args)
                assert refused.value.code == "forbidden"
        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            with pytest.raises(RpcError) as unknown:
                await c.call("rigs.buildPack", name="../etc")
            assert unknown.value.code == "not_found" and TERMINAL in unknown.value.message
            assert not (tmp_path / "etc").exists()


async def until(check: Callable[[], bool]) -> None:
    async with asyncio.timeout(60):  # a bound against hangs only
        while not check():
            await asyncio.sleep(0.05)


async def test_a_stopped_build_takes_its_processes_with_it_and_builds_when_asked_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A build whose caller gives up (the server stops, a first open is cancelled) must not run on beside the
    next build: mmdebstrap's own children and mounts included, nothing of it stays."""
    fake = install_fake_mmdebstrap(tmp_path, monkeypatch)
    packs = tmp_path / "packs"
    steps: list[str] = []
    build = asyncio.create_task(ensure_pack(packs, steps.append))
    await until(lambda: "terminal image: downloading packages (4/10)" in steps)
    assert len(fake.processes()) == 2  # mmdebstrap and the child it left the work to
    assert build_under_way(packs) == "terminal image: downloading packages (4/10)"
    # What the build mounts into its new root is its own: the host never sees it, so no removal of the
    # temporary directory can reach through it (mmdebstrap binds the host's /dev/shm there).
    assert fake.mounts() == []
    build.cancel()
    with pytest.raises(asyncio.CancelledError):
        await build
    await until(lambda: not fake.processes())
    assert fake.mounts() == []
    assert build_under_way(packs) is None  # the lock is free and no step is left to show
    assert not list(packs.glob(".tmp-*")) and not (packs / f"{TERMINAL}.progress").exists()
    fake.finish()
    info = await ensure_pack(packs)
    assert info.built_in_s is not None and (packs / TERMINAL / MARKER).is_file()


async def test_a_build_in_another_process_shows_its_steps_and_is_waited_for_not_repeated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = install_fake_mmdebstrap(tmp_path, monkeypatch)
    packs = tmp_path / "packs"
    other = subprocess.Popen(
        [HANGAR, "rigs", "build-pack"], env={**os.environ, "HANGAR_RIG_PACKS_DIR": str(packs)}, stderr=subprocess.PIPE
    )
    try:
        await until(lambda: build_under_way(packs) == "terminal image: downloading packages (4/10)")
        async with (
            running_server(tmp_path / "data", parts=parts_with_packs_in(packs)) as srv,
            RpcClient(srv.ws_url, srv.owner_token) as c,
        ):
            pack = await pack_named(c)  # the settings screen of a server that is not the one building
            assert (pack["state"], pack["step"], pack["stepIndex"], pack["steps"]) == (
                "building", "terminal image: downloading packages (4/10)", 4, 10,
            )  # fmt: skip
        steps: list[str] = []
        waiter = asyncio.create_task(ensure_pack(packs, steps.append))
        await until(lambda: len(steps) == 2)
        assert steps == ["waiting for the terminal image build lock", "terminal image: downloading packages (4/10)"]
        fake.finish()
        info = await waiter
        assert info.built_in_s is None  # built once, by the other process
        assert not any(step.startswith("building the terminal image") for step in steps)
        assert await asyncio.to_thread(other.wait, 60) == 0
    finally:
        if other.poll() is None:
            other.kill()
            other.wait()
