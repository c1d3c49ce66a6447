"""The server-local certificate authority of dev domains and its leaves, made in process with the ``cryptography``
library (no command is run: every host the server runs on can make them).

Browser rigs trust the CA (its public certificate only, ``dev_ca_pem``) so a page served under ``https://app.test``
through a rig's HTTPS lane is a secure context there, and nowhere else: no host trust store knows this CA. Its
certificate is name-constrained to ``test`` and ``localhost``, so even a leaked key could not vouch for a real site.

Why exact names and no wildcard on the leaf: no engine accepts a wildcard directly under a single-label top-level
domain (a SAN ``*.test`` does not cover ``app.test`` in Chromium, NSS or GnuTLS; OpenSSL's own check agrees), and
Firefox's verifier (mozilla::pkix) goes further: it takes such a SAN for a malformed name and refuses the whole
certificate (``SEC_ERROR_BAD_DER``), exact names included. So the leaf lists every dev domain of its space as an
exact name and nothing else (no names: no SAN, a leaf that vouches for nothing); it is re-issued (about 15
ms) whenever that set changes. One leaf per space: a rig is shown only the names it can reach.

Files under ``<dataDir>/rigs/tls/`` (directory 0700): ``ca.key`` and ``leaf.key`` (0600; one key serves every
leaf), ``ca.pem`` (0644), ``leaves/<digest>.pem`` and ``.json`` (the names and expiry it was issued for). Every
file is written whole (temp file, fsync, rename), and creation and issuance hold an exclusive lock on ``.lock``:
several processes share the data directory. Key material never leaves this directory: leaves are read by the
host-side TLS terminator only, and nothing here is ever placed in a guest. A CA whose files cannot be read is
said so (``Internal``) and never replaced behind the rigs that trust it; the HTTPS lane then says why it is off.
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import hashlib
import json
import os
import ssl
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from hangar.core.fileio import write_private_atomic
from hangar.errors import Internal, Unavailable

CA_DAYS = 3650
LEAF_DAYS = 397  # what browsers accept for public leaves; local trust has no cap, this keeps us conservative
RENEW_BEFORE_S = 30 * 86400
LEAF_NAME = "Hangar dev domains"
# RFC 5280: a DNS constraint "test" admits test and every name under it.
PERMITTED_NAMES = ("test", "localhost")


def _new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    """PKCS#8 PEM, unencrypted: the file's 0600 mode is its protection."""
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _read_key(path: Path) -> ec.EllipticCurvePrivateKey:
    try:
        key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    except (OSError, ValueError, TypeError) as exc:
        raise Internal(f"the dev-domain key {path.name} cannot be read: {exc}") from exc
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise Internal(f"the dev-domain key {path.name} is not an EC key")
    return key


def _read_cert(path: Path) -> x509.Certificate:
    try:
        return x509.load_pem_x509_certificate(path.read_bytes())
    except (OSError, ValueError) as exc:
        raise Internal(f"the dev-domain certificate {path.name} cannot be read: {exc}") from exc


def _usage(**allowed: bool) -> x509.KeyUsage:
    """A key usage allowing what ``allowed`` names and nothing else."""
    flags = ("digital_signature", "content_commitment", "key_encipherment", "data_encipherment", "key_agreement",
             "key_cert_sign", "crl_sign", "encipher_only", "decipher_only")  # fmt: skip
    return x509.KeyUsage(**{flag: allowed.get(flag, False) for flag in flags})


def _named(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _certificate(
    subject: str, public: ec.EllipticCurvePublicKey, issuer: x509.Name, days: int
) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(_named(subject))
        .issuer_name(issuer)
        .public_key(public)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public), critical=False)
    )


def _ca_certificate(key: ec.EllipticCurvePrivateKey, common_name: str) -> bytes:
    """A self-signed CA that may sign leaves only (no intermediate), for names under ``test`` and ``localhost``."""
    builder = (
        _certificate(common_name, key.public_key(), _named(common_name), CA_DAYS)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_usage(key_cert_sign=True, crl_sign=True), critical=True)
        .add_extension(
            x509.NameConstraints(permitted_subtrees=[x509.DNSName(n) for n in PERMITTED_NAMES], excluded_subtrees=None),
            critical=True,
        )
    )
    return builder.sign(key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)


def _leaf_certificate(
    public: ec.EllipticCurvePublicKey, ca_key: ec.EllipticCurvePrivateKey, ca: x509.Certificate, names: tuple[str, ...]
) -> bytes:
    """A TLS server certificate for exactly ``names``, signed by the CA."""
    builder = (
        _certificate(LEAF_NAME, public, ca.subject, LEAF_DAYS)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_usage(digital_signature=True), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
    )
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in names]), critical=False)
    return builder.sign(ca_key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)


def _write_public(path: Path, data: bytes) -> None:
    write_private_atomic(path, data)
    os.chmod(path, 0o644)


@dataclass(frozen=True)
class Leaf:
    cert: Path
    key: Path
    names: tuple[str, ...]  # the subject alternative names, sorted


