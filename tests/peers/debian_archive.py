"""A Debian archive on this host, as far as a pack's freshness reads one: ``dists/<suite>/InRelease`` (clear-signed
in form, as a mirror serves it) and ``dists/<suite>/Release``, each with the ``Date`` the test sets for the suite,
over real HTTP on loopback. It records every request. ``apt_root`` writes an apt configuration naming it for the
release and its ``-updates`` and ``-security`` suites (what a server is given as ``rig_apt_root``).
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

RELEASE = "bookworm"
SUITES = (RELEASE, f"{RELEASE}-updates", f"{RELEASE}-security")


def release_text(suite: str, when: datetime) -> str:
    """A Release file's head as Debian's archive writes it, then a few index lines (indented, as in the real
    file)."""
    return (
        "Origin: Debian\nLabel: Debian\n"
        f"Suite: {suite}\nCodename: {suite}\n"
        f"Date: {format_datetime(when.astimezone(UTC), usegmt=True)}\n"
        "Acquire-By-Hash: yes\nArchitectures: amd64 arm64\nComponents: main contrib non-free-firmware\n"
        "Description: Debian test archive\nSHA256:\n"
        " 0000000000000000000000000000000000000000000000000000000000000000   1234 main/binary-amd64/Packages\n"
    )


class DebianArchive:
    """``with DebianArchive() as archive:`` serves the suites at ``archive.url``; set ``archive.dates[suite]``."""

    def __init__(self, address: str = "127.0.0.1") -> None:
        self.address = address
        start = datetime(2026, 1, 10, 8, 0, tzinfo=UTC)
        self.dates: dict[str, datetime] = dict.fromkeys(SUITES, start)
        self.inrelease = True  # False: only ``Release`` is served, as some mirrors do
        self.failing = False  # True: every request answers 503
        self.requests: list[str] = []
        self._server = ThreadingHTTPServer((address, 0), self._handler())
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://{self.address}:{self.port}/debian"

    def apt_root(self, folder: Path) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        lines = [f"deb {self.url} {suite} main" for suite in SUITES]
        (folder / "sources.list").write_text("\n".join(lines) + "\n")
        return folder

    def __enter__(self) -> DebianArchive:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _answer(self, path: str) -> tuple[int, str]:
        if self.failing:
            return 503, "the archive is down"
        parts = path.split("/")  # "", "debian", "dists", suite, file
        if len(parts) != 5 or parts[1:3] != ["debian", "dists"] or parts[3] not in self.dates:
            return 404, "no such file"
        suite, name = parts[3], parts[4]
        text = release_text(suite, self.dates[suite])
        if name == "Release":
            return 200, text
        if name == "InRelease" and self.inrelease:
            signature = "-----BEGIN PGP SIGNATURE-----\n\niQ==\n-----END PGP SIGNATURE-----\n"
            return 200, f"-----BEGIN PGP SIGNED MESSAGE-----\nHash: SHA512\n\n{text}{signature}"
        return 404, "no such file"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        archive = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                archive.requests.append(self.path)
                status, text = archive._answer(self.path)
                body = text.encode()
                self.send_response(status)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        return Handler
