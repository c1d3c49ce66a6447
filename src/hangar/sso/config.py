"""SSO connection records: one per kind (``saml``, ``oidc``), server-wide, saved in the server database.

The saved record is the only source of configuration (no environment path). ``SsoConfigStore`` keeps the
current records in memory and replaces them on save, so every login reads the values saved last ("applied
live"). The OIDC client secret and the SCIM bearer token never touch the database: they live in the 0600
secrets file under ``sso.oidc.clientSecret`` and ``sso.scim.token``; replies say ``clientSecretPresent``.

Field names are the spec's camelCase names, so the wire shape, the stored JSON and the attributes agree.
Saving is a merge: fields given replace the saved ones, fields left out keep their saved (or default) value,
and ``null`` resets a field to its default. ``clientSecret`` is write-only: a string stores it, ``null`` or
``""`` removes it, leaving it out keeps it.
"""

from __future__ import annotations

import re
import secrets as pysecrets
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, Literal, cast
from urllib.parse import urlsplit

import sqlalchemy as sa
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.core.clock import Clock
from hangar.core.migrating import MigrationSet
from hangar.core.principal import Role
from hangar.core.secrets import Secrets
from hangar.core.stamps import Stamp, engine_stamp
from hangar.core.types import UtcDateTime
from hangar.errors import InvalidArgs
from hangar.sso.scim import tables as scim_tables

SsoKind = Literal["saml", "oidc"]
KINDS: tuple[SsoKind, ...] = ("saml", "oidc")

CLIENT_SECRET_KEY = "sso.oidc.clientSecret"
SCIM_TOKEN_KEY = "sso.scim.token"
SCIM_TOKEN_PREFIX = "hgs_"

LOOPBACK_HOSTS: frozenset[str] = frozenset({"localhost", "127.0.0.1", "::1"})
MAX_CLOCK_SKEW_SECONDS = 3600

# OIDC scopes: what the authorization request asks for, separated by single spaces (RFC 6749 section 3.3). Each
# scope is a scope-token: printable ASCII without space, '"' or '\\'. The bound keeps the authorization URL well
# under what browsers and providers take (a provider with a real need for more is not known to us).
DEFAULT_SCOPES = "openid email profile"
MAX_SCOPES_CHARS = 512
SCOPE_TOKEN = re.compile(r"[\x21\x23-\x5B\x5D-\x7E]+")

# Roles an SSO login may grant: owner is never handed out by an identity provider.
GRANTABLE_ROLES: tuple[str, ...] = tuple(r.name for r in Role if r is not Role.owner)

metadata = sa.MetaData()

sso_connections = sa.Table(
    "sso_connections",
    metadata,
    sa.Column("kind", sa.String(16), primary_key=True),
    sa.Column("config", sa.JSON, nullable=False),
    sa.Column("updated_at", UtcDateTime(), nullable=False),
)

MIGRATIONS = MigrationSet(
    "sso", "server", Path(__file__).parent / "migrations", tables=(metadata, scim_tables.metadata)
)


class _Connection(BaseModel):
    """Fields both kinds share."""

    # Replies send every field, so the schema of the reply form lists defaulted fields as required.
    model_config = ConfigDict(extra="forbid", frozen=True, json_schema_serialization_defaults_required=True)

    enabled: bool = False
    defaultRole: str = "member"
    groupRoleMap: dict[str, str] = Field(default_factory=dict)
    autoMember: bool = True
    allowJit: bool = True

    def role_for_groups(self, groups: list[str]) -> Role:
        """The highest role any of ``groups`` maps to, else ``defaultRole``; never owner."""
        mapped = [Role[self.groupRoleMap[g]] for g in groups if g in self.groupRoleMap]
        role = max(mapped) if mapped else Role[self.defaultRole]
        # Validation refuses owner at save; this keeps a hand-edited database from granting it anyway.
        return min(role, Role.admin)


class SamlConnection(_Connection):
    idpMetadataXml: str | None = None
    spEntityId: str | None = None
    emailAttribute: str = "email"
    displayNameAttribute: str = "displayName"
    groupsAttribute: str = "groups"
    clockSkewSeconds: int = 90
    allowIdpInitiated: bool = False
    wantResponseSigned: bool = False

    def sp_entity_id(self, origin: str) -> str:
        """Our entity id: the pinned value, else ``<origin>/saml``."""
        return self.spEntityId or f"{origin.rstrip('/')}/saml"

    @property
    def configured(self) -> bool:
        return bool(self.idpMetadataXml and self.idpMetadataXml.strip())


