"""The ``enclosure`` backend: rigs as Linux namespaces (bubblewrap) over an image pack: the terminal pack, for a
browser rig its engine's pack with the engine booted inside (``backends.engineboot``), for a computer rig the
desktop pack with Xvfb and its window manager started inside (``backends.desktopboot``)."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import ClassVar

from hangar.core.beneath import NotBeneath, parts_of
from hangar.core.metrics import Metrics, Stopwatch
from hangar.errors import HangarError, InvalidArgs, NotFound, Unavailable
from hangar.rigs.backends.base import RigBackend, RigHandle, RigSpec
from hangar.rigs.backends.desktopboot import boot_desktop
from hangar.rigs.backends.enclosure import probe
from hangar.rigs.backends.enclosure.cgroups import detect
from hangar.rigs.backends.enclosure.leftovers import clear_leftovers
from hangar.rigs.backends.enclosure.rig import EnclosureRig
from hangar.rigs.backends.engineboot import boot_engine, check_public_pem
from hangar.rigs.egress.allowlist import validate_patterns
from hangar.rigs.engines.launch import EngineRecipe
from hangar.rigs.engines.registry import RECIPES
from hangar.rigs.images import recipes, refresh, versions
from hangar.rigs.images.builder import (
    TERMINAL,
    PackRecipe,
    build_under_way,
    ensure_pack,
    missing_tools,
    pack_ready,
    rebuild_pack,
)
from hangar.rigs.images.packs import PackBuilds, PackStatus, with_step

log = logging.getLogger(__name__)

_RIG_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
STOPPED = "the rebuild stopped before it finished (its server stopped); it is tried again at the next check"
SURFACES = frozenset({"terminal", "browser", "computer"})
DEFAULT_DISPLAY = (1280, 800)


class EnclosureBackend(RigBackend):
    """Rigs under ``<rigs_root>/run/``; the image pack under ``packs_root`` (default
    ``<rigs_root>/microvm-packs``). ``upstream_overrides`` ("name:port" -> (address, port)) is for tests: it
    lets the egress gate reach test servers on host loopback under allow-listed names; ``apt_root`` is where the
    Debian mirrors packs are built from are configured (None: ``/etc/apt``)."""

    name: ClassVar[str] = "enclosure"

    def __init__(
        self,
        rigs_root: Path,
        *,
        packs_root: Path | None = None,
        upstream_overrides: Mapping[str, tuple[str, int]] | None = None,
        tool_path: str | None = None,
        metrics: Metrics | None = None,
        apt_root: Path | None = None,
    ) -> None:
        self.rigs_root = rigs_root
        self.apt_root = apt_root
        self.metrics = metrics or Metrics(enabled=False)  # the server's: pack builds are counted
        self.packs_root = packs_root or rigs_root / "microvm-packs"
        self.upstream_overrides = dict(upstream_overrides or {})
        self._tool_path = tool_path  # where host tools are looked up (None: $PATH)
        self._reason: str | None = None
        self._probed = False
        self._swept = False
        self._builds = PackBuilds()
        # Stale packs are built again one at a time: a refresh finds every pack stale at once when the archive
        # publishes (a weekly security release), and six image builds side by side would take a small host's
        # every core from the rigs it runs. The others wait their turn, recorded as refreshing.
        self._refresh_turn = asyncio.Lock()

    def unavailable_reason(self) -> str | None:
        if not self._probed:
            self._reason = probe.host_reason(path=self._tool_path)
            if self._reason is None and not pack_ready(self.packs_root) and (missing := missing_tools()):
                self._reason = f"the terminal image is not built yet and building it needs {', '.join(missing)}"
            self._probed = True
        # Who holds the rig user's uid can change while the server runs: asked afresh each time.
        return self._reason or probe.rig_uid_taken()

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
        engine = _engine_recipe(spec)
        pack_recipe = _pack_recipe(spec, engine)
        if not pack_ready(self.packs_root, pack_recipe):  # built once, whoever asks first; progress in packs()
            try:
                await self._builds.run(pack_recipe.name, self._builder(pack_recipe), progress)
            except HangarError as exc:
                # Said where the rig or the job that waited for it reports; the next one to need it builds again.
                raise Unavailable(
                    f"the {pack_recipe.label} could not be built: {exc.message} (it is built again when next needed)"
                ) from exc
        await ensure_pack(self.packs_root, progress, pack_recipe, self.apt_root)
        # The rig holds the version it boots from for its life: a newer version put in place meanwhile serves the
        # rigs that start after it, and this one is removed once no rig holds it (``versions``).
        held = await asyncio.to_thread(versions.hold, self.packs_root, pack_recipe.name)
        rig = EnclosureRig(spec, self.rigs_root / "run", version, self.upstream_overrides)
        rig.pack = held
        try:
            await rig.boot(held.path, progress)
            if engine is not None:
                progress(f"starting {engine.engine}")
                rig.engine = await boot_engine(
                    rig,
                    engine,
                    display=spec.display or DEFAULT_DISPLAY,
                    home_url=recipes.HOME_URL,
                    trust_pem=spec.trust_pem,
                )
                progress(f"{engine.engine} ready")
            if spec.surface == "computer":
                progress("starting the desktop")
                rig.desktop_session = await boot_desktop(rig, spec.display or DEFAULT_DISPLAY)
                progress("desktop ready")
        except BaseException:
            await rig.aclose()
            raise
        return rig

    def _builder(self, recipe: PackRecipe) -> Callable[[Callable[[str], None]], Awaitable[None]]:
        async def build(progress: Callable[[str], None]) -> None:
            clock = Stopwatch()
            try:
                info = await ensure_pack(self.packs_root, progress, recipe, self.apt_root)
            except Exception:
                self.metrics.pack_built(False, clock.seconds())
                raise
            if info.built_in_s is not None:  # built by this call, not found ready or built by another process
                self.metrics.pack_built(True, info.built_in_s)

        return build

    def _refresher(
        self, recipe: PackRecipe, latest: dict[str, datetime], checked: refresh.Record
    ) -> Callable[[Callable[[str], None]], Awaitable[None]]:
        """A rebuild of a ready pack whose archive moved on; its outcome is recorded beside the pack."""

        async def build(progress: Callable[[str], None]) -> None:
            refresh.write_record(self.packs_root, recipe, replace(checked, state="refreshing"))
            clock = Stopwatch()
            try:
                async with self._refresh_turn:
                    clock = Stopwatch()
                    took = await rebuild_pack(
                        self.packs_root,
                        recipe,
                        lambda: refresh.still_stale(self.packs_root, recipe, latest),
                        progress,
                        self.apt_root,
                    )
            except asyncio.CancelledError:  # the server stops: tried again at the next pass, wherever it runs
                stopped = replace(checked, state="failed", checked_at=None, finished_at=refresh.now(), error=STOPPED)
                refresh.write_record(self.packs_root, recipe, stopped)
                raise
            except Exception as exc:
                self.metrics.pack_built(False, clock.seconds())
                why = str(getattr(exc, "message", None) or exc)
                log.error("rigs: pack %s could not be refreshed (the old one keeps serving): %s", recipe.name, why)
                failed = replace(checked, state="failed", finished_at=refresh.now(), error=why)
                refresh.write_record(self.packs_root, recipe, failed)
                raise
            if took is not None:
                self.metrics.pack_built(True, took)
            log.info("rigs: pack %s refreshed: %s released since it was built", recipe.name, ", ".join(checked.newer))
            done = replace(checked, state="refreshed", finished_at=refresh.now())
            refresh.write_record(self.packs_root, recipe, done)

        return build

    def _record(self, recipe: PackRecipe, *, building: bool) -> refresh.Record | None:
        """The pack's last refresh, as recorded; a rebuild recorded as under way that no process is building was
        stopped before it finished (its server stopped or was killed): failed, and due at the next pass."""
        record = refresh.read_record(self.packs_root, recipe)
        if record is None or record.state != "refreshing" or building:
            return record
        return replace(record, state="failed", checked_at=None, error=STOPPED)

    async def refresh_packs(self, due: Callable[[refresh.Record | None], bool]) -> None:
        """Check each ready pack that is ``due`` against its archive and build the stale ones again in the
        background; then remove the old versions no rig boots from any more."""
        for recipe in recipes.ALL:
            if not pack_ready(self.packs_root, recipe) or self._builds.running(recipe.name):
                continue
            if build_under_way(self.packs_root, recipe) is not None:
                continue  # another process builds it: its record says how that went
            if not due(self._record(recipe, building=False)):
                continue
            stale = await refresh.check(self.packs_root, recipe)
            if stale is None:
                continue
            checked = refresh.Record("refreshing", refresh.now(), None, None, stale.newer)
            log.info(
                "rigs: pack %s is older than its archive (%s released since): building it again",
                recipe.name,
                ", ".join(stale.newer),
            )
            self._builds.start(recipe.name, self._refresher(recipe, stale.latest, checked))
        await self.sweep_packs()

    async def sweep_packs(self) -> None:
        for recipe in recipes.ALL:
            await asyncio.to_thread(versions.sweep, self.packs_root, recipe.name)

    def packs(self) -> list[PackStatus]:
        views = []
        for recipe in recipes.ALL:
            pack = PackStatus(
                recipe.name, recipe.surface, recipe.revision, "missing", label=recipe.label, engine=recipe.engine
            )
            under_way = build_under_way(self.packs_root, recipe)
            if pack_ready(self.packs_root, recipe):
                pack = replace(
                    pack,
                    state="ready",
                    built=refresh.built(self.packs_root, recipe),
                    refresh=self._record(recipe, building=under_way is not None or self._builds.running(recipe.name)),
                )
                if under_way is not None:  # built again by another process; this one still serves
                    pack = with_step(pack, under_way)
            elif under_way is not None:
                # Built by another process sharing the packs (the server's first start, `hangar rigs build-pack`,
                # another server): its step is read from the build's progress file.
                pack = with_step(replace(pack, state="building"), under_way)
            views.append(self._builds.describe(pack))
        return views

    def build_pack(self, name: str) -> None:
        names = ", ".join(r.name for r in recipes.ALL)
        try:
            recipe = recipes.recipe_named(name)
        except NotFound:
            raise NotFound(f"the enclosure backend has no pack {name!r} (it has {names})") from None
        if pack_ready(self.packs_root, recipe):
            return
        if missing := missing_tools():
            raise Unavailable(f"building {name} needs {', '.join(missing)}")
        self._builds.start(name, self._builder(recipe))

    async def aclose(self) -> None:
        await self._builds.aclose()


def _pack_recipe(spec: RigSpec, engine: EngineRecipe | None) -> PackRecipe:
    if engine is not None and spec.engine:
        return recipes.BROWSERS[spec.engine]
    return recipes.DESKTOP if spec.surface == "computer" else TERMINAL


def _engine_recipe(spec: RigSpec) -> EngineRecipe | None:
    """The recipe of a browser rig's engine (None for other surfaces). An engine without a pack is refused;
    one whose client this server lacks cannot boot."""
    if spec.surface != "browser":
        if spec.engine is not None:
            raise InvalidArgs(f"the {spec.surface} surface has no engines", field="engine")
        return None
    if spec.engine not in recipes.BROWSERS:
        raise InvalidArgs(f"engine must be one of {', '.join(recipes.BROWSERS)}, not {spec.engine!r}", field="engine")
    recipe = RECIPES.get(spec.engine)
    if recipe is None:
        raise Unavailable(f"this server has no client for {spec.engine} yet, so it cannot boot one")
    return recipe


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
    if spec.trust_pem is not None:
        check_public_pem(spec.trust_pem)
    if spec.display is not None and not all(240 <= side <= 7680 for side in spec.display):
        raise InvalidArgs("display sides must be between 240 and 7680 pixels", field="display")
    tree = spec.worktree.folder if spec.worktree is not None else None
    for name, path in (("home_dir", spec.home_dir), ("worktree", tree)):
        if path is not None and not path.is_absolute():
            raise InvalidArgs(f"{name} must be an absolute host path", field=name)
    if spec.worktree is not None:
        try:
            parts_of(spec.worktree.beneath)
        except NotBeneath:
            raise InvalidArgs("worktree must lie beneath its folder", field="worktree") from None
