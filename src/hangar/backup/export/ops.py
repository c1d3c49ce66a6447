"""``workspaces.export``: a signed, short-lived URL that downloads the workspace's export (``routes``)."""

from __future__ import annotations

from datetime import UTC, datetime

from hangar.backup.export.access import check_exporter
from hangar.backup.export.routes import EXPORT_PATH
from hangar.backup.export.signing import ExportSigner
from hangar.core.part import OpFunction
from hangar.rpc.context import OpContext
from hangar.rpc.registry import NoArgs, Result, op


class ExportLink(Result):
    url: str
    expires_at: datetime


# Declared for guests so the server owner, who may hold any role in the workspace, reaches the rule below; the
# rule itself (owner or admin, or the server owner) is ``check_exporter``, checked again at the download.
@op("workspaces.export", kind="read", scope="workspace", min_role="guest", people_only=True)
async def workspaces_export(ctx: OpContext, args: NoArgs) -> ExportLink:
    """A URL (valid for ten minutes, for you only) that downloads this workspace's export: a tar of its records
    as JSON lines and its files, with a manifest and a README. Allowed to the workspace's owner and admins, and
    to the server owner; the download checks that again. For people only: an agent exports nothing."""
    await check_exporter(ctx.app, ctx.ws, ctx.principal.user_id)
    token, exp = ctx.app.service(ExportSigner).mint(ctx.ws, ctx.principal.user_id)
    return ExportLink(
        url=f"{ctx.app.settings.origin}{EXPORT_PATH}?token={token}", expires_at=datetime.fromtimestamp(exp, UTC)
    )


OPS: list[OpFunction] = [workspaces_export]
