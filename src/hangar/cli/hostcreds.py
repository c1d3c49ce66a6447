"""``hangar admin worker-credential`` and ``hangar admin rig-host-credential``: mint, list and revoke the
credentials of one role (``hangar.core.hostcreds``), the same three commands for each."""

from __future__ import annotations

import asyncio
import ipaddress
import os
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from hangar.cli.root import DatabaseUrlOpt, DataDirOpt, settings_from
from hangar.errors import HangarError

if TYPE_CHECKING:
    from contextlib import AbstractAsyncContextManager

    from hangar.config import Settings
    from hangar.core.context import AppContext
    from hangar.core.hostcreds import CredentialKind
    from hangar.core.part import Part


# The options every kind's ``create`` takes.
NameOpt = Annotated[str, typer.Option("--name", help="What the credential is for (1 to 100 characters).")]
ToOpt = Annotated[
    Path | None, typer.Option("--to", help="Write the credential to this new file (0600) instead of stdout.")
]


def refuse(message: str) -> typer.Exit:
    typer.echo(message, err=True)
    return typer.Exit(1)


def loopback(host: str) -> bool:
    """Whether ``host`` (a URL's hostname) is this machine's own: the only place a host process of a role sends
    its credential over plain http, where it cannot cross the network in clear."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def read_credential(credential_file: Path | None, variable: str, label: str, command: str) -> str:
    """The credential a process of a role starts with: from ``credential_file``, else the environment's
    ``variable`` (taken out of it once read, so nothing the process starts inherits it); refused in one line when
    neither holds one."""
    text = os.environ.pop(variable, None)
    if credential_file is not None:
        try:
            text = credential_file.read_text().strip()
        except OSError as exc:
            raise refuse(f"cannot read the {label} file {credential_file}: {exc.strerror}") from None
    if not text:
        raise refuse(f"{command} needs a {label}: --credential-file F or ${variable}")
    return text


def _context(settings: Settings, parts: Callable[[], list[Part]]) -> AbstractAsyncContextManager[AppContext]:
    from hangar.server.context_factory import open_context

    return open_context(settings, parts=parts())


def mint_and_show(
    settings: Settings,
    kind: CredentialKind,
    parts: Callable[[], list[Part]],
    name: str,
    to: Path | None,
    limits: Callable[[AppContext], Awaitable[Mapping[str, Any]]] | None = None,
) -> None:
    """Mint a credential of ``kind`` (with the ``limits`` found for it, checked, in the same context) and show its
    text once, or write it to ``to`` (0600); a refusal in one line, exit 1."""
    from hangar.core import hostcreds
    from hangar.core.fileio import write_private_atomic

    async def run() -> tuple[str, str]:
        async with _context(settings, parts) as ctx:
            found = await limits(ctx) if limits is not None else None
            cred, text = await hostcreds.mint(kind, ctx.dbs.server, name, ctx.clock.now(), found)
            return cred.id, text

    try:
        cred_id, text = asyncio.run(run())
    except HangarError as exc:
        raise refuse(exc.message) from None
    if to is None:
        typer.echo(text)
    else:
        write_private_atomic(to, (text + "\n").encode())
        typer.echo(f"{kind.label} {cred_id} written to {to}")


def credential_app(
    *,
    help_text: str,
    kind: Callable[[], CredentialKind],
    parts: Callable[[], list[Part]],
    check: Callable[[Settings], None] = lambda _settings: None,
    revoke_says: str,
    create: bool = True,
) -> typer.Typer:
    """The commands for ``kind``'s credentials, whose tables ``parts`` migrate; ``check`` refuses an install the
    role cannot serve (raising ``typer.Exit``) before a credential is minted. Without ``create`` the kind adds a
    ``create`` of its own (one with options for its limits, calling ``mint_and_show``)."""
    cmds = typer.Typer(help=help_text, no_args_is_help=True)

    def context(settings: Settings) -> AbstractAsyncContextManager[AppContext]:
        return _context(settings, parts)

    def create_cmd(
        name: NameOpt,
        to: ToOpt = None,
        data_dir: DataDirOpt = None,
        database_url: DatabaseUrlOpt = None,
    ) -> None:
        """Mint a credential: shown (or written) once; the database keeps only its hash."""
        settings = settings_from(data_dir=data_dir, database_url=database_url)
        check(settings)
        mint_and_show(settings, kind(), parts, name, to)

    if create:
        cmds.command("create")(create_cmd)

    @cmds.command("list")
    def list_cmd(data_dir: DataDirOpt = None, database_url: DatabaseUrlOpt = None) -> None:
        """The credentials minted: id, name, when, and whether revoked."""
        from hangar.core import hostcreds

        settings = settings_from(data_dir=data_dir, database_url=database_url)

        async def run() -> list[str]:
            async with context(settings) as ctx:
                said = kind().describe
                return [
                    f"{c.id}  {c.name}  {c.created_at.isoformat(timespec='seconds')}"
                    + (f"  ({said(c)})" if said is not None else "")
                    + (f"  revoked {c.revoked_at.isoformat(timespec='seconds')}" if c.revoked_at else "")
                    for c in await hostcreds.listed(kind(), ctx.dbs.server)
                ]

        for line in asyncio.run(run()) or [f"no {kind().label} was minted"]:
            typer.echo(line)

    @cmds.command("revoke", help=f"Revoke a credential: {revoke_says}")
    def revoke_cmd(
        credential_id: Annotated[str, typer.Argument(help="The credential's id (… list).")],
        data_dir: DataDirOpt = None,
        database_url: DatabaseUrlOpt = None,
    ) -> None:
        from hangar.core import hostcreds

        settings = settings_from(data_dir=data_dir, database_url=database_url)

        async def run() -> str:
            async with context(settings) as ctx:
                return (await hostcreds.revoke(kind(), ctx.dbs.server, credential_id, ctx.clock.now())).name

        try:
            name = asyncio.run(run())
        except HangarError as exc:
            raise refuse(exc.message) from None
        typer.echo(f"{kind().label} {credential_id} ({name}) is revoked")

    return cmds
