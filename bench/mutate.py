"""Mutation check: do the tests catch real bugs? Each mutation of ``bench/mutations.py`` puts one plausible bug into
one critical line (a guard removed outright, or a subtle bug: a boundary, an off-by-one, a race, rare input), runs
only the tests that should catch it, and puts the line back. A mutation is caught when one of those tests fails.
Printed: each mutation's outcome, then the kill rate for guard removals and for subtle bugs, and what survived.

Nothing here touches the working tree: the tree (tracked and untracked files, as they are now, or a revision
given with ``--rev``) is copied into a scratch directory, the virtualenv's Python runs the tests there with
``PYTHONPATH`` pointed at the copy (its ``src`` before the editable install's), and the copy is removed at the end.
First the selected tests run once unmutated (the baseline): a mutation whose tests already fail there is shown as
such and counted in neither figure.

``--rev REV`` measures the suite as it was at ``REV`` ("before"): each mutation's tests widen to their whole test
files as they stood there, with the files that were already about the same code (a test added since does not exist
there; a file added since is dropped), and a mutation
whose snippet is not in that revision's code is shown as not applicable.

Run: ``make mutate`` or ``.venv/bin/python bench/mutate.py [--only ID,ID] [--kind guard|subtle] [--rev REV]
[--list] [--json FILE] [--no-baseline]``.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.mutations import KINDS, MUTATIONS, Mutation  # noqa: E402

PYCACHE = Path(sys.prefix) / "pycache-mutate"  # compiled modules of the copies, kept in the virtualenv
RUN_TIMEOUT_S = 1800  # one mutation's tests, all told (each test has pytest's own timeout besides)
FAILED_LINE = re.compile(r"^(FAILED|ERROR) (\S+)", re.MULTILINE)
SUMMARY = re.compile(r"(\d+) (passed|failed|skipped|errors?|deselected|xfailed|xpassed)")


@dataclass
class Outcome:
    id: str
    kind: str
    item: str
    result: str  # caught | survived | skipped | baseline-fails | not-applicable | error
    caught_by: str = ""
    seconds: float = 0.0
    note: str = ""


# -- the scratch copy --------------------------------------------------------------------------------------------


def _git(*args: str, cwd: Path = ROOT) -> bytes:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True).stdout


def copy_tree(into: Path, rev: str | None) -> None:
    """The working tree as it is (tracked and untracked files git does not ignore), or ``rev``'s tree."""
    if into.exists():
        shutil.rmtree(into)
    into.mkdir(parents=True)
    if rev is not None:
        archive = subprocess.run(["git", "archive", rev], cwd=ROOT, check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
        return
    for raw in _git("ls-files", "-z", "--cached", "--others", "--exclude-standard").split(b"\0"):
        if not raw:
            continue
        rel = raw.decode()
        src = ROOT / rel
        if not src.is_file() or src.is_symlink():
            continue  # deleted in the working tree, or a link (the tree holds none that tests need)
        dst = into / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst)  # the modification time too: compiled modules stay valid from run to run


