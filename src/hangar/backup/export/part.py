"""The workspace transfer part: ``workspaces.export``, its download route and the import's upload route."""

from __future__ import annotations

import asyncio

from hangar.backup.export.dump import SCRATCH
from hangar.backup.export.layout import SPECS
from hangar.backup.export.ops import OPS
from hangar.backup.export.routes import TRANSFER_ROUTES
from hangar.backup.export.signing import ExportSigner
from hangar.backup.export.slots import TransferSlots
from hangar.backup.take import clear_abandoned
from hangar.core.context import AppContext
from hangar.core.part import Part


async def _start(ctx: AppContext) -> None:
    ctx.provide(ExportSigner(ctx.secrets, ctx.clock))
    ctx.provide(TransferSlots())
    # What an export or import left when its process died (a scratch folder names its process).
    await asyncio.to_thread(clear_abandoned, ctx.datadir.root, SCRATCH)


TRANSFER_PART = Part(name="workspace-transfer", ops=OPS, routes=TRANSFER_ROUTES, server_settings=SPECS, start=_start)
