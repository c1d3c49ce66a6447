"""Process settings: flags win over environment variables, which win over defaults.

Environment: each setting is ``HANGAR_`` and its name in capitals (``HANGAR_DATA_DIR``, ``HANGAR_PORT``,
``HANGAR_TRUSTED_PROXIES``...; lists comma-separated), and nothing else: a variable another program set for
itself (``HOST``, ``PORT``, ``DATA_DIR``) is never a setting here. The one exception is ``SERVER_WEB_CLIENT_URL``,
the name the contract fixes for the web client's origin (``HANGAR_WEB_CLIENT_URL`` wins over it).
"""

from __future__ import annotations

import ipaddress
import os
import socket
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, PrivateAttr, SecretStr, field_validator
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, NoDecode, PydanticBaseSettingsSource, SettingsConfigDict

from hangar.default_ports import DEFAULT_PORT, DEFAULT_SITE_PORT

# A rig terminal's recent output, sent first to a lane that attaches to it, and how long a terminal no lane shows
# is kept running for its person to come back to (``hangar.rigs.live.terminals``).
TERMINAL_SCROLLBACK_BYTES = 64 * 1024
TERMINAL_KEEP_SECONDS = 600.0
# How long one row of a rig's action log counts the same principal's screenshots (``hangar.rigs.lifecycle.foldlog``).
RIG_SCREENSHOT_FOLD_SECONDS = 60.0


def default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "hangar"


def _clean_origin(value: str | None, name: str) -> str | None:
    if value is None or value == "":
        return None
    if not value.startswith(("http://", "https://")):
        raise ValueError(f"{name} must start with http:// or https://")
    return value.rstrip("/")


def _items(value: Any) -> list[Any]:
    """A list from a list, or from one comma-separated string (an environment variable)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    return list(value)


# Defaults of the limits an operator may change (each documented with its setting).
MAX_CONNECTIONS_PER_ADDRESS = 256
REQUEST_HEAD_TIMEOUT_S = 10.0
MCP_SESSIONS_PER_CREDENTIAL = 64
MCP_SESSIONS_PER_USER = 256
MCP_SESSIONS_PER_WORKSPACE = 1000
PACK_REFRESH_HOURS = 24
MAX_PACK_REFRESH_HOURS = 8760


# The contract's name for the web client's origin (CONTRACTS.md section 1), read besides ``HANGAR_WEB_CLIENT_URL``.
WEB_CLIENT_URL_VARIABLE = "SERVER_WEB_CLIENT_URL"


class _ContractVariables(PydanticBaseSettingsSource):
    """The settings read under a name the contract fixes rather than the ``HANGAR_`` one."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False  # unused: ``__call__`` answers for the whole source

    def __call__(self) -> dict[str, Any]:
        value = os.environ.get(WEB_CLIENT_URL_VARIABLE)
        return {"web_client_url": value} if value else {}


