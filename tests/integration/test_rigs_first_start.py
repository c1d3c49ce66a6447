"""A first start of ``hangar serve`` (what ``make run`` starts): without the terminal image pack it says it is
preparing it and shows each step while the server already answers; a failed build says why and is tried again
at the next start; a server killed meanwhile takes the build with it. ``mmdebstrap`` is a stand-in
(tests/support/fake_mmdebstrap.py): the real build takes minutes and the network."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

from hangar.core.commandline import hangar_command
from hangar.rigs.images.builder import MARKER
from tests.support.fake_mmdebstrap import FakeMmdebstrap, install_fake_mmdebstrap
from tests.support.packs import rigs_unavailable
from tests.support.processes import ServeProcess, hangar_serve, owner_token
from tests.support.rpc import RpcClient

TERMINAL = "terminal-tools-v1-base-v2"
STEP = "terminal image: downloading packages (4/10)"


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeMmdebstrap:
    """The stand-in on PATH, packs in a directory of this test's own, and the start-time build on (the other
    tests turn it off)."""
    if (reason := rigs_unavailable()) is not None:
        pytest.skip(f"the server prepares the pack only where enclosures run, and they cannot here: {reason}")
    stand_in = install_fake_mmdebstrap(tmp_path, monkeypatch)
    monkeypatch.setenv("HANGAR_RIG_PACKS_DIR", str(tmp_path / "packs"))
    monkeypatch.setenv("HANGAR_PREPARE_PACK", "1")
    return stand_in


def said_until(serve: ServeProcess, text: str) -> list[str]:
    """The server's output lines after its address, up to the first holding ``text``."""
    assert serve.proc.stdout is not None
    lines = []
    for line in serve.proc.stdout:
        lines.append(line.rstrip("\n"))
        if text in line:
            return lines
    raise AssertionError(f"hangar serve ended before saying {text!r}; it said {lines}")


async def test_a_first_start_prepares_the_terminal_image_in_the_background_and_says_so(
    tmp_path: Path, fake: FakeMmdebstrap
) -> None:
    data = tmp_path / "data"
    token = owner_token(data)
    with hangar_serve(data) as serve:
        said = said_until(serve, "downloading packages")
        assert said[0] == (
            "preparing the terminal image (first start; several minutes, in the background): rigs, shell steps "
            "and command agents wait for it"
        )
        assert said[-1] == STEP
        assert httpx.get(f"{serve.url}/healthz").json()["status"] == "ok"  # the server answers meanwhile
        async with RpcClient(serve.ws_url, token) as c:  # the settings screen shows the build and its step
            pack = next(p for p in await c.call("rigs.packs") if p["name"] == TERMINAL)
        assert (pack["state"], pack["step"], pack["stepIndex"], pack["steps"]) == ("building", STEP, 4, 10)
        fake.finish()
        said = said_until(serve, "built in")
        assert said[-2:-1] == ["terminal image ready"] and said[-1].startswith("terminal image built in ")
        assert (tmp_path / "packs" / TERMINAL / MARKER).is_file()
    with hangar_serve(data) as again:  # a later start finds the pack and says nothing of it
        again.proc.terminate()
        assert again.proc.stdout is not None
        assert "terminal image" not in again.proc.stdout.read()


def test_a_failed_first_start_build_says_why_and_the_next_start_tries_again(
    tmp_path: Path, fake: FakeMmdebstrap
) -> None:
    fake.finish(exit_code=2)
    data = tmp_path / "data"
    with hangar_serve(data) as serve:
        failed = said_until(serve, "build failed")[-1]
        assert failed.startswith("terminal image build failed: mmdebstrap failed with exit code 2: ")
        assert "the mirror answered 404" in failed
        # The command as a shell here runs it to build where this server looks (the checkout's entry point: no
        # `hangar` on the PATH).
        build_pack = hangar_command("rigs", "build-pack", "--data-dir", data)
        assert failed.endswith(
            "it is retried when a rig, shell step or command agent first needs it, at the next start, or now "
            f"with: HANGAR_RIG_PACKS_DIR={tmp_path / 'packs'} {build_pack}"
        )
        assert httpx.get(f"{serve.url}/healthz").json()["status"] == "ok"  # the server runs on
    fake.finish()
    with hangar_serve(data) as serve:
        said_until(serve, "built in")
    assert (tmp_path / "packs" / TERMINAL / MARKER).is_file()


def test_a_server_killed_during_its_first_start_build_takes_the_build_with_it(
    tmp_path: Path, fake: FakeMmdebstrap
) -> None:
    data = tmp_path / "data"
    with hangar_serve(data) as serve:
        said_until(serve, "downloading packages")
        assert len(fake.processes()) == 2  # mmdebstrap and the child it left the work to
        serve.kill9()
    for _ in range(600):  # a bound against hangs only
        if not fake.processes():
            break
        time.sleep(0.05)
    assert fake.processes() == []
    fake.finish()
    with hangar_serve(data) as serve:  # nothing left behind holds the next start up
        said_until(serve, "built in")