class OidcConnection(_Connection):
    issuer: str | None = None
    clientId: str | None = None
    groupsClaim: str = "groups"
    scopes: str = DEFAULT_SCOPES

    @field_validator("scopes", mode="before")
    @classmethod
    def _one_space_between(cls, value: object) -> object:
        # Typed with a double space or a line break, scopes are still the same scopes: saved one space apart.
        return " ".join(value.split()) if isinstance(value, str) else value

    @property
    def configured(self) -> bool:
        return bool(self.issuer and self.clientId)


class OidcView(OidcConnection):
    """An OIDC record as replies show it: the client secret only as a presence flag."""

    clientSecretPresent: bool


Connection = SamlConnection | OidcConnection
_MODELS: dict[str, type[SamlConnection] | type[OidcConnection]] = {
    "saml": SamlConnection,
    "oidc": OidcConnection,
}


def check_issuer_url(issuer: str, *, field: str = "config.issuer") -> str:
    """An OIDC issuer must be an absolute https URL; http only for the loopback hosts."""
    parts = urlsplit(issuer)
    host = (parts.hostname or "").lower()
    if parts.scheme not in ("http", "https") or not host:
        raise InvalidArgs(f"{field} must be an absolute https URL, not {issuer!r}", field=field)
    if parts.scheme == "http" and host not in LOOPBACK_HOSTS:
        raise InvalidArgs(
            f"{field} must use https (http is accepted only for localhost, 127.0.0.1 and ::1)", field=field
        )
    if parts.query or parts.fragment:
        raise InvalidArgs(f"{field} must not carry a query or fragment", field=field)
    return issuer


def validate(kind: SsoKind, conn: Connection, *, prefix: str = "config") -> None:
    """Rules a record must satisfy to be saved; raises ``InvalidArgs`` naming the field."""
    if conn.defaultRole not in GRANTABLE_ROLES:
        why = "can never be owner" if conn.defaultRole == "owner" else f"must be one of {', '.join(GRANTABLE_ROLES)}"
        raise InvalidArgs(f"{prefix}.defaultRole {why}", field=f"{prefix}.defaultRole")
    for group, role in conn.groupRoleMap.items():
        field = f"{prefix}.groupRoleMap.{group}"
        if not group.strip():
            raise InvalidArgs(f"{prefix}.groupRoleMap has an empty group name", field=f"{prefix}.groupRoleMap")
        if role == "owner":
            raise InvalidArgs(f"{field}: an SSO group can never map to owner", field=field)
        if role not in GRANTABLE_ROLES:
            raise InvalidArgs(f"{field} must be one of {', '.join(GRANTABLE_ROLES)}, not {role!r}", field=field)
    if isinstance(conn, SamlConnection):
        if conn.enabled and not conn.configured:
            raise InvalidArgs(
                f"{prefix}.idpMetadataXml is required to enable the SAML connection",
                field=f"{prefix}.idpMetadataXml",
            )
        if not 0 <= conn.clockSkewSeconds <= MAX_CLOCK_SKEW_SECONDS:
            raise InvalidArgs(
                f"{prefix}.clockSkewSeconds must be between 0 and {MAX_CLOCK_SKEW_SECONDS}",
                field=f"{prefix}.clockSkewSeconds",
            )
        if conn.spEntityId is not None and not conn.spEntityId.strip():
            raise InvalidArgs(f"{prefix}.spEntityId must not be blank", field=f"{prefix}.spEntityId")
        for name in ("emailAttribute", "displayNameAttribute", "groupsAttribute"):
            if not str(getattr(conn, name)).strip():
                raise InvalidArgs(f"{prefix}.{name} must not be blank", field=f"{prefix}.{name}")
    else:
        if conn.enabled and not conn.issuer:
            raise InvalidArgs(f"{prefix}.issuer is required to enable the OIDC connection", field=f"{prefix}.issuer")
        if conn.enabled and not conn.clientId:
            raise InvalidArgs(
                f"{prefix}.clientId is required to enable the OIDC connection", field=f"{prefix}.clientId"
            )
        if conn.issuer is not None:
            check_issuer_url(conn.issuer, field=f"{prefix}.issuer")
        if conn.clientId is not None and not conn.clientId.strip():
            raise InvalidArgs(f"{prefix}.clientId must not be blank", field=f"{prefix}.clientId")
        if not conn.groupsClaim.strip():
            raise InvalidArgs(f"{prefix}.groupsClaim must not be blank", field=f"{prefix}.groupsClaim")
        check_scopes(conn.scopes, field=f"{prefix}.scopes")


