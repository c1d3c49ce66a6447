"""Build the upgrade fixtures: a data directory made by each released Hangar, archived under tests/fixtures/upgrades/.

    python3 scripts/upgrade_fixtures/build.py [VERSION ...]

For each release of ``releases.toml`` (or each VERSION named), in a temporary directory: a git worktree of the
release's commit, a virtualenv with that checkout installed (its own dependencies, from the package index: build
time only, the tests never do this), then ``populate.py`` run by that virtualenv's Python drives the release's own
``hangar serve`` to make the records it lists. The data directory is archived as ``hangar-VERSION.tar.gz`` (paths
relative to the directory, no owner names) beside ``hangar-VERSION.json``: the release's version and commit, the
records made and the credentials to read them back. The tests (tests/integration/test_upgrades.py) unpack these
and open them with this checkout's ``hangar``; they never build.

Needs git, Python 3.11+ and the package index; takes a few minutes per release.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import tempfile
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHECKOUT = HERE.parents[1]
OUT = CHECKOUT / "tests" / "fixtures" / "upgrades"


def releases() -> list[dict[str, str]]:
    """The releases, oldest first, as ``releases.toml`` lists them."""
    with open(HERE / "releases.toml", "rb") as f:
        return list(tomllib.load(f)["release"])


def run(*args: str | Path, cwd: Path | None = None) -> None:
    subprocess.run([str(a) for a in args], cwd=cwd, check=True)


def archive(data_dir: Path, target: Path) -> None:
    """``data_dir`` as the release left it (its lock files too: a newer version must cope with them), a gzipped
    tar of its files and directories, sorted, owned by nobody in particular; written beside ``target`` and renamed
    into place. Anything else in it (a link, a socket) stops the build, naming it."""

    def clean(info: tarfile.TarInfo) -> tarfile.TarInfo:
        if not (info.isfile() or info.isdir()):
            raise SystemExit(f"{info.name} in the data directory is neither a file nor a directory")
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        return info

    partial = target.with_name(target.name + ".partial")
    with tarfile.open(partial, "w:gz") as tar:
        for path in sorted(data_dir.rglob("*")):
            tar.add(path, arcname=str(path.relative_to(data_dir)), recursive=False, filter=clean)
    partial.replace(target)


def build(release: dict[str, str], work: Path) -> None:
    version, commit = release["version"], release["commit"]
    src, venv, data = work / "src", work / "venv", work / "data"
    run("git", "worktree", "add", "--detach", src, commit, cwd=CHECKOUT)
    try:
        run(sys.executable, "-m", "venv", venv)
        run(venv / "bin" / "pip", "install", "--quiet", src)
        manifest = work / "records.json"
        run(venv / "bin" / "python", HERE / "populate.py", venv / "bin" / "hangar", data, manifest)
        records = json.loads(manifest.read_text())
    finally:
        run("git", "worktree", "remove", "--force", src, cwd=CHECKOUT)
    OUT.mkdir(parents=True, exist_ok=True)
    archive(data, OUT / f"hangar-{version}.tar.gz")
    described = {"version": version, "commit": commit, "built_by": "scripts/upgrade_fixtures/build.py", **records}
    (OUT / f"hangar-{version}.json").write_text(json.dumps(described, indent=2, sort_keys=True) + "\n")
    print(f"{version} ({commit[:12]}): {OUT / f'hangar-{version}.tar.gz'}")


def main() -> None:
    wanted = set(sys.argv[1:])
    known = releases()
    unknown = wanted - {r["version"] for r in known}
    if unknown:
        sys.exit(f"no such release in releases.toml: {', '.join(sorted(unknown))}")
    for release in known:
        if wanted and release["version"] not in wanted:
            continue
        with tempfile.TemporaryDirectory(prefix=f"hangar-{release['version']}-") as tmp:
            build(release, Path(tmp))


if __name__ == "__main__":
    os.umask(0o077)
    main()
