"""``hangar admin``: operator tasks on a data directory."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from hangar.cli.dbmigrate import migrate_to_postgresql, set_database_url
from hangar.cli.root import DatabaseUrlOpt, DataDirOpt, command_settings, settings_from
from hangar.cli.secretkey import secret_key_app
from hangar.cli.upgrade import migrate
from hangar.errors import InvalidArgs

if TYPE_CHECKING:
    from sqlalchemy.engine import URL

    from hangar.config import Settings
    from hangar.core.part import Part

admin_app = typer.Typer(help="Operator tasks on a data directory.", no_args_is_help=True)
admin_app.command("migrate-to-postgresql")(migrate_to_postgresql)
admin_app.command("set-database-url")(set_database_url)
admin_app.command("migrate")(migrate)
admin_app.add_typer(secret_key_app, name="secret-key")


@admin_app.command("owner-token")
def owner_token(
    data_dir: DataDirOpt = None,
    database_url: DatabaseUrlOpt = None,
    name: Annotated[
        str, typer.Option("--name", help="The device's name in the owner's list of devices (at most 100 characters)")
    ] = "owner-token",
) -> None:
    """Print a new device credential for the server owner, creating the owner on first use."""
    from hangar.identity.devices import device_name
    from hangar.server.context_factory import open_context

    try:
        name = device_name(name, field="")
    except InvalidArgs as exc:
        raise typer.BadParameter(exc.message, param_hint="--name") from None
    settings = command_settings(data_dir, database_url)

    async def run() -> str:
        from hangar.identity import IdentityService
        from hangar.identity.command_part import IDENTITY_COMMAND_PART

        async with open_context(settings, parts=[IDENTITY_COMMAND_PART]) as ctx:
            owner = await ctx.service(IdentityService).ensure_server_owner()
            return await ctx.service(IdentityService).issue_device(owner.id, name)

    typer.echo(asyncio.run(run()))


@admin_app.command("sign-in-link")
def sign_in_link_cmd(
    url: Annotated[
        str | None,
        typer.Option(
            "--url",
            help="Where browsers reach the web client (default: the address the last server started on this data "
            "directory announced).",
        ),
    ] = None,
    data_dir: DataDirOpt = None,
    database_url: DatabaseUrlOpt = None,
) -> None:
    """Print a one-time sign-in link for the server owner (it works once, within 15 minutes), creating the owner
    on first use. Opened in a browser, it signs that browser in as the owner; a running server honours it at once."""
    from hangar.cli.signin import mint_owner_link, recorded_origin, web_origin
    from hangar.server.context_factory import open_context

    if url is not None and not url.startswith(("http://", "https://")):
        raise typer.BadParameter(f"{url!r} must start with http:// or https://", param_hint="--url")
    settings = command_settings(data_dir, database_url)
    origin = url or recorded_origin(settings.data_dir) or web_origin(settings)

    async def run() -> str:
        from hangar.identity.command_part import IDENTITY_COMMAND_PART

        async with open_context(settings, parts=[IDENTITY_COMMAND_PART]) as ctx:
            return await mint_owner_link(ctx, origin)

    typer.echo(asyncio.run(run()))
    typer.echo("it works once, within 15 minutes: open it in the browser you will use", err=True)


@admin_app.command("trusted-host-exec")
def trusted_host_exec_cmd(
    state: Annotated[str, typer.Argument(help="on or off")],
    data_dir: DataDirOpt = None,
    database_url: DatabaseUrlOpt = None,
) -> None:
    """Run shell steps and command agents on this host instead of enclosures (single-person installs only).

    Off by default. When on, user-authored code runs as the server's user with access to everything the server
    can reach; every server start says so in its log."""
    from hangar.core.confine import SETTING_TRUSTED_HOST_EXEC
    from hangar.server.context_factory import open_context

    if state not in ("on", "off"):
        raise typer.BadParameter(f"expected on or off, got {state!r}", param_hint="STATE")
    settings = command_settings(data_dir, database_url)

    async def run() -> None:
        from hangar.identity import IdentityService
        from hangar.identity.command_part import IDENTITY_COMMAND_PART

        async with open_context(settings, parts=[IDENTITY_COMMAND_PART]) as ctx:
            await ctx.service(IdentityService).set_setting(SETTING_TRUSTED_HOST_EXEC, state == "on")

    asyncio.run(run())
    if state == "on":
        typer.echo("trusted host execution is ON: user code runs on this host as the server's user")
    else:
        typer.echo("trusted host execution is off: user code runs only in enclosures")


def _declared_settings() -> tuple[list[str], Part]:
    """Every server setting the parts declare (their keys), and a part that declares them all and starts nothing.

    The identity part keeps server settings and checks each against its declaration: it is handed the other
    parts' declarations (the kernel's comes with every context), and none of their services start."""
    from hangar.core.part import Part
    from hangar.server.parts import all_parts

    parts = all_parts()
    known = sorted(s.key for p in parts for s in p.server_settings)
    declared = Part(
        name="declared-settings",
        server_settings=[s for p in parts if p.name not in ("kernel", "identity") for s in p.server_settings],
    )
    return known, declared


def _list_setting(
    key: str, values: list[str] | None, clear: bool, data_dir: Path | None, database_url: str | None, hint: str
) -> list[str]:
    """Replace the list setting ``key`` with ``values`` (or with none: ``clear``) and return what it holds now;
    without either, only read it."""
    from hangar.server.context_factory import open_context

    if clear and values:
        raise typer.BadParameter(f"give {hint.lower()} or --clear, not both", param_hint=hint)
    settings = command_settings(data_dir, database_url)
    _known, declared = _declared_settings()

    async def run() -> list[str]:
        from hangar.identity import IdentityService
        from hangar.identity.command_part import IDENTITY_COMMAND_PART

        async with open_context(settings, parts=[IDENTITY_COMMAND_PART, declared]) as ctx:
            identity = ctx.service(IdentityService)
            if clear or values:
                await identity.set_setting(key, list(values or []))
            current = await identity.get_setting(key)
            return [str(v) for v in current] if isinstance(current, list) else []

    try:
        return asyncio.run(run())
    except InvalidArgs as exc:
        raise typer.BadParameter(exc.message, param_hint=hint) from None


@admin_app.command("local-repo-roots")
def local_repo_roots_cmd(
    folders: Annotated[list[Path] | None, typer.Argument(help="absolute folders; none: show the current ones")] = None,
    clear: Annotated[bool, typer.Option("--clear", help="name no folder (only the owner registers by path)")] = False,
    data_dir: DataDirOpt = None,
    database_url: DatabaseUrlOpt = None,
) -> None:
    """Folders whose git repositories workspace admins may register by path or file:// URL.

    The clone runs as the server, so by default only the server owner registers a repository on this machine's
    disk; admins register clone URLs. Repositories under the folders named here are open to admins too."""
    from hangar.workspace.sources import SETTING_LOCAL_REPO_ROOTS

    named = [str(f.expanduser().absolute()) for f in folders] if folders else None
    roots = _list_setting(SETTING_LOCAL_REPO_ROOTS, named, clear, data_dir, database_url, "FOLDERS")
    if roots:
        typer.echo("workspace admins may register repositories under: " + ", ".join(roots))
    else:
        typer.echo("no folder is named: only the server owner registers repositories by path or file:// URL")


@admin_app.command("trusted-repo-hosts")
def trusted_repo_hosts_cmd(
    hosts: Annotated[list[str] | None, typer.Argument(help="host names or addresses; none: show them")] = None,
    clear: Annotated[bool, typer.Option("--clear", help="name no host (ssh URLs are the owner's only)")] = False,
    data_dir: DataDirOpt = None,
    database_url: DatabaseUrlOpt = None,
) -> None:
    """Hosts whose repositories workspace admins may register over ssh and reach at private addresses.

    The clone runs as the server, so by default only the server owner registers an ssh URL (it is fetched with
    this server's SSH keys and agent) or one whose host is on the private network; admins register https:// URLs
    of public hosts. For the hosts named here admins may do both; loopback, this host's own addresses and the
    metadata service stay refused."""
    from hangar.workspace.sources import SETTING_TRUSTED_REPO_HOSTS

    named = _list_setting(SETTING_TRUSTED_REPO_HOSTS, hosts, clear, data_dir, database_url, "HOSTS")
    if named:
        typer.echo("workspace admins may register ssh URLs of, and reach private addresses of: " + ", ".join(named))
    else:
        typer.echo("no host is named: only the server owner registers ssh URLs or repositories on private networks")


@admin_app.command("trusted-model-hosts")
def trusted_model_hosts_cmd(
    hosts: Annotated[
        list[str] | None, typer.Argument(help="host names or addresses, each with an optional :port; none: show them")
    ] = None,
    clear: Annotated[bool, typer.Option("--clear", help="name no host (admins' agents reach public hosts)")] = False,
    data_dir: DataDirOpt = None,
    database_url: DatabaseUrlOpt = None,
) -> None:
    """Hosts the model endpoints of workspace admins' agents may reach at private and at this host's addresses.

    An agent's turns are requests the server makes, so by default a workspace admin's agent reaches only public
    addresses; the server owner's reach any. For the hosts named here (at the port given, or at every port) an
    admin's agent may reach the private network and this host's loopback and own addresses too: a model served on
    this machine (127.0.0.1:11434 for Ollama). Link-local and metadata addresses, and the ports this server listens
    on, stay refused."""
    from hangar.agents.endpoints import SETTING_TRUSTED_MODEL_HOSTS

    named = _list_setting(SETTING_TRUSTED_MODEL_HOSTS, hosts, clear, data_dir, database_url, "HOSTS")
    if named:
        typer.echo(
            "workspace admins' agents may reach model endpoints at private and local addresses of: " + ", ".join(named)
        )
    else:
        typer.echo("no host is named: workspace admins' agents reach model endpoints at public addresses only")


@admin_app.command("trusted-forge-hosts")
def trusted_forge_hosts_cmd(
    hosts: Annotated[
        list[str] | None, typer.Argument(help="host names or addresses, each with an optional :port; none: show them")
    ] = None,
    clear: Annotated[
        bool, typer.Option("--clear", help="name no host (admins' forge connections reach public hosts)")
    ] = False,
    data_dir: DataDirOpt = None,
    database_url: DatabaseUrlOpt = None,
) -> None:
    """Hosts whose forge API workspace admins' forge connections may reach at private and at this host's addresses.

    The forge's API is called by the server (checking the connection, its status, minting and revoking tokens), so
    by default a workspace admin's connection reaches only public addresses; the server owner's reach any. For the
    hosts named here (at the port given, or at every port) an admin's connection may reach the private network and
    this host's loopback and own addresses too: a GitHub Enterprise Server on the LAN. Link-local and metadata
    addresses, and the ports this server listens on, stay refused."""
    from hangar.forges.reach import SETTING_TRUSTED_FORGE_HOSTS

    named = _list_setting(SETTING_TRUSTED_FORGE_HOSTS, hosts, clear, data_dir, database_url, "HOSTS")
    if named:
        typer.echo("workspace admins' forge connections may reach private and local addresses of: " + ", ".join(named))
    else:
        typer.echo("no host is named: workspace admins' forge connections reach public addresses only")


@admin_app.command("setting")
def setting_cmd(
    key: Annotated[str | None, typer.Argument(help="a server setting, e.g. rigs.memoryBudgetMb")] = None,
    value: Annotated[str | None, typer.Argument(help='the new value as JSON (8, true, "text")')] = None,
    data_dir: DataDirOpt = None,
    database_url: DatabaseUrlOpt = None,
) -> None:
    """List the server settings the parts declare (the limits among them), show one, or set one.

    A value is checked by the part that owns the key before it is stored; running servers read it at their next
    use, so nothing restarts."""
    import json

    from hangar.server.context_factory import open_context

    known, declared = _declared_settings()
    if key is not None and key not in known:
        raise typer.BadParameter(f"{key!r} is not a server setting (known: {', '.join(known)})", param_hint="KEY")
    parsed: object = None
    if value is not None:
        try:
            parsed = json.loads(value)
        except ValueError:
            raise typer.BadParameter(f"{value!r} is not JSON (a number, true, false or a quoted text)") from None
    settings = command_settings(data_dir, database_url)

    async def run() -> list[tuple[str, object]]:
        from hangar.identity import IdentityService
        from hangar.identity.command_part import IDENTITY_COMMAND_PART

        async with open_context(settings, parts=[IDENTITY_COMMAND_PART, declared]) as ctx:
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


PassphraseOpt = Annotated[
    Path | None,
    typer.Option(
        "--passphrase-file",
        help="A file whose first line is the passphrase (8 to 1024 bytes); else $HANGAR_BACKUP_PASSPHRASE, if set.",
    ),
]


def _refuse(message: str) -> typer.Exit:
    """A refusal: one sentence on stderr and exit 1."""
    typer.echo(message, err=True)
    return typer.Exit(1)


@admin_app.command("backup")
def backup_cmd(
    to: Annotated[Path, typer.Option("--to", help="The backup file to write (its folder must exist).")],
    data_dir: DataDirOpt = None,
    without_files: Annotated[
        bool, typer.Option("--without-files", help="Leave out repositories, spaces and worktrees.")
    ] = False,
    passphrase_file: PassphraseOpt = None,
    database_url: DatabaseUrlOpt = None,
) -> None:
    """Back up a data directory, while its server runs: every database (on PostgreSQL, a pg_dump of Hangar's
    schemas), the secrets and settings, and the workspaces' files. The file appears at --to only when complete
    (mode 0600)."""
    from hangar.backup import BackupRefused, read_passphrase, source_for, take_backup
    from hangar.core.datadir import DataDir

    settings = settings_from(data_dir=data_dir, database_url=database_url)
    try:
        passphrase = read_passphrase(passphrase_file, settings.backup_passphrase)
        url = _records_url(settings)
        taken = take_backup(
            source_for(DataDir(settings.data_dir), url, bindir=settings.pg_bindir),
            to,
            settings.data_dir,
            passphrase=passphrase,
            without_files=without_files,
        )
    except BackupRefused as exc:
        raise _refuse(exc.message) from None
    sealed = ", encrypted" if passphrase is not None else ""
    typer.echo(f"backed up {taken.items} items to {taken.path} ({taken.size} bytes{sealed}) in {taken.seconds:.1f} s")


def _records_url(settings: Settings) -> URL | None:
    """The PostgreSQL database the data directory keeps its records in, with the password given, or None for
    SQLite files; ``BackupRefused`` when the URL given contradicts the recorded one."""
    from hangar.backup import BackupRefused
    from hangar.core.dblocation import database_for
    from hangar.errors import HangarError

    try:
        url = database_for(settings.data_dir.expanduser().absolute(), settings.given_database_url)
    except HangarError as exc:
        raise BackupRefused(exc.message) from None
    if url is not None and url.password is None and settings.database_password is not None:
        url = url.set(password=settings.database_password)
    return url


@admin_app.command("restore")
def restore_cmd(
    backup: Annotated[Path, typer.Argument(help="The backup file.")],
    data_dir: Annotated[Path, typer.Option("--data-dir", help="An empty or absent folder to restore into.")],
    passphrase_file: PassphraseOpt = None,
    database_url: Annotated[
        str | None,
        typer.Option(
            "--database-url",
            help="For a backup of an install on PostgreSQL: the EMPTY database to restore its records into, "
            "postgresql://USER@HOST/DATABASE ($HANGAR_DATABASE_URL).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Restore a backup into an empty or absent data directory, after checking every item's checksum; the
    records of an install on PostgreSQL go into the empty database --database-url."""
    from hangar.backup import BackupRefused, read_passphrase, restore_backup
    from hangar.core.dblocation import parse_database_url

    settings = settings_from(data_dir=data_dir, database_url=database_url)  # the secrets taken out of the environment
    try:
        given = settings.given_database_url
        url = parse_database_url(given) if given is not None else None
        if url is not None and url.password is None and settings.database_password is not None:
            url = url.set(password=settings.database_password)
        manifest = restore_backup(
            backup,
            data_dir,
            read_passphrase(passphrase_file, settings.backup_passphrase),
            database_url=url,
            pg_bindir=settings.pg_bindir,
        )
    except BackupRefused as exc:
        raise _refuse(exc.message) from None
    typer.echo(
        f"restored {len(manifest.items)} items of the backup taken {manifest.created_at} into {data_dir}"
        + (" (without repositories, spaces and worktrees)" if manifest.without_files else "")
    )


@admin_app.command("backups")
def backups_cmd(
    data_dir: DataDirOpt = None,
    database_url: DatabaseUrlOpt = None,
    last: Annotated[int, typer.Option("--last", min=1, max=1000, help="How many attempts to show.")] = 20,
) -> None:
    """The scheduled backups a server attempted, newest first: when, the outcome, the file and, for a failure,
    why (the backup.* server settings schedule them)."""
    import sqlalchemy as sa

    from hangar.backup.tables import backup_runs
    from hangar.server.context_factory import open_context

    settings = command_settings(data_dir, database_url)

    async def run() -> list[sa.Row[tuple[object, ...]]]:
        from hangar.backup.part import BACKUP_PART
        from hangar.identity.command_part import IDENTITY_COMMAND_PART

        async with open_context(settings, parts=[IDENTITY_COMMAND_PART, BACKUP_PART]) as ctx:
            query = sa.select(backup_runs).order_by(backup_runs.c.started_at.desc()).limit(last)
            async with ctx.dbs.server.connect() as conn:
                return list((await conn.execute(query)).all())

    rows = asyncio.run(run())
    if not rows:
        typer.echo("no scheduled backup has run (set backup.intervalHours with hangar admin setting)")
    for row in rows:
        said = f"{row.size} bytes" if row.outcome == "ok" else f"failed: {row.error}"
        typer.echo(f"{row.started_at.isoformat(timespec='seconds')}  {row.file}  {said}")


@admin_app.command("retention")
def retention_cmd(data_dir: DataDirOpt = None, database_url: DatabaseUrlOpt = None) -> None:
    """How long events and audit rows are kept (the retention.* server settings) and what the last retention pass
    a server made deleted in each database."""
    from hangar.retention import RetentionSchedule
    from hangar.retention.schedule import AUDIT_SETTING, DEFAULT_AUDIT_DAYS, DEFAULT_EVENTS_DAYS, EVENTS_SETTING
    from hangar.server.context_factory import open_context

    settings = command_settings(data_dir, database_url)

    async def run() -> list[str]:
        from hangar.identity.command_part import IDENTITY_COMMAND_PART
        from hangar.retention import RETENTION_PART

        async with open_context(settings, parts=[IDENTITY_COMMAND_PART, RETENTION_PART]) as ctx:
            schedule = ctx.service(RetentionSchedule)
            events = await schedule.days(EVENTS_SETTING, DEFAULT_EVENTS_DAYS)
            audit = await schedule.days(AUDIT_SETTING, DEFAULT_AUDIT_DAYS)
            lines = [f"events are kept {_days(events)}, audit rows {_days(audit)}"]
            last = await schedule.last_pass()
            if last is None:
                return [*lines, "no retention pass has run"]
            started, finished, records = last
            ended = finished.isoformat(timespec="seconds") if finished else "not finished"
            lines.append(f"last pass {started.isoformat(timespec='seconds')} ({ended})")
            for r in records:
                said = f"failed: {r.error}" if r.error else f"{r.events} events, {r.audit} audit rows deleted"
                lines.append(f"  {r.database}  {said}")
            return lines

    for line in asyncio.run(run()):
        typer.echo(line)


def _days(days: int) -> str:
    return "for ever" if days == 0 else f"{days} day" + ("" if days == 1 else "s")
