"""The server owner's one-time sign-in link: ``<web client>/#signin=<code>``, the way into a new install.

``hangar serve`` prints one while the owner has never signed in (the first start of a data directory, and every
start until they do), and ``hangar admin sign-in-link`` prints a new one at any time. The code inside is a
sign-in link code (``hangar.identity.pairing``): single-use, 15 minutes, stored hashed; the web client redeems
it at ``POST /auth/pair`` for a device credential of the owner, asking first where the browser is signed in
already. It rides in the URL fragment, which browsers never send: not to the server's logs, not in a Referer.

The command line runs in a process of its own, beside a server on the same data directory: the code it mints
is in the shared database, so the running server honours it at once. The link's address is the one the last
server started on the data directory recorded (``<dataDir>/sign-in-origin``), unless ``--url`` names another.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from hangar.core.commandline import hangar_command
from hangar.core.fileio import write_private_atomic

if TYPE_CHECKING:
    from hangar.config import Settings
    from hangar.core.context import AppContext
    from hangar.server.listeners import BackgroundJob

ORIGIN_FILE = "sign-in-origin"
FRAGMENT_KEY = "signin"


def sign_in_link(origin: str, code: str) -> str:
    return f"{origin.rstrip('/')}/#{FRAGMENT_KEY}={code}"


def web_origin(settings: Settings) -> str:
    """Where the owner's browser finds the web client: ``--web-client-url``, else ``--public-url``, else the
    server's own listener as a browser on this host reaches it."""
    from hangar.server.dispatch import listener_origin

    return settings.web_client_url or settings.public_url or listener_origin(settings)


def record_origin(data_dir: Path, origin: str) -> None:
    write_private_atomic(data_dir / ORIGIN_FILE, f"{origin}\n".encode())


def recorded_origin(data_dir: Path) -> str | None:
    """The origin the last server on ``data_dir`` recorded; None when none did (or the file is not one)."""
    try:
        text = (data_dir / ORIGIN_FILE).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    if not text.startswith(("http://", "https://")) or any(c.isspace() for c in text):
        return None
    return text


def new_link_command(data_dir: Path) -> str:
    return hangar_command("admin", "sign-in-link", "--data-dir", data_dir)


async def mint_owner_link(ctx: AppContext, origin: str) -> str:
    """A new sign-in link of the server owner (created on first use, as ``owner-token`` does)."""
    from hangar.identity import IdentityService, Pairing

    owner = await ctx.service(IdentityService).ensure_server_owner()
    return sign_in_link(origin, await ctx.service(Pairing).mint_sign_in_code(owner.id))


async def owner_signed_in(ctx: AppContext) -> bool:
    """Whether the server owner holds a live device credential (has signed in somewhere)."""
    from hangar.identity import IdentityService

    identity = ctx.service(IdentityService)
    owner_id = (await identity.server_authority()).owner_id
    if owner_id is None:
        return False
    return any(device.revoked_at is None for device in await identity.list_devices(owner_id))


def first_sign_in_job(ready: list[AppContext], settings: Settings) -> BackgroundJob:
    """Once the server listens: where it is recorded for ``sign-in-link``, and, while the owner has never signed
    in, a sign-in link printed; the commands that print another link and an owner credential (for scripts) are
    printed at every start, as a shell here runs them."""

    async def announce() -> None:
        origin = web_origin(settings)
        record_origin(settings.data_dir, origin)
        ctx = ready[0]
        if not await owner_signed_in(ctx):
            link = await mint_owner_link(ctx, origin)
            typer.echo(f"sign-in link (the server owner's; works once, within 15 minutes): {link}")
        typer.echo(f"new sign-in link: {new_link_command(settings.data_dir)}")
        owner_token = hangar_command("admin", "owner-token", "--data-dir", settings.data_dir)
        typer.echo(f"owner credential (for scripts): {owner_token}")

    return announce
