"""The ``sso.*`` ops over the real RPC socket, ``GET /auth/providers``, and the pairing lockout guard."""

from __future__ import annotations

import base64
import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.serialization import Encoding
from cryptography.x509.oid import NameOID

from tests.peers.oidc_provider import oidc_provider
from tests.peers.sso_parts import SSO_PARTS
from tests.support.ports import free_port
from tests.support.records import on_postgresql, stored_secret, stored_text
from tests.support.rpc import RpcClient, RpcError
from tests.support.server import running_server

OPS_AND_ARGS: list[tuple[str, dict[str, Any]]] = [
    ("sso.getConfig", {"kind": "saml"}),
    ("sso.saveConfig", {"kind": "oidc", "config": {"groupsClaim": "roles"}}),
    ("sso.status", {}),
    ("sso.endpoints", {}),
    ("sso.testConnection", {"kind": "oidc"}),
    ("sso.spMetadata", {"origin": "https://hangar.example.com"}),
    ("sso.setPairingEnabled", {"enabled": True}),
    ("sso.sessionPolicy", {}),
    ("sso.setSessionPolicy", {"maxAgeMinutes": 1, "idleTimeoutMinutes": 1}),
    ("sso.scimRegenerateToken", {}),
]


def idp_metadata(entity_id: str = "https://idp.example.com/metadata") -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test idp")])
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(days=1))
        .not_valid_after(now + timedelta(days=30))
        .sign(key, hashes.SHA256())
    )
    der = base64.b64encode(cert.public_bytes(Encoding.DER)).decode()
    return (
        '<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" '
        f'xmlns:ds="http://www.w3.org/2000/09/xmldsig#" entityID="{entity_id}">'
        '<md:IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">'
        '<md:KeyDescriptor use="signing"><ds:KeyInfo><ds:X509Data>'
        f"<ds:X509Certificate>{der}</ds:X509Certificate>"
        "</ds:X509Data></ds:KeyInfo></md:KeyDescriptor>"
        '<md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" '
        'Location="https://idp.example.com/sso"/>'
        "</md:IDPSSODescriptor></md:EntityDescriptor>"
    )


async def rpc_error(c: RpcClient, op: str, **args: Any) -> RpcError:
    with pytest.raises(RpcError) as err:
        await c.call(op, **args)
    return err.value


async def test_only_the_server_owner(tmp_path: Path) -> None:
    async with running_server(tmp_path, parts=SSO_PARTS) as srv:
        ws = await srv.new_workspace("W")
        token = await srv.new_user_token(ws, "owner", name="wsowner")
        async with RpcClient(srv.ws_url, token) as c:
            for op, args in OPS_AND_ARGS:
                assert (await rpc_error(c, op, **args)).code == "forbidden", op
        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            for op, args in OPS_AND_ARGS:
                if op not in ("sso.testConnection",):
                    await c.call(op, **args)


async def test_get_and_save_config_with_validation(tmp_path: Path) -> None:
    async with running_server(tmp_path, parts=SSO_PARTS) as srv, RpcClient(srv.ws_url, srv.owner_token) as c:
        saml = await c.call("sso.getConfig", kind="saml")
        assert saml == {
            "enabled": False,
            "defaultRole": "member",
            "groupRoleMap": {},
            "autoMember": True,
            "allowJit": True,
            "idpMetadataXml": None,
            "spEntityId": None,
            "emailAttribute": "email",
            "displayNameAttribute": "displayName",
            "groupsAttribute": "groups",
            "clockSkewSeconds": 90,
            "allowIdpInitiated": False,
            "wantResponseSigned": False,
        }
        refusals = [
            ({"kind": "saml", "config": {"enabled": True}}, "config.idpMetadataXml"),
            ({"kind": "saml", "config": {"groupRoleMap": {"admins": "owner"}}}, "config.groupRoleMap.admins"),
            ({"kind": "oidc", "config": {"defaultRole": "owner"}}, "config.defaultRole"),
            ({"kind": "oidc", "config": {"enabled": True, "issuer": "https://idp.example"}}, "config.clientId"),
            ({"kind": "oidc", "config": {"issuer": "http://idp.example"}}, "config.issuer"),
            ({"kind": "oidc", "config": {"favouriteColour": "blue"}}, "config.favouriteColour"),
            ({"kind": "saml", "config": {"idpMetadataXml": "<not-metadata/>"}}, "config.idpMetadataXml"),
            ({"kind": "ldap", "config": {}}, "kind"),
        ]
        for args, field in refusals:
            err = await rpc_error(c, "sso.saveConfig", **args)
            assert err.code == "invalid_args" and field in err.message, (args, err.message)
        metadata = idp_metadata()
        saved = await c.call(
            "sso.saveConfig", kind="saml", config={"enabled": True, "idpMetadataXml": metadata, "clockSkewSeconds": 30}
        )
        assert saved["enabled"] and saved["clockSkewSeconds"] == 30 and saved["idpMetadataXml"] == metadata
        # Fields left out keep their values; null restores the default.
        again = await c.call("sso.saveConfig", kind="saml", config={"clockSkewSeconds": None, "allowJit": False})
        assert again["clockSkewSeconds"] == 90 and again["allowJit"] is False and again["enabled"] is True
        status = await c.call("sso.status")
        assert status["saml"] == {"enabled": True, "configured": True}
        assert status["oidc"] == {"enabled": False, "configured": False} and status["origin"]


