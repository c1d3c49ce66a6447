"""The dev-domain CA and leaves (made in process, no command run): modes, names, re-issue, a leaf that verifies
against its CA for its exact names only (as a real TLS client and as an X.509 path validator), trust inside only,
and a CA whose files cannot be read (said so, never replaced)."""

from __future__ import annotations

import asyncio
import datetime
import ssl
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID
from cryptography.x509.verification import PolicyBuilder, Store, VerificationError

from hangar.errors import Internal, Unavailable
from hangar.rigs.devdomains.tls import CA_DAYS, LEAF_DAYS, DevTls, dev_ca_pem


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


def test_the_ca_signs_leaves_only_and_a_leaf_verifies_against_it_for_its_names(tls: DevTls) -> None:
    leaf = tls.leaf("ws/space", {"app.test", "b.localhost"})
    ca = x509.load_pem_x509_certificate(tls.ca_pem())
    cert = x509.load_pem_x509_certificate(leaf.cert.read_bytes())
    basic = ca.extensions.get_extension_for_class(x509.BasicConstraints)
    assert basic.critical and basic.value.ca and basic.value.path_length == 0  # no intermediate below it
    usage = ca.extensions.get_extension_for_class(x509.KeyUsage)
    assert usage.critical and usage.value.key_cert_sign and usage.value.crl_sign and not usage.value.digital_signature
    assert ca.extensions.get_extension_for_class(x509.NameConstraints).critical
    assert ca.subject == ca.issuer and ca.subject.rfc4514_string().startswith("CN=Hangar dev CA ")
    assert ca.not_valid_after_utc - ca.not_valid_before_utc == datetime.timedelta(days=CA_DAYS)

    assert cert.issuer == ca.subject and cert.subject.rfc4514_string() == "CN=Hangar dev domains"
    assert cert.not_valid_after_utc - cert.not_valid_before_utc == datetime.timedelta(days=LEAF_DAYS)
    assert cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is False
    leaf_usage = cert.extensions.get_extension_for_class(x509.KeyUsage).value
    assert leaf_usage.digital_signature and not leaf_usage.key_cert_sign
    eku = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(eku) == [ExtendedKeyUsageOID.SERVER_AUTH]
    key = x509.load_pem_x509_certificate(leaf.cert.read_bytes()).public_key()
    assert isinstance(key, ec.EllipticCurvePublicKey) and key.curve.name == "secp256r1"

    real = x509.load_pem_x509_certificate(tls.leaf("ws/bad", {"example.com"}).cert.read_bytes())
    # Verified as of now, after every leaf here was issued (a leaf is valid from the second it was issued in).
    policy = PolicyBuilder().store(Store([ca])).time(datetime.datetime.now(datetime.UTC))
    for name in ("app.test", "b.localhost"):
        chain = policy.build_server_verifier(x509.DNSName(name)).verify(cert, [])
        assert chain == [cert, ca]
    for other in ("other.test", "test", "app.test.example"):
        with pytest.raises(VerificationError):
            policy.build_server_verifier(x509.DNSName(other)).verify(cert, [])
    # The name constraints hold even for a leaf the CA signed for a real site's name (dev domains never are one).
    with pytest.raises(VerificationError, match="constraint"):
        policy.build_server_verifier(x509.DNSName("example.com")).verify(real, [])
    # Another install's CA does not vouch for this leaf.
    stranger = DevTls(tls.root.parent / "other-tls")
    with pytest.raises(VerificationError):
        PolicyBuilder().store(Store([x509.load_pem_x509_certificate(stranger.ca_pem())])).build_server_verifier(
            x509.DNSName("app.test")
        ).verify(cert, [])


def test_a_ca_that_cannot_be_read_is_said_and_never_replaced(tls: DevTls) -> None:
    tls.ca_pem()
    tls.ca_key.write_bytes(b"-----BEGIN PRIVATE KEY-----\nbroken\n-----END PRIVATE KEY-----\n")
    ca = tls.ca_cert.read_bytes()
    with pytest.raises(Internal) as e:
        tls.leaf("ws/space", {"app.test"})
    assert e.value.message.startswith("the dev-domain key ca.key cannot be read")
    assert tls.ca_cert.read_bytes() == ca and dev_ca_pem(tls.root.parent) == ca  # the rigs' trust is kept
    with pytest.raises(Unavailable):
        tls.context("ws/space")  # never issued


@pytest.mark.parametrize("lost", ["ca.key", "ca.pem"])
def test_a_ca_missing_one_of_its_files_is_said_and_never_replaced(tls: DevTls, lost: str) -> None:
    tls.ca_pem()
    files = {p.name: p for p in (tls.ca_key, tls.ca_cert)}
    (kept_path,) = [p for name, p in files.items() if name != lost]
    kept = kept_path.read_bytes()
    files[lost].unlink()
    with pytest.raises(Internal) as e:
        tls.ca_pem()
    assert e.value.message.startswith(f"the dev-domain CA is incomplete: {lost} is missing")
    assert kept_path.read_bytes() == kept and not files[lost].exists()  # nothing made behind the rigs' trust
