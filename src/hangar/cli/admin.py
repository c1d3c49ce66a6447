"""``hangar admin``: operator tasks on a data directory."""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer

from hangar.cli.root import DataDirOpt, settings_from

admin_app = typer.Typer(help="Operator tasks on a data directory.", no_args_is_help=True)


@admin_app.command("owner-token")
def owner_token(data_dir: DataDirOpt = None) -> None:
    """Print a new device credential for the server owner, creating the owner on first use."""
    from hangar.server.context_factory import open_context

    settings = settings_from(data_dir=data_dir)

    async def run() -> str:
        from hangar.identity import IdentityService
        from hangar.identity.part import IDENTITY_PART

        async with open_context(settings, parts=[IDENTITY_PART]) as ctx:
            owner = await ctx.service(IdentityService).ensure_server_owner()
            return await ctx.service(IdentityService).issue_device(owner.id, "owner-token")

    typer.echo(asyncio.run(run()))


@admin_app.command("trusted-host-exec")
def trusted_host_exec_cmd(
    state: Annotated[str, typer.Argument(help="on or off")],
    data_dir: DataDirOpt = None,
) -> None:
    """Run shell steps and command agents on this host instead of enclosures (single-person installs only).

    Off by default. When on, user-authored code runs as the server's user with access to everything the server
    can reach; every server start says so in its log."""
    from hangar.core.confine import SETTING_TRUSTED_HOST_EXEC
    from hangar.server.context_factory import open_context

    if state not in ("on", "off"):
        raise typer.BadParameter(f"expected on or off, got {state!r}", param_hint="STATE")
    settings = settings_from(data_dir=data_dir)

    async def run() -> None:
        from hangar.identity import IdentityService
        from hangar.identity.part import IDENTITY_PART

        async with open_context(settings, parts=[IDENTITY_PART]) as ctx:
            await ctx.service(IdentityService).set_setting(SETTING_TRUSTED_HOST_EXEC, state == "on")

    asyncio.run(run())
    if state == "on":
        typer.echo("trusted host execution is ON: user code runs on this host as the server's user")
    else:
        typer.echo("trusted host execution is off: user code runs only in enclosures")


@admin_app.command("setting")
def setting_cmd(
    key: Annotated[str | None, typer.Argument(help="a server setting, e.g. rigs.memoryBudgetMb")] = None,
    value: Annotated[str | None, typer.Argument(help='the new value as JSON (8, true, "text")')] = None,
    data_dir: DataDirOpt = None,
) -> None:
    """List the server settings the parts declare (the limits among them), show one, or set one.

    A value is checked by the part that owns the key before it is stored; running servers read it at their next
    use, so nothing restarts."""
    import json

    from hangar.core.part import Part
    from hangar.errors import InvalidArgs
    from hangar.server.context_factory import open_context
    from hangar.server.parts import all_parts

    parts = all_parts()
    known = sorted(s.key for p in parts for s in p.server_settings)
    if key is not None and key not in known:
        raise typer.BadParameter(f"{key!r} is not a server setting (known: {', '.join(known)})", param_hint="KEY")
    parsed: object = None
    if value is not None:
        try:
            parsed = json.loads(value)
        except ValueError:
            raise typer.BadParameter(f"{value!r} is not JSON (a number, true, false or a quoted text)") from None
    settings = settings_from(data_dir=data_dir)
    # The identity part keeps server settings and checks each against its declaration: it is handed the other
    # parts' declarations (the kernel's comes with every context), and none of their services start.
    declared = Part(
        name="declared-settings",
        server_settings=[s for p in parts if p.name not in ("kernel", "identity") for s in p.server_settings],
    )

    async def run() -> list[tuple[str, object]]:
        from hangar.identity import IdentityService
        from hangar.identity.part import IDENTITY_PART

        async with open_context(settings, parts=[IDENTITY_PART, declared]) as ctx:
            identity = ctx.service(IdentityService)
            if key is not None and value is not None:
                await identity.set_setting(key, parsed)
            return [(k, await identity.get_setting(k)) for k in ([key] if key else known)]

    try:
        shown = asyncio.run(run())
    except InvalidArgs as exc:
        raise typer.BadParameter(exc.message, param_hint="VALUE") from None
    for name, current in shown:
        said = "(default)" if current is None else json.dumps(current)
        typer.echo(said if key is not None else f"{name} = {said}")