async def test_client_secret_is_write_only_and_lives_in_the_secrets_file(tmp_path: Path) -> None:
    async with running_server(tmp_path, parts=SSO_PARTS) as srv, RpcClient(srv.ws_url, srv.owner_token) as c:
        secret = "s3cr3t-" + "x" * 20
        config = {"issuer": "https://idp.example", "clientId": "hangar", "clientSecret": secret}
        saved = await c.call("sso.saveConfig", kind="oidc", config=config)
        assert saved["clientSecretPresent"] is True and "clientSecret" not in saved
        got = await c.call("sso.getConfig", kind="oidc")
        assert secret not in json.dumps(got) and secret not in json.dumps(await c.call("sso.status"))
        assert stored_secret(tmp_path, "sso.oidc.clientSecret") == secret.encode()  # the file, or the sealed row
        if not on_postgresql(tmp_path):
            assert os.stat(tmp_path / "secrets.json").st_mode & 0o777 == 0o600
        assert secret.encode() not in stored_text(tmp_path)  # never in the records in clear
        cleared = await c.call("sso.saveConfig", kind="oidc", config={"clientSecret": None})
        assert cleared["clientSecretPresent"] is False


async def test_test_connection_uses_unsaved_values(tmp_path: Path) -> None:
    async with running_server(tmp_path, parts=SSO_PARTS) as srv, RpcClient(srv.ws_url, srv.owner_token) as c:
        missing = await c.call("sso.testConnection", kind="saml")
        assert missing["ok"] is False and missing["error"]["code"] == "invalid"
        result = await c.call("sso.testConnection", kind="saml", config={"idpMetadataXml": idp_metadata()})
        assert result["ok"] is True and result["idpEntityId"] == "https://idp.example.com/metadata"
        request = parse_qs(urlsplit(result["redirectUrl"]).query)
        assert result["redirectUrl"].startswith("https://idp.example.com/sso?") and request["SAMLRequest"]
        broken = await c.call("sso.testConnection", kind="saml", config={"idpMetadataXml": "<x/>"})
        assert broken["ok"] is False and broken["error"]["code"] == "malformed"
        assert (await c.call("sso.getConfig", kind="saml"))["idpMetadataXml"] is None  # nothing saved
        dead = f"http://127.0.0.1:{free_port()}"
        down = await c.call("sso.testConnection", kind="oidc", config={"issuer": dead, "clientId": "x"})
        assert down["ok"] is False and down["error"]["code"] == "issuer"
        async with oidc_provider(redirect_uris=[f"{srv.url}/oidc/callback"], accounts={}) as peer:
            up = await c.call("sso.testConnection", kind="oidc", config={"issuer": peer.issuer, "clientId": "hangar"})
            assert up["ok"] is True and up["tokenEndpoint"].startswith(peer.issuer) and up["signingKeys"] == 1
        err = await rpc_error(c, "sso.testConnection", kind="oidc", config={"issuer": "ftp://x"})
        assert err.code == "invalid_args"