def check_scopes(scopes: str, *, field: str = "config.scopes") -> None:
    """OIDC scopes as saved (``OidcConnection`` joins them with single spaces): scope-tokens, ``openid`` among
    them, each once, the whole at most ``MAX_SCOPES_CHARS``."""
    if len(scopes) > MAX_SCOPES_CHARS:
        raise InvalidArgs(f"{field} is {len(scopes)} characters; at most {MAX_SCOPES_CHARS} are allowed", field=field)
    names = scopes.split()
    for name in names:
        if not SCOPE_TOKEN.fullmatch(name):
            raise InvalidArgs(
                f"{field}: {name!r} is not a scope (printable ASCII without spaces, quotes or backslashes)", field=field
            )
        if names.count(name) > 1:
            raise InvalidArgs(f"{field} names {name!r} twice", field=field)
    if "openid" not in names:
        raise InvalidArgs(f"{field} must include openid (an OpenID Connect sign-in asks for it)", field=field)


def _pydantic_error(exc: ValidationError, prefix: str) -> InvalidArgs:
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err["loc"])
    field = f"{prefix}.{loc}" if loc else prefix
    if err["type"] == "extra_forbidden":
        return InvalidArgs(f"{field} is not a field of this connection", field=field)
    return InvalidArgs(f"{field}: {err['msg']}", field=field)


def build(kind: SsoKind, values: Mapping[str, Any], *, prefix: str = "config") -> Connection:
    """A validated record from plain values (defaults for the fields left out)."""
    clean = {k: v for k, v in values.items() if v is not None}
    try:
        conn = _MODELS[kind].model_validate(clean)
    except ValidationError as exc:
        raise _pydantic_error(exc, prefix) from None
    validate(kind, conn, prefix=prefix)
    return conn


def merge(kind: SsoKind, saved: Connection, changes: Mapping[str, Any], *, prefix: str = "config") -> Connection:
    """``saved`` with ``changes`` applied (``None`` resets a field to its default), validated."""
    values = saved.model_dump()
    for key, value in changes.items():
        if value is None:
            values.pop(key, None)
        else:
            values[key] = value
    return build(kind, values, prefix=prefix)


def default(kind: SsoKind) -> Connection:
    return _MODELS[kind]()


def split_secret(changes: Mapping[str, Any]) -> tuple[dict[str, Any], tuple[bool, str | None]]:
    """Take ``clientSecret`` out of a change set: ``(rest, (given, value))``; value None means remove."""
    rest = dict(changes)
    if "clientSecret" not in rest:
        return rest, (False, None)
    raw = rest.pop("clientSecret")
    if raw is not None and not isinstance(raw, str):
        raise InvalidArgs("config.clientSecret must be a string", field="config.clientSecret")
    return rest, (True, raw or None)


ChangeListener = Callable[[SsoKind, Connection], Awaitable[None] | None]


COUNTER = "sso"  # the change counter of sso_connections (migration s0007)