class Settings(BaseSettings):
    # Only ``HANGAR_<NAME>`` variables are read (no aliases: an alias would be read unprefixed too), and no dotenv
    # or secrets files.
    model_config = SettingsConfigDict(env_prefix="HANGAR_", extra="ignore")

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return init_settings, env_settings, _ContractVariables(settings_cls)

    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    data_dir: Path = Field(default_factory=default_data_dir)
    public_url: str | None = None
    web_client_url: str | None = None
    # Where the other servers of the same records reach this one (``--internal-url``, ``HANGAR_INTERNAL_URL``):
    # a call or lane for a rig this server runs, asked of another server, is relayed here. None: its own listener.
    internal_url: str | None = None
    # Set by ``hangar serve`` once its port is known: the origin recorded on the rigs this process runs. Other
    # processes (a command, a worker) serve no lanes, so their rigs have none.
    _serving_origin: str | None = PrivateAttr(default=None)
    # The PostgreSQL database every record lives in (``--database-url``, ``HANGAR_DATABASE_URL``); None: SQLite
    # files in the data directory, or the database the data directory records (``hangar.core.dblocation``). A
    # secret: it may carry a password, which no message, log or file shows.
    database_url: SecretStr | None = None
    # PostgreSQL's own ``PGPASSWORD``, taken out of the environment by the command line (``hangar.cli.root``) so
    # the processes the server starts never inherit it; used for a URL that carries no password.
    _database_password: SecretStr | None = PrivateAttr(default=None)
    # A command acting on a database URL alone (``hangar.cli.root.command_settings``): its data directory is a
    # scratch folder, where no installation key may be made (``hangar.core.sealed``).
    _database_only: bool = PrivateAttr(default=False)
    # The passphrase scheduled and command-line backups are sealed with (``HANGAR_BACKUP_PASSPHRASE``); taken out
    # of the environment by the command line too, so no process the server starts inherits it.
    backup_passphrase: SecretStr | None = None
    # The folder holding PostgreSQL's pg_dump and pg_restore for backups of an install on PostgreSQL
    # (``HANGAR_PG_BINDIR``); None: Debian's ``/usr/lib/postgresql/<server's major version>/bin``, then ``PATH``.
    pg_bindir: Path | None = None
    # The installation's secret key on PostgreSQL (``HANGAR_SECRET_KEY_FILE``); None: ``<dataDir>/secret-key``
    # (``hangar.core.secretkey``).
    secret_key_file: Path | None = None
    site_port: int | None = DEFAULT_SITE_PORT  # where the website listens beside the server; None: not served
    site_url: str | None = None  # the website's public origin when it is served under one (``--site-url``)
    # Where rig image packs are built and cached (default ``<dataDir>/rigs/microvm-packs``). Packs hold no
    # workspace data, so several data directories on one host may share one cache.
    rig_packs_dir: Path | None = None
    # Where the Debian mirrors packs are built from are configured (None: apt's own, ``/etc/apt``; tests point
    # it at a directory naming a loopback archive).
    rig_apt_root: Path | None = None
    # Hours between checks of the packs against their archives (a stale pack is built again in the background),
    # unless the server setting ``rigs.packRefreshHours`` says otherwise; 0: never.
    pack_refresh_hours: int = Field(default=PACK_REFRESH_HOURS, ge=0, le=MAX_PACK_REFRESH_HOURS)

    # The chat provider's Web API base (its socket URL is whatever ``apps.connections.open`` answers); tests point
    # it at a loopback fake so no other host is dialled.
    chatprovider_api_url: str = Field(default="https://slack.com/api/")
    # How long a server process's claim on a workspace's chat connection lasts without being renewed (renewed every
    # third of it): a process killed outright has its connections taken over by another within 4/3 of it
    # (``hangar.chat.claims``). Shorter hands over sooner and costs more renewals; all servers should agree.
    chat_claim_ttl_seconds: float = Field(default=15.0, ge=1, le=600)

    # The built web client the server serves at ``/`` (default: ``web/dist`` of the checkout it runs from).
    web_dist: Path | None = None

    # The reverse proxies in front of the listeners (addresses or CIDR networks). Only a connection from one of
    # them has its ``X-Forwarded-For`` and ``X-Forwarded-Proto`` honoured; every other client is who its TCP peer
    # is, whatever headers it sends. Empty (the default): no proxy header is honoured from anyone.
    trusted_proxies: Annotated[tuple[str, ...], NoDecode] = Field(default=())
    # Further origins an SSO popup may hand a credential to (a web client in development on its own port); the
    # web client URL, the public URL and the server's own listener are trusted without being listed.
    trusted_origins: Annotated[tuple[str, ...], NoDecode] = Field(default=())

    # Connections each listener holds at once: in total (default: the process's descriptor limit less a reserve,
    # ``hangar.server.connections``; a larger value is lowered to that), from one client address (an IPv6 /64
    # counts as one; a trusted proxy is held only to the total), and how long a client may take to send a request
    # head (request line and headers) before the connection is closed.
    max_connections: int | None = Field(default=None, ge=1)
    max_connections_per_address: int = Field(default=MAX_CONNECTIONS_PER_ADDRESS, ge=1)
    request_head_timeout: float = Field(default=REQUEST_HEAD_TIMEOUT_S, gt=0, le=3600)

    # Open MCP sessions (and listen streams) one device credential, one user (all their credentials), and one
    # workspace (the credentials limited to it: OAuth grants for one workspace, agents' credentials) may hold.
    mcp_sessions_per_credential: int = Field(default=MCP_SESSIONS_PER_CREDENTIAL, ge=1)
    mcp_sessions_per_user: int = Field(default=MCP_SESSIONS_PER_USER, ge=1)
    mcp_sessions_per_workspace: int = Field(default=MCP_SESSIONS_PER_WORKSPACE, ge=1)

    terminal_scrollback_bytes: int = Field(default=TERMINAL_SCROLLBACK_BYTES, ge=0, le=16 * 1024 * 1024)
    terminal_keep_seconds: float = Field(default=TERMINAL_KEEP_SECONDS, ge=0, le=7 * 24 * 3600)
    rig_screenshot_fold_seconds: float = Field(default=RIG_SCREENSHOT_FOLD_SECONDS, ge=0, le=3600)

    # Operations: ``GET /metrics`` and the counting behind it (``hangar.core.metrics``; off: nothing is counted and
    # the route answers 404), and how ``hangar serve`` writes its log (``text`` lines or ``json`` lines).
    metrics: bool = True
    log_format: Literal["text", "json"] = "text"

    @field_validator("trusted_proxies", mode="before")
    @classmethod
    def _trusted_proxies(cls, v: Any) -> tuple[str, ...]:
        out = []
        for item in _items(v):
            try:
                out.append(str(ipaddress.ip_network(str(item).strip(), strict=False)))
            except ValueError:
                raise ValueError(f"--trusted-proxy: {item!r} is not an IP address or a CIDR network") from None
        return tuple(out)

    @field_validator("trusted_origins", mode="before")
    @classmethod
    def _trusted_origins(cls, v: Any) -> tuple[str, ...]:
        return tuple(o for o in (_clean_origin(str(item), "--trusted-origin") for item in _items(v)) if o)

    @property
    def packs_root(self) -> Path:
        """Where rig image packs are built and looked for: ``rig_packs_dir``, else ``<dataDir>/rigs/microvm-packs``."""
        return self.rig_packs_dir or self.data_dir / "rigs" / "microvm-packs"

    @field_validator("public_url")
    @classmethod
    def _public_url(cls, v: str | None) -> str | None:
        return _clean_origin(v, "--public-url")

    @field_validator("internal_url")
    @classmethod
    def _internal_url(cls, v: str | None) -> str | None:
        return _clean_origin(v, "--internal-url")

    @field_validator("site_url")
    @classmethod
    def _site_url(cls, v: str | None) -> str | None:
        return _clean_origin(v, "--site-url")

    @field_validator("web_client_url")
    @classmethod
    def _web_client_url(cls, v: str | None) -> str | None:
        return _clean_origin(v, "--web-client-url")

    @classmethod
    def from_flags(cls, **flags: Any) -> Settings:
        """Settings from command-line flags; a flag left as ``None`` falls back to the environment."""
        given = {k: v for k, v in flags.items() if v is not None}
        return cls(**given)

    @property
    def given_database_url(self) -> str | None:
        """The database URL given by flag or variable, with its password; None when none is (or it is blank)."""
        value = self.database_url.get_secret_value().strip() if self.database_url is not None else ""
        return value or None

    def keep_database_password(self, password: str) -> None:
        self._database_password = SecretStr(password)

    def mark_database_only(self) -> None:
        self._database_only = True

    @property
    def database_only(self) -> bool:
        return self._database_only

    @property
    def database_password(self) -> str | None:
        return None if self._database_password is None else self._database_password.get_secret_value()

    def serve_here(self) -> None:
        """This process serves the records' lanes and relayed calls (``hangar serve``, its port now known): at
        ``internal_url``, else its own listener (a wildcard listener by this host's name)."""
        host = socket.getfqdn() if self.host in ("0.0.0.0", "::", "") else self.host
        host = f"[{host}]" if ":" in host else host
        self._serving_origin = self.internal_url or f"http://{host}:{self.port}"

    @property
    def serving_origin(self) -> str | None:
        """Where the other servers reach this process, or None when it serves nothing (``serve_here``)."""
        return self._serving_origin

    @property
    def origin(self) -> str:
        """The server's canonical origin: the public URL when set, else its own listener."""
        return self.public_url or f"http://{self.host}:{self.port}"
