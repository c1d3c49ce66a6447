"""User code in tests: the command-line agent script as argv that runs wherever the code is confined (its
source is passed to the enclosure's python3, since host paths are not visible there), trusted host execution for
tests about host process control, and finding a confined process from the host."""

from __future__ import annotations

from pathlib import Path

from hangar.core.confine import SETTING_TRUSTED_HOST_EXEC
from hangar.core.context import AppContext
from hangar.identity import IdentityService

CLI_AGENT_SOURCE = (Path(__file__).parent.parent / "unit" / "agents" / "scripts" / "cli_agent.py").read_text()
CLI_AGENT = ["python3", "-c", CLI_AGENT_SOURCE]


async def trust_host(ctx: AppContext) -> None:
    """Trusted host execution on (what `hangar admin trusted-host-exec on` sets): for tests that watch host
    processes by pid or read host paths from scripts."""
    await ctx.service(IdentityService).set_setting(SETTING_TRUSTED_HOST_EXEC, True)


def host_pids(ns_pid: int, argv0: str) -> list[int]:
    """Host pids of live processes running ``argv0`` whose pid in their own namespace is ``ns_pid`` (a pid a
    confined program wrote down)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        ns = fields.get("NSpid", "").split()
        if (
            ns
            and ns[-1] == str(ns_pid)
            and fields.get("State", "").split()[:1] != ["Z"]
            and cmdline[0] == argv0.encode()
        ):
            found.append(int(entry.name))
    return found


def host_processes_named(argv0: str) -> list[int]:
    """Host pids of live processes whose ``argv[0]`` is ``argv0``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if cmdline.split(b"\0")[0] == argv0.encode() and state != "Z":
            found.append(int(entry.name))
    return found


def trust_host_dir(data_dir: Path) -> None:
    """Trusted host execution on for a data directory, through the real command line."""
    import subprocess
    import sys

    hangar = str(Path(sys.executable).parent / "hangar")
    subprocess.run(
        [hangar, "admin", "trusted-host-exec", "on", "--data-dir", str(data_dir)], check=True, capture_output=True
    )
