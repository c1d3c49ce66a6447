"""Connection records: defaults, validation, merge on save, applied live, secrets kept out of the database."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hangar.core.clock import FakeClock
from hangar.core.datadir import DataDir
from hangar.core.db import Databases
from hangar.core.principal import Role
from hangar.core.secrets import SecretsFile
from hangar.errors import InvalidArgs
from hangar.sso import config as sso_config
from hangar.sso.config import OidcConnection, SamlConnection, SsoConfigStore

METADATA = "<EntityDescriptor xmlns='urn:oasis:names:tc:SAML:2.0:metadata' entityID='https://idp'/>"


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SsoConfigStore]:
    datadir = DataDir(tmp_path).ensure()
    dbs = Databases(datadir, [sso_config.MIGRATIONS])
    await dbs.open()
    st = SsoConfigStore(dbs.server, SecretsFile(datadir.secrets_file), FakeClock())
    await st.load()
    yield st
    await dbs.aclose()


def test_defaults_match_the_spec_table() -> None:
    saml = SamlConnection()
    assert (saml.enabled, saml.idpMetadataXml, saml.spEntityId) == (False, None, None)
    assert (saml.emailAttribute, saml.displayNameAttribute, saml.groupsAttribute) == (
        "email",
        "displayName",
        "groups",
    )
    assert (saml.clockSkewSeconds, saml.allowIdpInitiated, saml.wantResponseSigned) == (90, False, False)
    oidc = OidcConnection()
    assert (oidc.issuer, oidc.clientId, oidc.groupsClaim, oidc.scopes) == (None, None, "groups", "openid email profile")
    for conn in (saml, oidc):
        assert (conn.defaultRole, conn.groupRoleMap, conn.autoMember, conn.allowJit) == (
            "member",
            {},
            True,
            True,
        )
    assert saml.sp_entity_id("https://hangar.example/") == "https://hangar.example/saml"
    assert SamlConnection(spEntityId="urn:pinned").sp_entity_id("https://x") == "urn:pinned"


@pytest.mark.parametrize(
    ("kind", "values", "field"),
    [
        ("saml", {"enabled": True}, "config.idpMetadataXml"),
        ("saml", {"enabled": True, "idpMetadataXml": "  "}, "config.idpMetadataXml"),
        ("oidc", {"enabled": True, "clientId": "c"}, "config.issuer"),
        ("oidc", {"enabled": True, "issuer": "https://idp.example"}, "config.clientId"),
        ("oidc", {"issuer": "http://idp.example"}, "config.issuer"),
        ("oidc", {"issuer": "ftp://idp.example"}, "config.issuer"),
        ("oidc", {"issuer": "idp.example"}, "config.issuer"),
        ("oidc", {"issuer": "https://idp.example/?a=1"}, "config.issuer"),
        ("saml", {"defaultRole": "owner"}, "config.defaultRole"),
        ("oidc", {"defaultRole": "king"}, "config.defaultRole"),
        ("saml", {"groupRoleMap": {"admins": "owner"}}, "config.groupRoleMap.admins"),
        ("oidc", {"groupRoleMap": {"ops": "superuser"}}, "config.groupRoleMap.ops"),
        ("saml", {"clockSkewSeconds": -1}, "config.clockSkewSeconds"),
        ("saml", {"clockSkewSeconds": "soon"}, "config.clockSkewSeconds"),
        ("saml", {"issuer": "https://x"}, "config.issuer"),
        ("oidc", {"idpMetadataXml": METADATA}, "config.idpMetadataXml"),
        ("oidc", {"enabled": "maybe"}, "config.enabled"),
    ],
)
def test_invalid_records_are_refused_naming_the_field(
    kind: sso_config.SsoKind, values: dict[str, object], field: str
) -> None:
    with pytest.raises(InvalidArgs) as err:
        sso_config.build(kind, values)
    assert err.value.field == field
    assert field.split(".")[1] in err.value.message


@pytest.mark.parametrize(
    "issuer", ["http://localhost:3000", "http://127.0.0.1:9/x", "http://[::1]:4444", "https://a.b"]
)
def test_loopback_issuers_may_use_http(issuer: str) -> None:
    conn = sso_config.build("oidc", {"enabled": True, "issuer": issuer, "clientId": "hangar"})
    assert isinstance(conn, OidcConnection) and conn.issuer == issuer


def test_role_for_groups_takes_the_highest_mapping_else_the_default() -> None:
    conn = SamlConnection(groupRoleMap={"eng": "member", "ops": "admin"}, defaultRole="guest")
    assert conn.role_for_groups(["eng", "ops"]) is Role.admin
    assert conn.role_for_groups(["eng"]) is Role.member
    assert conn.role_for_groups(["other"]) is Role.guest
    # Even a record that bypassed validation never grants owner.
    rogue = SamlConnection.model_construct(groupRoleMap={"x": "owner"}, defaultRole="owner")
    assert rogue.role_for_groups(["x"]) is Role.admin


async def test_save_merges_persists_and_applies_live(store: SsoConfigStore, tmp_path: Path) -> None:
    seen: list[tuple[str, bool]] = []
    store.on_change(lambda kind, rec: seen.append((kind, rec.enabled)))
    await store.save("saml", {"idpMetadataXml": METADATA, "clockSkewSeconds": 30})
    rec = await store.save("saml", {"enabled": True})
    assert isinstance(rec, SamlConnection)
    assert rec.enabled and rec.clockSkewSeconds == 30 and rec.idpMetadataXml == METADATA
    assert store.saml is rec
    assert seen == [("saml", False), ("saml", True)]
    # None resets to the default.
    rec = await store.save("saml", {"clockSkewSeconds": None})
    assert isinstance(rec, SamlConnection) and rec.clockSkewSeconds == 90
    # A fresh store reads the same record back from the database.
    again = SsoConfigStore(store._engine, SecretsFile(tmp_path / "secrets.json"), FakeClock())
    await again.load()
    assert again.saml == store.saml
    assert again.oidc == OidcConnection()


async def test_a_refused_save_changes_nothing(store: SsoConfigStore) -> None:
    await store.save("oidc", {"issuer": "https://idp.example", "clientId": "hangar", "enabled": True})
    before = store.oidc
    with pytest.raises(InvalidArgs):
        await store.save("oidc", {"groupRoleMap": {"admins": "owner"}, "clientSecret": "s3cret"})
    assert store.oidc is before
    assert store.client_secret() is None


async def test_client_secret_lives_only_in_the_secrets_file(store: SsoConfigStore, tmp_path: Path) -> None:
    await store.save("oidc", {"issuer": "https://idp.example", "clientId": "hangar", "clientSecret": "s3cret-value"})
    assert store.client_secret() == "s3cret-value"
    view = store.public_view("oidc")
    assert view["clientSecretPresent"] is True
    assert "clientSecret" not in view and "s3cret-value" not in json.dumps(view)
    secrets_path = tmp_path / "secrets.json"
    assert os.stat(secrets_path).st_mode & 0o777 == 0o600
    with sqlite3.connect(tmp_path / "server.db") as db:
        dumped = "\n".join(db.iterdump())
    assert "s3cret-value" not in dumped and "hangar" in dumped
    # Leaving it out keeps it; an empty string removes it.
    await store.save("oidc", {"groupsClaim": "roles"})
    assert store.client_secret() == "s3cret-value"
    await store.save("oidc", {"clientSecret": ""})
    assert store.client_secret() is None and store.public_view("oidc")["clientSecretPresent"] is False
    with pytest.raises(InvalidArgs) as err:
        await store.save("saml", {"clientSecret": "x"})
    assert err.value.field == "config.clientSecret"


async def test_scim_token_regenerates_and_compares(store: SsoConfigStore) -> None:
    assert store.scim_token() is None and not store.scim_token_matches("anything")
    first = store.regenerate_scim_token()
    assert store.scim_token_matches(first)
    second = store.regenerate_scim_token()
    assert first != second and not store.scim_token_matches(first) and store.scim_token_matches(second)


async def test_preview_validates_without_saving(store: SsoConfigStore) -> None:
    await store.save("oidc", {"clientId": "a"})
    conn = store.preview("oidc", {"issuer": "https://x.example", "enabled": True, "clientSecret": "unsaved"})
    assert isinstance(conn, OidcConnection) and conn.enabled and conn.clientId == "a"
    assert not store.oidc.enabled and store.client_secret() is None
    with pytest.raises(InvalidArgs):
        store.preview("oidc", {"issuer": "http://example.org"})


@pytest.mark.parametrize(
    ("scopes", "saved"),
    [
        ("openid", "openid"),
        ("  openid\temail\n\nprofile ", "openid email profile"),
        ("email openid offline_access urn:example:scope#1", "email openid offline_access urn:example:scope#1"),
        ("openid " + "x" * (sso_config.MAX_SCOPES_CHARS - 7), "openid " + "x" * (sso_config.MAX_SCOPES_CHARS - 7)),
    ],
)
def test_scopes_kept_one_space_apart(scopes: str, saved: str) -> None:
    conn = sso_config.build("oidc", {"scopes": scopes})
    assert isinstance(conn, OidcConnection) and conn.scopes == saved


@pytest.mark.parametrize(
    ("scopes", "said"),
    [
        ("", "must include openid"),
        ("email profile", "must include openid"),
        ("OpenID email", "must include openid"),
        ('openid "email"', "is not a scope"),
        ("openid a\\b", "is not a scope"),
        ("openid émail", "is not a scope"),
        ("openid openid", "names 'openid' twice"),
        ("openid " + "x" * (sso_config.MAX_SCOPES_CHARS - 6), "at most 512"),
    ],
)
def test_scopes_refused(scopes: str, said: str) -> None:
    with pytest.raises(InvalidArgs) as err:
        sso_config.build("oidc", {"scopes": scopes})
    assert said in err.value.message and err.value.message.startswith("config.scopes")
