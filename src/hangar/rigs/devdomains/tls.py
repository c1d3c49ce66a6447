"""The server-local certificate authority of dev domains and its leaves, made with the ``openssl`` command.

Browser rigs trust the CA (its public certificate only, ``dev_ca_pem``) so a page served under ``https://app.test``
through a rig's HTTPS lane is a secure context there, and nowhere else: no host trust store knows this CA. Its
certificate is name-constrained to ``test`` and ``localhost``, so even a leaked key could not vouch for a real site.

Why exact names and no wildcard on the leaf: no engine accepts a wildcard directly under a single-label top-level
domain (a SAN ``*.test`` does not cover ``app.test`` in Chromium, NSS or GnuTLS; OpenSSL's own check agrees), and
Firefox's verifier (mozilla::pkix) goes further: it takes such a SAN for a malformed name and refuses the whole
certificate (``SEC_ERROR_BAD_DER``), exact names included. So the leaf lists every dev domain of its space as an
exact name and nothing else (no names: no SAN, a leaf that vouches for nothing); it is re-issued (about 15 ms)
whenever that set changes. One leaf per space: a rig is shown only the names it can reach.

Files under ``<dataDir>/rigs/tls/`` (directory 0700): ``ca.key`` and ``leaf.key`` (0600; one key serves every
leaf), ``ca.pem`` (0644), ``leaves/<digest>.pem`` and ``.json`` (the names and expiry it was issued for). Every
file is written whole (temp file, fsync, rename), and creation and issuance hold an exclusive lock on ``.lock``:
several processes share the data directory. Key material never leaves this directory: leaves are read by the
host-side TLS terminator only, and nothing here is ever placed in a guest.

Without ``openssl`` on the host there is no CA, hence no HTTPS lane; plain HTTP dev domains still route.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import ssl
import subprocess
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from hangar.core.fileio import write_private_atomic
from hangar.errors import Internal, Unavailable

CA_DAYS = 3650
LEAF_DAYS = 397  # what browsers accept for public leaves; local trust has no cap, this keeps us conservative
RENEW_BEFORE_S = 30 * 86400
OPENSSL_TIMEOUT_S = 30.0
NO_OPENSSL = (
    "the openssl command is not installed on this host, so dev domains have no HTTPS lane (plain HTTP still "
    "routes); install openssl to get one"
)

_SUBJECT = "[req]\ndistinguished_name = dn\nprompt = no\n[dn]\nCN = {cn}\n"  # the config, fed on stdin
_CA_EXTENSIONS = (
    "basicConstraints=critical,CA:TRUE,pathlen:0",
    "keyUsage=critical,keyCertSign,cRLSign",
    # RFC 5280: a DNS constraint "test" admits test and every name under it
    "nameConstraints=critical,permitted;DNS:test,permitted;DNS:localhost",
    "subjectKeyIdentifier=hash",
)
_LEAF_EXTENSIONS = (
    "basicConstraints=critical,CA:FALSE",
    "keyUsage=critical,digitalSignature",
    "extendedKeyUsage=serverAuth",
)


def openssl_reason() -> str | None:
    """None when the ``openssl`` command is on this process's PATH; else why there is no HTTPS lane."""
    return None if shutil.which("openssl") else NO_OPENSSL


def _openssl(args: list[str], *, stdin: str | None = None) -> bytes:
    command = shutil.which("openssl")
    if command is None:
        raise Unavailable(NO_OPENSSL)
    try:
        done = subprocess.run(
            [command, *args],
            input=stdin.encode() if stdin is not None else None,
            capture_output=True,
            timeout=OPENSSL_TIMEOUT_S,
            check=False,
            env={"PATH": os.environ.get("PATH", ""), "OPENSSL_CONF": os.devnull},
        )
    except subprocess.TimeoutExpired as exc:
        raise Internal(f"openssl {args[0]} did not finish in {OPENSSL_TIMEOUT_S:.0f} s") from exc
    if done.returncode != 0:
        raise Internal(f"openssl {args[0]} failed: {done.stderr.decode(errors='replace').strip()[:300]}")
    return done.stdout


def _new_key() -> bytes:
    """An EC P-256 private key (PEM), straight from openssl's stdout: it never sits in a file we did not make
    0600."""
    return _openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"])


def _write_public(path: Path, data: bytes) -> None:
    write_private_atomic(path, data)
    os.chmod(path, 0o644)


@dataclass(frozen=True)
class Leaf:
    cert: Path
    key: Path
    names: tuple[str, ...]  # the subject alternative names, wildcards first


class DevTls:
    """The CA and leaves under ``root`` (``<dataDir>/rigs/tls``). ``ca_pem`` and ``leaf`` block (openssl, file
    locks): call them from a worker thread."""

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

    def unavailable_reason(self) -> str | None:
        return openssl_reason()

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.root.mkdir(parents=True, exist_ok=True)
        os.chmod(self.root, 0o700)
        fd = os.open(self.root / ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing drops the lock

    def _ensure_ca(self) -> None:
        """Make the CA unless both its files exist (call with the lock held)."""
        if self.ca_key.is_file() and self.ca_cert.is_file():
            return
        reason = openssl_reason()
        if reason is not None:
            raise Unavailable(reason)
        key = _new_key()
        write_private_atomic(self.ca_key, key)
        # A distinct name per install: two servers' CAs trusted side by side stay tellable apart.
        cn = f"Hangar dev CA {os.urandom(4).hex()}"
        args = ["req", "-config", "/dev/stdin", "-x509", "-new", "-key", str(self.ca_key), "-sha256",
                "-days", str(CA_DAYS)]  # fmt: skip
        for ext in _CA_EXTENSIONS:
            args += ["-addext", ext]
        _write_public(self.ca_cert, _openssl(args, stdin=_SUBJECT.format(cn=cn)))

    def ca_pem(self) -> bytes:
        """The CA certificate (public part), made on first use; ``Unavailable`` without openssl."""
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
        coming expiry say so. ``Unavailable`` without openssl."""
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
                write_private_atomic(self.leaf_key, _new_key())
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
        args = ["req", "-config", "/dev/stdin", "-x509", "-new", "-key", str(self.leaf_key),
                "-CA", str(self.ca_cert), "-CAkey", str(self.ca_key), "-sha256", "-days", str(LEAF_DAYS)]  # fmt: skip
        san = ("subjectAltName=" + ",".join(f"DNS:{n}" for n in names),) if names else ()
        for ext in (*_LEAF_EXTENSIONS, *san):
            args += ["-addext", ext]
        issued_at = time.time()
        cert.parent.mkdir(mode=0o700, exist_ok=True)
        _write_public(cert, _openssl(args, stdin=_SUBJECT.format(cn="Hangar dev domains")))
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


def dev_ca_pem(rigs_dir: Path) -> bytes | None:
    """The dev-domain CA certificate (public part only) that browser rigs trust (``RigSpec.trust_pem``), made on
    first use under ``<rigs_dir>/tls``; None when this host has no openssl (then there is no HTTPS lane to trust).
    Blocks: from async code call it as ``await asyncio.to_thread(dev_ca_pem, app.datadir.sub("rigs"))``."""
    try:
        return DevTls(rigs_dir / "tls").ca_pem()
    except Unavailable:
        return None
