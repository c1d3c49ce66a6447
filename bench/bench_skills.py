"""The skills supply-chain scan: the time to scan one skill (``skills.scan`` over the RPC socket of a real server:
the text checks, the allowlist, bandit and shellcheck each in a bubblewrap sandbox of their own), beside the peer
that does the analysers' part alone: the same bandit and shellcheck run straight on the host, unconfined, over the
same files. The ratio is what the scan adds around the analysers (confinement, the text checks, the records).

Skills measured: a ``SKILL.md`` alone, an archive with one Python and one shell script, and an archive with twenty
of each (about 40 KiB of scripts).

Run: ``.venv/bin/python bench/bench_skills.py [--rounds N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.rpc import RpcClient  # noqa: E402
from tests.support.server import running_server  # noqa: E402
from tests.unit.agents.skill_kits import CLEAN_PY, CLEAN_SH, digest, skill_md, tar_gz  # noqa: E402

from hangar.agents.skills.archive import unpack, write_tree  # noqa: E402
from hangar.agents.skills.scan import scripts  # noqa: E402
from hangar.server.parts import all_parts  # noqa: E402


def skills() -> list[tuple[str, str, bytes]]:
    many = {"SKILL.md": skill_md("many-scripts")}
    for i in range(20):
        many[f"scripts/s{i}.sh"] = CLEAN_SH
        many[f"scripts/p{i}.py"] = CLEAN_PY
    return [
        ("skill-md-only", "skill-md", skill_md("skill-md-only")),
        ("two-scripts", "archive", tar_gz({"SKILL.md": skill_md("two-scripts"), "a.sh": CLEAN_SH, "b.py": CLEAN_PY})),
        ("many-scripts", "archive", tar_gz(many)),
    ]


def peer_ms(kind: str, data: bytes) -> float:
    """bandit and shellcheck straight on the host over the skill's scripts (nothing for a SKILL.md alone)."""
    files = unpack(data, kind)
    python, shell = scripts(files)
    with tempfile.TemporaryDirectory() as tmp:
        write_tree(files, Path(tmp))
        started = time.perf_counter()
        if python:
            subprocess.run([sys.executable, "-m", "bandit", "-q", "-f", "json", "--", *python], cwd=tmp,
                           capture_output=True, check=False)  # fmt: skip
        if shell:
            subprocess.run(["shellcheck", "-f", "json", "-S", "warning", "--", *shell], cwd=tmp,
                           capture_output=True, check=False)  # fmt: skip
        return (time.perf_counter() - started) * 1000


async def main(rounds: int) -> None:
    with tempfile.TemporaryDirectory(prefix="hbs-") as root:
        async with running_server(Path(root) / "data", parts=all_parts()) as srv:
            ws = await srv.new_workspace("bench")
            async with RpcClient(srv.ws_url, srv.owner_token) as client:
                print(f"{'skill':<16}{'files':>6}{'scan p50 ms':>13}{'scan max':>10}{'peer p50 ms':>13}{'ratio':>8}")
                for name, kind, data in skills():
                    b64 = base64.b64encode(data).decode()
                    up = await client.call("skills.upload", workspace_id=ws, name=name, kind=kind,
                                           contentBase64=b64, digest=digest(data))  # fmt: skip
                    assert up["verdict"] == "pass", up
                    ours: list[float] = []
                    for _ in range(rounds):
                        started = time.perf_counter()
                        done = await client.call("skills.scan", workspace_id=ws, skillId=up["id"])
                        ours.append((time.perf_counter() - started) * 1000)
                        assert done["verdict"] == "pass"
                    peer = [peer_ms(kind, data) for _ in range(rounds)]
                    ours_p50, peer_p50 = statistics.median(ours), statistics.median(peer)
                    ratio = f"{ours_p50 / peer_p50:.2f}" if peer_p50 >= 1 else "-"
                    files = len(unpack(data, kind))
                    print(f"{name:<16}{files:>6}{ours_p50:>13.0f}{max(ours):>10.0f}{peer_p50:>13.0f}{ratio:>8}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=10)
    asyncio.run(main(parser.parse_args().rounds))