async def test_sp_metadata(tmp_path: Path) -> None:
    async with running_server(tmp_path, parts=SSO_PARTS) as srv, RpcClient(srv.ws_url, srv.owner_token) as c:
        meta = await c.call("sso.spMetadata", origin="https://hangar.example.com")
        assert meta["entityId"] == "https://hangar.example.com/saml"
        assert meta["acsUrl"] == "https://hangar.example.com/saml/acs"
        assert 'entityID="https://hangar.example.com/saml"' in meta["xml"] and meta["acsUrl"] in meta["xml"]
        await c.call("sso.saveConfig", kind="saml", config={"spEntityId": "urn:hangar:pinned"})
        pinned = await c.call("sso.spMetadata", origin="https://other.example.com")
        assert pinned["entityId"] == "urn:hangar:pinned" and pinned["acsUrl"] == "https://other.example.com/saml/acs"
        for bad in ("hangar.example.com", "https://hangar.example.com/path", "javascript:alert(1)"):
            assert (await rpc_error(c, "sso.spMetadata", origin=bad)).code == "invalid_args", bad


async def test_pairing_lockout_guard_and_providers_probe(tmp_path: Path) -> None:
    async with (
        running_server(tmp_path, parts=SSO_PARTS) as srv,
        RpcClient(srv.ws_url, srv.owner_token) as c,
        httpx.AsyncClient(base_url=srv.url) as http,
    ):
        refused = await rpc_error(c, "sso.setPairingEnabled", enabled=False)
        assert refused.code == "refused" and "no SSO connection works" in refused.message
        probe = await http.get("/auth/providers", headers={"origin": "https://app.example"})
        assert probe.headers["access-control-allow-origin"] == "*"
        assert probe.json() == {"providers": [], "pairingEnabled": True}
        preflight = await http.options(
            "/auth/providers",
            headers={"origin": "https://app.example", "access-control-request-method": "GET"},
        )
        assert preflight.status_code == 204 and preflight.headers["access-control-allow-origin"] == "*"

        # An enabled connection that does not work does not satisfy the guard.
        dead = f"http://127.0.0.1:{free_port()}"
        await c.call("sso.saveConfig", kind="oidc", config={"enabled": True, "issuer": dead, "clientId": "hangar"})
        refused = await rpc_error(c, "sso.setPairingEnabled", enabled=False)
        assert refused.code == "refused" and "oidc fails its test (issuer" in refused.message

        async with oidc_provider(redirect_uris=[f"{srv.url}/oidc/callback"], accounts={}) as peer:
            await c.call("sso.saveConfig", kind="oidc", config={"issuer": peer.issuer})
            probe = (await http.get("/auth/providers")).json()
            assert probe["providers"] == [
                {"id": "oidc", "kind": "oidc", "label": "Single sign-on (OpenID Connect)", "loginUrl": "/oidc/login"}
            ]
            assert await c.call("sso.setPairingEnabled", enabled=False) == {"pairingEnabled": False}
        assert (await http.get("/auth/providers")).json()["pairingEnabled"] is False
        invite = await http.post("/auth/pair", json={"code": "ABCD-EFGH", "deviceName": "x"})
        assert invite.status_code == 403 and invite.json()["error"]["code"] == "pairing_disabled"
        # While pairing is forbidden, the last enabled connection cannot be switched off either.
        last = await rpc_error(c, "sso.saveConfig", kind="oidc", config={"enabled": False})
        assert last.code == "refused" and "last enabled SSO connection" in last.message
        assert (await c.call("sso.getConfig", kind="oidc"))["enabled"] is True
        assert await c.call("sso.setPairingEnabled", enabled=True) == {"pairingEnabled": True}


async def test_session_policy_round_trip(tmp_path: Path) -> None:
    async with running_server(tmp_path, parts=SSO_PARTS) as srv, RpcClient(srv.ws_url, srv.owner_token) as c:
        assert await c.call("sso.sessionPolicy") == {"maxAgeMinutes": 0, "idleTimeoutMinutes": 0}
        assert await c.call("sso.setSessionPolicy", maxAgeMinutes=600, idleTimeoutMinutes=30) == {
            "maxAgeMinutes": 600,
            "idleTimeoutMinutes": 30,
        }
        assert await c.call("sso.sessionPolicy") == {"maxAgeMinutes": 600, "idleTimeoutMinutes": 30}
        err = await rpc_error(c, "sso.setSessionPolicy", maxAgeMinutes=-1, idleTimeoutMinutes=0)
        assert err.code == "invalid_args" and "maxAgeMinutes" in err.message
        err = await rpc_error(c, "sso.setSessionPolicy", maxAgeMinutes=1)
        assert err.code == "invalid_args" and "idleTimeoutMinutes" in err.message
