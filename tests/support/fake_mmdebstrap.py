"""A stand-in ``mmdebstrap`` on ``PATH`` for tests of pack builds: a real building takes minutes and the
network, while what these tests check is what the server makes of a build's steps, its end and its failure.

The script prints mmdebstrap's own step lines, then, as mmdebstrap does, leaves the work to a child process
of its own. As root, that mounts a tmpfs at ``<target>/dev/shm`` (mmdebstrap mounts /proc, /sys and device nodes
into the new root while it works), then waits until the test creates ``release`` (so a test sees the build under
way for as long as it needs), unmounts, finishes the target directory, and the script exits with ``exit_code``.
``processes`` finds both processes on the host (a stopped build must take its child with it) and ``mounts`` any
mount of a build's left where the host sees it.

Given a ``template`` (a pack built for real: the tests' shared one), a successful build fills the target with hard
links to the template's files (no copy, and nothing of the template is written: its marker is left out), so what
boots from the stand-in's pack is a real root filesystem: a test can watch a first build step by step and then
see the rig, the shell step or the command agent that waited for it run.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from hangar.rigs.images import mirror
from hangar.rigs.images.builder import MARKER

_SCRIPT = """#!{python}
import os, pathlib, subprocess, sys, time
print("I: chosen mode: unshare", flush=True)
print("I: running apt-get update...", flush=True)
release = pathlib.Path({release!r})
ready_r, ready_w = os.pipe()
worker = os.fork()
if worker == 0:
    target = pathlib.Path(sys.argv[sys.argv.index("bookworm") + 1])  # then the sources
    shm = target / "dev" / "shm"
    shm.mkdir(parents=True)
    mounted = os.geteuid() == 0 and subprocess.run(["mount", "-t", "tmpfs", "fake-build", str(shm)]).returncode == 0
    os.write(ready_w, b"x")
    while not release.exists():
        time.sleep(0.05)
    if mounted:
        subprocess.run(["umount", str(shm)], check=True)
    code = int(release.read_text() or "0")
    if code:
        print("E: the mirror answered 404", flush=True)
        os._exit(code)
    template = {template!r}
    if template:
        subprocess.run(["cp", "-al", template + "/.", str(target)], check=True)
        (target / {marker!r}).unlink()  # a link to the template's own: the build writes its marker afresh
        # A file of this build's own (new, so no file of the template is written): a rig tells which build it
        # booted from by reading it.
        (target / "hangar-fake-build").write_text(str(time.time_ns()))
    else:
        (target / "bin").mkdir()
    os._exit(0)
os.read(ready_r, 1)  # the step is announced once the worker is at it, as a test that sees it expects
print("I: downloading packages...", flush=True)
code = os.waitstatus_to_exitcode(os.waitpid(worker, 0)[1])
if code:
    sys.exit(code)
print("I: success in 0.1 seconds", flush=True)
"""


@dataclass
class FakeMmdebstrap:
    release_file: Path

    def finish(self, exit_code: int = 0) -> None:
        """Let the build under way end, successfully or with ``exit_code`` (written whole, then renamed into
        place: the build must never read the file half written, as empty)."""
        staged = self.release_file.with_name(self.release_file.name + ".new")
        staged.write_text(str(exit_code))
        staged.replace(self.release_file)

    def hold(self) -> None:
        """Builds from now on wait at "downloading packages" again until ``finish``."""
        self.release_file.unlink(missing_ok=True)

    @property
    def script(self) -> Path:
        return self.release_file.parent / "fake-bin" / "mmdebstrap"

    def mounts(self) -> list[str]:
        """Mount points under this test's directory that the host sees (a build's, left behind)."""
        points = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()]
        return [point for point in points if point.startswith(f"{self.release_file.parent}/")]

    def processes(self) -> list[int]:
        """Host pids of live processes of this fake (a build's and its child's)."""
        found = []
        for entry in Path("/proc").iterdir():
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except (OSError, IndexError):
                continue
            if str(self.script).encode() in argv[:2] and state != "Z":
                found.append(int(entry.name))
        return found


def install_fake_mmdebstrap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, template: Path | None = None, apt_root: Path | None = None
) -> FakeMmdebstrap:
    """Put the fake first on ``PATH`` (for this process and the builds it spawns); with ``template`` its builds
    end in hard links to that pack's files (and a file ``/hangar-fake-build`` of their own, unique per build).

    A build reads the release dates of the archives it is built from: ``apt_root`` names them (a
    ``tests/peers/debian_archive.py``); without it, builds are pointed at an archive on a loopback port nobody
    listens on, so no test reaches a real mirror (the dates are then unknown, which a build tolerates)."""
    if apt_root is None:
        apt_root = tmp_path / "fake-apt"
        apt_root.mkdir()
        suites = ("bookworm", "bookworm-updates", "bookworm-security")
        (apt_root / "sources.list").write_text("".join(f"deb http://127.0.0.1:9/debian {s} main\n" for s in suites))
    monkeypatch.setattr(mirror, "APT_ROOT", apt_root)
    monkeypatch.setenv("HANGAR_RIG_APT_ROOT", str(apt_root))
    bin_dir = tmp_path / "fake-bin"
    bin_dir.mkdir()
    release = tmp_path / "fake-mmdebstrap-release"
    script = bin_dir / "mmdebstrap"
    script.write_text(
        _SCRIPT.format(
            python=sys.executable, release=str(release), template=str(template) if template else "", marker=MARKER
        )
    )
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    return FakeMmdebstrap(release)
