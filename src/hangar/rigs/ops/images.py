"""Desktop images for full-VM rigs, for the server owner (Settings, Server, Rigs): ``rigs.images`` lists the
imported ones, ``rigs.importImage`` imports one after checking it (``backends.fullvm.imports``)."""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, StrictStr

from hangar.core.disks import DEFAULT_RIG_DISK_MB, ScopeDisks
from hangar.core.part import OpFunction
from hangar.core.types import rfc3339
from hangar.errors import Unavailable
from hangar.rigs.backends.fullvm import imports
from hangar.rigs.ops.rig import manager
from hangar.rigs.results import ImageView
from hangar.rpc.context import OpContext
from hangar.rpc.registry import Args, NoArgs, op

log = logging.getLogger(__name__)


def _view(image: imports.ImportedImage) -> ImageView:
    return ImageView(
        image_id=image.image_id,
        name=image.name,
        sha256=image.sha256,
        file_bytes=image.file_bytes,
        virtual_bytes=image.virtual_bytes,
        imported_at=datetime.fromisoformat(image.imported_at),
        accelerator=image.accelerator,
        boot_seconds=image.boot_seconds,
    )


def _rigs_root(ctx: OpContext) -> Path:
    return ctx.app.datadir.sub("rigs")


@op("rigs.images", kind="read", scope="server", server_owner=True)
async def rigs_images(ctx: OpContext, args: NoArgs) -> list[ImageView]:
    """The desktop images imported for full-VM rigs, newest first."""
    return [_view(i) for i in await asyncio.to_thread(imports.list_images, _rigs_root(ctx))]


class ImportImageArgs(Args):
    source: StrictStr = Field(
        min_length=1, max_length=4096, description="an absolute path on the server's host or an http(s) URL"
    )
    sha256: StrictStr = Field(min_length=1, max_length=100, description="the image's SHA-256, 64 hexadecimal digits")
    name: StrictStr = Field(min_length=1, max_length=80)
    backend: Literal["fullvm-kvm", "fullvm-tcg"] = Field(
        default="fullvm-kvm", description="the accelerator the boot check runs under (fullvm-tcg only when asked)"
    )
    boot_deadline_s: Annotated[int, Field(ge=10, le=1800, strict=True)] = Field(
        default=int(imports.BOOT_DEADLINE_S), alias="bootDeadlineS"
    )


@op("rigs.importImage", kind="mutate", scope="server", server_owner=True, actions=["networkEgress"])
async def rigs_import_image(ctx: OpContext, args: ImportImageArgs) -> ImageView:
    """Import a qcow2 desktop image: copied or downloaded, its SHA-256 checked, its header read (qcow2, no
    backing or data file, a virtual size within bounds), booted until its guest agent answers; then stored under
    ``rigs/images/`` and offered. Each refusal says which check failed; nothing is kept from a refused image."""
    if args.backend == "fullvm-kvm":
        verdict = await manager(ctx).kvm.verdict()
        if not verdict.usable:
            raise Unavailable(
                f"fullvm-kvm cannot run on this host ({verdict.reason}); ask for fullvm-tcg to check the image "
                "without KVM (much slower)"
            )
    image = await imports.import_image(
        _rigs_root(ctx),
        source=args.source,
        sha256=args.sha256,
        name=args.name,
        backend=args.backend,
        now=rfc3339(ctx.app.clock.now()),
        boot_deadline_s=float(args.boot_deadline_s),
        progress=ctx.report,
        data_dir=ctx.app.datadir.root,
        disk_mb=await disks.rig_disk_mb() if (disks := ctx.app.maybe_service(ScopeDisks)) else DEFAULT_RIG_DISK_MB,
    )
    log.info("rigs: image %s (%s) imported by %s", image.image_id, image.name, ctx.principal.label)
    return _view(image)


OPS: list[OpFunction] = [rigs_images, rigs_import_image]