class DevTls:
    """The CA and leaves under ``root`` (``<dataDir>/rigs/tls``). ``ca_pem`` and ``leaf`` block (key generation,
    file locks): call them from a worker thread."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._contexts: dict[str, tuple[tuple[int, int, int], ssl.SSLContext]] = {}

    @property
    def ca_cert(self) -> Path:
        return self.root / "ca.pem"

    @property
    def ca_key(self) -> Path:
        return self.root / "ca.key"

    @property
    def leaf_key(self) -> Path:
        return self.root / "leaf.key"

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.root.mkdir(parents=True, exist_ok=True)
        os.chmod(self.root, 0o700)
        fd = os.open(self.root / ".lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing drops the lock

    def _ensure_ca(self) -> None:
        """Make the CA when neither of its files exists (call with the lock held). One without the other is said,
        never mended by a new CA: rigs that trust the old one would stop trusting their leaves."""
        have_key, have_cert = self.ca_key.is_file(), self.ca_cert.is_file()
        if have_key and have_cert:
            return
        if have_key or have_cert:
            gone, kept = (self.ca_cert, self.ca_key) if have_key else (self.ca_key, self.ca_cert)
            raise Internal(
                f"the dev-domain CA is incomplete: {gone.name} is missing beside {kept.name}; "
                "restore it from a backup, or remove both to make a new CA (rigs must then trust the new one)"
            )
        key = _new_key()
        write_private_atomic(self.ca_key, _key_pem(key))
        # A distinct name per install: two servers' CAs trusted side by side stay tellable apart.
        _write_public(self.ca_cert, _ca_certificate(key, f"Hangar dev CA {os.urandom(4).hex()}"))

    def ca_pem(self) -> bytes:
        """The CA certificate (public part), made on first use."""
        if not self.ca_cert.is_file() or not self.ca_key.is_file():
            with self._locked():
                self._ensure_ca()
        return self.ca_cert.read_bytes()

    def _paths(self, scope: str) -> tuple[Path, Path]:
        # The scope (workspace and space ids) names a file only through its digest: ids are never paths.
        digest = hashlib.sha256(scope.encode()).hexdigest()[:32]
        folder = self.root / "leaves"
        return folder / f"{digest}.pem", folder / f"{digest}.json"

    def leaf(self, scope: str, names: Iterable[str]) -> Leaf:
        """The leaf of ``scope`` (one space) for exactly ``names``, issued anew when the names, the CA or the
        coming expiry say so. ``Internal`` when the CA's files cannot be read."""
        wanted = tuple(sorted(set(names)))
        cert, meta = self._paths(scope)
        current = self._issued(cert, meta, wanted)
        if current is not None:
            return current
        with self._locked():
            current = self._issued(cert, meta, wanted)  # another process may have issued it meanwhile
            if current is not None:
                return current
            self._ensure_ca()
            if not self.leaf_key.is_file():
                write_private_atomic(self.leaf_key, _key_pem(_new_key()))
            self._issue(cert, meta, wanted)
        return Leaf(cert, self.leaf_key, wanted)

    def _ca_digest(self) -> str:
        return hashlib.sha256(self.ca_cert.read_bytes()).hexdigest()

    def _issued(self, cert: Path, meta: Path, wanted: tuple[str, ...]) -> Leaf | None:
        try:
            info = json.loads(meta.read_text())
            fresh = (
                cert.is_file()
                and self.leaf_key.is_file()
                and tuple(info["names"]) == wanted
                and info["ca"] == self._ca_digest()
                and float(info["notAfter"]) - time.time() > RENEW_BEFORE_S
            )
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return Leaf(cert, self.leaf_key, wanted) if fresh else None

    def _issue(self, cert: Path, meta: Path, names: tuple[str, ...]) -> None:
        public = _read_key(self.leaf_key).public_key()
        pem = _leaf_certificate(public, _read_key(self.ca_key), _read_cert(self.ca_cert), names)
        issued_at = time.time()
        cert.parent.mkdir(mode=0o700, exist_ok=True)
        _write_public(cert, pem)
        info = {"names": list(names), "ca": self._ca_digest(), "notAfter": issued_at + LEAF_DAYS * 86400}
        _write_public(meta, json.dumps(info).encode())

    def context(self, scope: str) -> ssl.SSLContext:
        """A TLS server context presenting the leaf of ``scope`` as issued now (loaded again once any process
        re-issued it): TLS 1.2 or later, ALPN ``http/1.1`` only (the lane relays plaintext HTTP/1.1). Cheap when
        nothing changed (one ``stat``); ``Unavailable`` when no leaf was ever issued for ``scope``."""
        cert, _meta = self._paths(scope)
        try:
            st = cert.stat()
        except FileNotFoundError as exc:
            raise Unavailable("no dev-domain certificate has been issued for this space") from exc
        stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
        cached = self._contexts.get(scope)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(cert, self.leaf_key)
        context.set_alpn_protocols(["http/1.1"])
        self._contexts[scope] = (stamp, context)
        return context


def dev_ca_pem(rigs_dir: Path) -> bytes:
    """The dev-domain CA certificate (public part only) that browser rigs trust (``RigSpec.trust_pem``), made on
    first use under ``<rigs_dir>/tls``. Blocks: from async code call it as
    ``await asyncio.to_thread(dev_ca_pem, app.datadir.sub("rigs"))``."""
    return DevTls(rigs_dir / "tls").ca_pem()