@contextlib.contextmanager
def scratch(rev: str | None) -> Iterator[Path]:
    """A copy of the tree at a path fixed for this checkout and revision (so its compiled modules, kept under the
    virtualenv, are reused by the next run), held under a lock (two such runs would share it), removed after."""
    tag = hashlib.sha1(f"{ROOT} {rev or ''}".encode()).hexdigest()[:10]
    base = Path(tempfile.gettempdir()) / f"hangar-mutate-{tag}"
    base.mkdir(exist_ok=True)
    with open(base / "lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise SystemExit(f"another mutation run of this checkout is under way ({base})") from None
        tree = base / "tree"
        try:
            copy_tree(tree, rev)
            yield tree
        finally:
            shutil.rmtree(tree, ignore_errors=True)


def run_env(tree: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPATH"] = os.pathsep.join([str(tree / "src"), str(tree)])
    env["PYTHONPYCACHEPREFIX"] = str(PYCACHE)
    env.setdefault("HANGAR_TEST_PACKS", str(Path.home() / ".cache" / "hangar-test" / "packs"))
    return env


# -- choosing and running the tests ---------------------------------------------------------------------------------


def defined(tree: Path, node: str) -> bool:
    """Whether ``node`` (``path::name``) names a test function that exists in ``tree``."""
    path, _, name = node.partition("::")
    file = tree / path
    if not file.is_file():
        return False
    return not name or re.search(rf"^\s*(async )?def {re.escape(name)}\(", file.read_text(), re.MULTILINE) is not None


def selection(m: Mutation, tree: Path, widen: bool) -> list[str]:
    """The tests to run for ``m``: its own, or (``widen``, measuring an older suite) their whole files."""
    if widen:
        files = [n.partition("::")[0] for n in m.tests] + list(m.also)
        return list(dict.fromkeys(f for f in files if (tree / f).is_file()))
    return [n for n in m.tests if defined(tree, n)]


@dataclass
class Run:
    code: int
    output: str
    seconds: float

    @property
    def failed(self) -> list[str]:
        return [node for _, node in FAILED_LINE.findall(self.output)]

    def count(self, what: str) -> int:
        tail = self.output.strip().splitlines()[-1] if self.output.strip() else ""
        return sum(int(n) for n, w in SUMMARY.findall(tail) if w.rstrip("s") == what.rstrip("s"))


def pytest(tree: Path, nodes: Sequence[str], log: Path, *, first_failure: bool) -> Run:
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=", "-ra"]
    argv += ["--timeout=600", *(["-x"] if first_failure else []), *nodes]
    started = time.monotonic()
    try:
        done = subprocess.run(argv, cwd=tree, env=run_env(tree), capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
        code, output = done.returncode, done.stdout + done.stderr
    except subprocess.TimeoutExpired as exc:
        code, output = -1, f"timed out after {RUN_TIMEOUT_S} s\n{exc.stdout or ''}"
    log.write_text(output)
    return Run(code, output, time.monotonic() - started)


def forget_compiled(source: Path) -> None:
    """Remove the compiled forms of ``source`` kept under the pycache prefix the test runs use."""
    kept = PYCACHE / source.parent.relative_to("/")
    for compiled in kept.glob(f"{source.stem}.*.pyc"):
        compiled.unlink(missing_ok=True)


def mutated(tree: Path, m: Mutation) -> contextlib.AbstractContextManager[bool]:
    """``m`` applied to the copy while the block runs (False when its snippet is not found exactly once)."""

    @contextlib.contextmanager
    def apply() -> Iterator[bool]:
        file = tree / m.file
        original = file.read_text() if file.is_file() else ""
        if original.count(m.find) != 1:
            yield False
            return
        stat = file.stat()
        bug = original.replace(m.find, m.replace)
        # A compiled module is taken as current when its source's size and modification time match: two
        # mutations of one file may have one size, so each gets a time of its own, and what was compiled is
        # dropped before and after.
        offset = 100 + int(hashlib.sha1(bug.encode()).hexdigest(), 16) % 1_000_000
        forget_compiled(file)
        file.write_text(bug)
        os.utime(file, (stat.st_atime, stat.st_mtime + offset))
        try:
            yield True
        finally:
            file.write_text(original)
            os.utime(file, (stat.st_atime, stat.st_mtime))
            forget_compiled(file)

    return apply()


def judge(m: Mutation, run: Run) -> Outcome:
    out = Outcome(m.id, m.kind, m.item, "survived", seconds=round(run.seconds, 1))
    if run.code == 0:
        if run.count("passed") == 0 and run.count("skipped") > 0:
            out.result, out.note = "skipped", "every selected test skipped"
        return out
    if run.code == 1:
        out.result = "caught"
        out.caught_by = run.failed[0] if run.failed else "?"
        return out
    if run.code == 2:
        out.result, out.caught_by, out.note = "caught", "(collection)", "the mutated code does not import"
        return out
    out.result, out.note = "error", f"pytest exit code {run.code}"
    return out


# -- the run ----------------------------------------------------------------------------------------------------------


def choose(only: str | None, kind: str | None) -> list[Mutation]:
    chosen = [m for m in MUTATIONS if kind is None or m.kind == kind]
    if only:
        wanted = {w.strip() for w in only.split(",") if w.strip()}
        unknown = wanted - {m.id for m in MUTATIONS}
        if unknown:
            raise SystemExit(f"no mutation named {', '.join(sorted(unknown))} (see --list)")
        chosen = [m for m in chosen if m.id in wanted]
    return chosen


def rate(outcomes: list[Outcome], kind: str) -> tuple[int, int]:
    counted = [o for o in outcomes if o.kind == kind and o.result in ("caught", "survived", "skipped", "error")]
    return sum(o.result == "caught" for o in counted), len(counted)


def report(outcomes: list[Outcome], rev: str | None) -> None:
    print()
    print(f"Mutation check of {'revision ' + rev if rev else 'the working tree'}:")
    for kind, label in KINDS.items():
        caught, total = rate(outcomes, kind)
        share = f"{100 * caught / total:.0f}%" if total else "n/a"
        print(f"  {label}: caught {caught}/{total} ({share})")
    survivors = [o for o in outcomes if o.result in ("survived", "skipped", "error")]
    if survivors:
        print("  survived: " + ", ".join(f"{o.id} ({o.result})" if o.result != "survived" else o.id for o in survivors))
    aside = [o for o in outcomes if o.result in ("baseline-fails", "not-applicable")]
    if aside:
        print("  not counted: " + ", ".join(f"{o.id} ({o.result})" for o in aside))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--only", help="comma-separated mutation ids")
    parser.add_argument("--kind", choices=sorted(KINDS))
    parser.add_argument("--rev", help="measure the suite of this git revision (tests widened to their files)")
    parser.add_argument("--list", action="store_true", help="list the mutations and exit")
    parser.add_argument("--json", type=Path, help="write the outcomes here as JSON")
    parser.add_argument("--no-baseline", action="store_true", help="skip the unmutated run of the tests")
    parser.add_argument("--logs", type=Path, help="keep each run's pytest output here")
    args = parser.parse_args(argv)
    # Stopped from outside: the running tests are stopped and the copy removed (``finally`` runs on SystemExit).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    chosen = choose(args.only, args.kind)
    if args.list:
        for m in chosen:
            print(f"{m.id:34} {m.kind:7} {m.item:6} {m.what}")
        return 0
    logs = args.logs or Path(tempfile.mkdtemp(prefix="hangar-mutate-logs-"))
    logs.mkdir(parents=True, exist_ok=True)
    outcomes: list[Outcome] = []
    with scratch(args.rev) as tree:
        plan = {m.id: selection(m, tree, widen=args.rev is not None) for m in chosen}
        failing: set[str] = set()
        if not args.no_baseline:
            everything = list(dict.fromkeys(n for nodes in plan.values() for n in nodes))
            print(f"baseline: {len(everything)} test selections unmutated ...", flush=True)
            base = pytest(tree, everything, logs / "baseline.log", first_failure=False)
            failing = set(base.failed)
            print(f"baseline: exit {base.code} in {base.seconds:.0f} s; failing: {sorted(failing) or 'none'}")
        for m in chosen:
            nodes = plan[m.id]
            if not nodes:
                outcomes.append(Outcome(m.id, m.kind, m.item, "survived", note="no test selected here"))
                print(f"{'SURVIVED':9} {m.kind:7} {m.id}: no test of it exists here", flush=True)
                continue
            if any(f == n or f.startswith(n + "::") or f.startswith(n + "[") for f in failing for n in nodes):
                outcomes.append(Outcome(m.id, m.kind, m.item, "baseline-fails"))
                print(f"{'BASELINE':9} {m.kind:7} {m.id}: its tests fail unmutated", flush=True)
                continue
            with mutated(tree, m) as applied:
                if not applied:
                    outcomes.append(Outcome(m.id, m.kind, m.item, "not-applicable", note="snippet not found once"))
                    print(f"{'N/A':9} {m.kind:7} {m.id}: snippet not found once in {m.file}", flush=True)
                    continue
                run = pytest(tree, nodes, logs / f"{m.id}.log", first_failure=True)
            outcome = judge(m, run)
            outcomes.append(outcome)
            shown = outcome.result.upper() if outcome.result != "caught" else "caught"
            print(f"{shown:9} {m.kind:7} {m.id} ({outcome.seconds:.0f} s) {outcome.caught_by} {outcome.note}".rstrip())
            sys.stdout.flush()
    report(outcomes, args.rev)
    print(f"  logs: {logs}")
    if args.json:
        args.json.write_text(json.dumps([asdict(o) for o in outcomes], indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