class SsoConfigStore:
    """The saved connections, kept in memory while the server database's ``sso`` change counter stays put.

    Every entry point (sign-in routes, ``sso.*`` ops) calls ``fresh`` first, so a connection saved by another
    process applies at once; the synchronous accessors then read what ``fresh`` checked."""

    def __init__(self, engine: AsyncEngine, secrets: Secrets, clock: Clock, stamp: Stamp | None = None) -> None:
        self._engine = engine
        self._secrets = secrets
        self._clock = clock
        self._stamp = stamp or engine_stamp(engine, COUNTER)
        self._version: int | None = None
        self._current: dict[SsoKind, Connection] = {k: default(k) for k in KINDS}
        self._listeners: list[ChangeListener] = []

    async def fresh(self) -> SsoConfigStore:
        """Reload the records when any process saved one since they were read; returns the store."""
        version = await self._stamp()
        if version != self._version or version < 0:
            before = dict(self._current)
            await self.load()
            self._version = version
            for kind in KINDS:
                if before[kind] != self._current[kind]:
                    await self._notify(kind, self._current[kind])
        return self

    async def load(self) -> None:
        """Read the saved records; a record that no longer validates is kept but disabled, never dropped."""
        async with self._engine.connect() as conn:
            rows = (await conn.execute(sa.select(sso_connections))).mappings().all()
        for row in rows:
            if row["kind"] not in KINDS:
                continue
            kind = cast(SsoKind, row["kind"])
            try:
                self._current[kind] = build(kind, row["config"])
            except InvalidArgs:
                values = {**row["config"], "enabled": False}
                try:
                    self._current[kind] = build(kind, values)
                except InvalidArgs:
                    self._current[kind] = default(kind)

    def on_change(self, listener: ChangeListener) -> None:
        """Call ``listener(kind, record)`` after every save (caches keyed on the old values drop them)."""
        self._listeners.append(listener)

    def get(self, kind: SsoKind) -> Connection:
        return self._current[kind]

    @property
    def saml(self) -> SamlConnection:
        return cast(SamlConnection, self._current["saml"])

    @property
    def oidc(self) -> OidcConnection:
        return cast(OidcConnection, self._current["oidc"])

    def preview(self, kind: SsoKind, changes: Mapping[str, Any] | None) -> Connection:
        """The record that saving ``changes`` would give, validated but not saved (for testConnection)."""
        rest, _ = split_secret(changes or {})
        return merge(kind, self._current[kind], rest)

    async def save(self, kind: SsoKind, changes: Mapping[str, Any]) -> Connection:
        """Validate, persist and apply ``changes``; the secret goes to the secrets file only."""
        rest, (secret_given, secret) = split_secret(changes)
        if kind != "oidc" and secret_given:
            raise InvalidArgs("config.clientSecret applies to OIDC only", field="config.clientSecret")
        record = merge(kind, self._current[kind], rest)
        stored = record.model_dump(mode="json")
        now = self._clock.now()
        async with self._engine.begin() as conn:
            updated = await conn.execute(
                sa.update(sso_connections).where(sso_connections.c.kind == kind).values(config=stored, updated_at=now)
            )
            if updated.rowcount == 0:
                await conn.execute(sa.insert(sso_connections).values(kind=kind, config=stored, updated_at=now))
        if secret_given:
            if secret is None:
                self._secrets.delete(CLIENT_SECRET_KEY)
            else:
                self._secrets.set(CLIENT_SECRET_KEY, secret)
        self._current[kind] = record
        await self._notify(kind, record)
        return record

    async def _notify(self, kind: SsoKind, record: Connection) -> None:
        for listener in self._listeners:
            result = listener(kind, record)
            if result is not None:
                await result

    # --- secrets -----------------------------------------------------------------------------------------

    def client_secret(self) -> str | None:
        return self._secrets.get(CLIENT_SECRET_KEY)

    def scim_token(self) -> str | None:
        return self._secrets.get(SCIM_TOKEN_KEY)

    def regenerate_scim_token(self) -> str:
        """A new SCIM bearer token; the old one stops working at once. Returned to the caller once."""
        token = SCIM_TOKEN_PREFIX + pysecrets.token_urlsafe(32)
        self._secrets.set(SCIM_TOKEN_KEY, token)
        return token

    def scim_token_matches(self, presented: str) -> bool:
        """Constant-time comparison against the saved token; false when none is saved."""
        saved = self.scim_token()
        if not saved:
            return False
        return pysecrets.compare_digest(saved.encode(), presented.encode())

    # --- replies -------------------------------------------------------------------------------------------

    def public_record(self, kind: SsoKind) -> SamlConnection | OidcView:
        """The record as ``sso.getConfig`` returns it: every field, secrets only as presence flags."""
        record = self._current[kind]
        if isinstance(record, SamlConnection):
            return record
        return OidcView(**record.model_dump(), clientSecretPresent=self._secrets.has(CLIENT_SECRET_KEY))

    def public_view(self, kind: SsoKind) -> dict[str, Any]:
        """``public_record`` in its wire form."""
        return self.public_record(kind).model_dump(mode="json")
