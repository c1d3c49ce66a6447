"""The ``enclosure`` backend: rigs as Linux namespaces (bubblewrap) over the terminal image pack."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import ClassVar

from hangar.errors import InvalidArgs, NotFound, Unavailable
from hangar.rigs.backends.base import RigBackend, RigHandle, RigSpec
from hangar.rigs.backends.enclosure import probe
from hangar.rigs.backends.enclosure.cgroups import detect
from hangar.rigs.backends.enclosure.rig import EnclosureRig, clear_leftovers
from hangar.rigs.egress.allowlist import validate_patterns
from hangar.rigs.image.pack import PACK_NAME, TOOLSET_REVISION, ensure_pack, missing_tools, pack_ready
from hangar.rigs.packs import PackBuilds, PackPhase, PackStatus

_RIG_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
SURFACES = frozenset({"terminal"})


class EnclosureBackend(RigBackend):
    """Rigs under ``<rigs_root>/run/``; the image pack under ``packs_root`` (default
    ``<rigs_root>/microvm-packs``). ``upstream_overrides`` ("name:port" -> (address, port)) is for tests: it
    lets the egress gate reach test servers on host loopback under allow-listed names."""

    name: ClassVar[str] = "enclosure"

    def __init__(
        self,
        rigs_root: Path,
        *,
        packs_root: Path | None = None,
        upstream_overrides: Mapping[str, tuple[str, int]] | None = None,
        tool_path: str | None = None,
    ) -> None:
        self.rigs_root = rigs_root
        self.packs_root = packs_root or rigs_root / "microvm-packs"
        self.upstream_overrides = dict(upstream_overrides or {})
        self._tool_path = tool_path  # where host tools are looked up (None: $PATH)
        self._reason: str | None = None
        self._probed = False
        self._swept = False
        self._builds = PackBuilds()

    def unavailable_reason(self) -> str | None:
        if not self._probed:
            self._reason = probe.unavailable_reason(path=self._tool_path)
            if self._reason is None and not pack_ready(self.packs_root) and missing_tools():
                self._reason = "the terminal image is not built yet and mmdebstrap (Debian package) is missing"
            self._probed = True
        return self._reason

    async def start(self, spec: RigSpec, progress: Callable[[str], None]) -> RigHandle:
        reason = self.unavailable_reason()
        if reason is not None:
            raise Unavailable(reason)
        _validate(spec)
        version, why = detect()
        if version is None:
            raise Unavailable(f"no usable cgroups for rig limits: {why}")
        if not self._swept:
            self._swept = True
            await asyncio.to_thread(clear_leftovers, self.rigs_root / "run", version)
        if not pack_ready(self.packs_root):  # built once, whoever asks first; progress shows in packs()
            await self._builds.run(PACK_NAME, self._ensure_pack, progress)
        pack = await ensure_pack(self.packs_root, progress)
        rig = EnclosureRig(spec, self.rigs_root / "run", version, self.upstream_overrides)
        try:
            await rig.boot(pack.path, progress)
        except BaseException:
            await rig.aclose()
            raise
        return rig

    async def _ensure_pack(self, progress: Callable[[str], None]) -> None:
        await ensure_pack(self.packs_root, progress)

    def packs(self) -> list[PackStatus]:
        state: PackPhase = "ready" if pack_ready(self.packs_root) else "missing"
        return [self._builds.describe(PackStatus(PACK_NAME, "terminal", TOOLSET_REVISION, state))]

    def build_pack(self, name: str) -> None:
        if name != PACK_NAME:
            raise NotFound(f"the enclosure backend has no pack {name!r} (it has {PACK_NAME})")
        if missing_tools() and not pack_ready(self.packs_root):
            raise Unavailable(f"building {PACK_NAME} needs {', '.join(missing_tools())} (Debian package mmdebstrap)")
        if not pack_ready(self.packs_root):
            self._builds.start(PACK_NAME, self._ensure_pack)

    async def aclose(self) -> None:
        await self._builds.aclose()


def _validate(spec: RigSpec) -> None:
    if not _RIG_ID.match(spec.rig_id):
        raise InvalidArgs(f"rig id {spec.rig_id!r} is not a valid id", field="rig_id")
    if spec.surface not in SURFACES:
        raise InvalidArgs(f"the enclosure backend runs {', '.join(sorted(SURFACES))} rigs only", field="surface")
    if not 64 <= spec.memory_mb <= 1024 * 1024:
        raise InvalidArgs("memory_mb must be at least 64", field="memory_mb")
    if not 1 <= spec.vcpus <= 256:
        raise InvalidArgs("vcpus must be between 1 and 256", field="vcpus")
    validate_patterns(spec.allow_hosts, "allow_hosts")
    for name, path in (("home_dir", spec.home_dir), ("worktree", spec.worktree)):
        if path is not None and not path.is_absolute():
            raise InvalidArgs(f"{name} must be an absolute host path", field=name)
