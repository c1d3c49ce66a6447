"""The dev-domain CA and leaves made by the real ``openssl`` command: modes, names, re-issue, trust inside only,
and a host without openssl (simulated by a PATH without it)."""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec

from hangar.errors import Unavailable
from hangar.rigs.devdomains.tls import NO_OPENSSL, DevTls, dev_ca_pem


@pytest.fixture
def tls(tmp_path: Path) -> DevTls:
    return DevTls(tmp_path / "rigs" / "tls")


def sans(path: Path) -> list[str]:
    cert = x509.load_pem_x509_certificate(path.read_bytes())
    return cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(x509.DNSName)


def test_ca_and_leaf_files_modes_and_names(tls: DevTls) -> None:
    leaf = tls.leaf("ws/space", {"app.test", "api.app.test"})
    assert tls.root.stat().st_mode & 0o777 == 0o700
    for key in (tls.ca_key, tls.leaf_key):
        assert key.stat().st_mode & 0o777 == 0o600
    assert tls.ca_cert.stat().st_mode & 0o777 == 0o644
    assert leaf.names == ("api.app.test", "app.test")  # exact names only: Firefox refuses a leaf with *.test
    assert sans(leaf.cert) == list(leaf.names)
    ca = x509.load_pem_x509_certificate(tls.ca_pem())
    assert isinstance(ca.public_key(), ec.EllipticCurvePublicKey) and ca.public_key().curve.name == "secp256r1"
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is True
    permitted = ca.extensions.get_extension_for_class(x509.NameConstraints).value.permitted_subtrees
    assert permitted is not None and {p.value for p in permitted} == {"test", "localhost"}
    assert b"PRIVATE" not in tls.ca_pem() and dev_ca_pem(tls.root.parent) == tls.ca_pem()


def test_leaf_is_reissued_only_when_the_names_change(tls: DevTls) -> None:
    first = tls.leaf("ws/space", {"app.test"})
    stamp = first.cert.stat().st_mtime_ns, first.cert.read_bytes()
    assert tls.leaf("ws/space", ["app.test"]).cert.read_bytes() == stamp[1]  # same set: kept as it is
    again = tls.leaf("ws/space", {"app.test", "b.localhost"})
    assert again.cert == first.cert and again.cert.read_bytes() != stamp[1]
    assert "b.localhost" in sans(again.cert)
    other = tls.leaf("ws/other-space", {"c.test"})  # one leaf per space: a rig sees only its space's names
    assert other.cert != first.cert and "app.test" not in sans(other.cert)
    empty = tls.leaf("ws/empty-space", set())  # a space without dev domains: a leaf that vouches for nothing
    cert = x509.load_pem_x509_certificate(empty.cert.read_bytes())
    assert empty.names == () and x509.SubjectAlternativeName not in {type(e.value) for e in cert.extensions}


async def handshake(tls: DevTls, scope: str, client: ssl.SSLContext, name: str) -> str | None:
    """Connect a TLS client for ``name`` to a server presenting the scope's leaf; the ALPN it settled on."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await writer.start_tls(tls.context(scope))
            await reader.read(1)
        except (ssl.SSLError, ConnectionError, asyncio.CancelledError):
            pass
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        client.set_alpn_protocols(["h2", "http/1.1"])
        _reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=client, server_hostname=name)
        alpn = writer.get_extra_info("ssl_object").selected_alpn_protocol()
        writer.close()
        return str(alpn)
    finally:
        server.close()


async def test_trusted_with_the_ca_for_exact_names_only_and_never_by_default(tls: DevTls) -> None:
    await asyncio.to_thread(tls.leaf, "ws/space", {"app.test", "api.app.test"})
    inside = ssl.create_default_context(cafile=str(tls.ca_cert))
    assert await handshake(tls, "ws/space", inside, "app.test") == "http/1.1"
    assert await handshake(tls, "ws/space", inside, "api.app.test") == "http/1.1"
    # a name of the same top-level domain that is not on the leaf is not covered
    with pytest.raises(ssl.SSLCertVerificationError, match=r"match|mismatch"):
        await handshake(tls, "ws/space", ssl.create_default_context(cafile=str(tls.ca_cert)), "other.test")
    with pytest.raises(ssl.SSLCertVerificationError):
        await handshake(tls, "ws/space", ssl.create_default_context(), "app.test")


def test_without_openssl_there_is_no_ca_and_it_says_why(tls: DevTls, monkeypatch: pytest.MonkeyPatch,
                                                        tmp_path: Path) -> None:  # fmt: skip
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    assert tls.unavailable_reason() == NO_OPENSSL and "plain HTTP still routes" in NO_OPENSSL
    with pytest.raises(Unavailable) as e:
        tls.leaf("ws/space", {"app.test"})
    assert e.value.message == NO_OPENSSL
    assert dev_ca_pem(tls.root.parent) is None
    assert not tls.ca_key.exists()
    with pytest.raises(Unavailable):
        tls.context("ws/space")  # never issued
