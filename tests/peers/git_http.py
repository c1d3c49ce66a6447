"""A git server over HTTP on this host: git's own ``git http-backend`` (smart HTTP) behind a small threaded HTTP
server, serving the bare repositories under a folder. It records every request, can answer a path with a
redirect, and can ask for credentials (HTTP Basic), recording whether any were sent; ``authorize`` (given the
repository path and the Basic user and password) checks them, and an authorized request may push.
"""

from __future__ import annotations

import base64
import os
import subprocess
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit


class GitHttp:
    """``with GitHttp(root) as forge:`` serves ``root/<name>.git`` at ``forge.url("<name>.git")``."""

    def __init__(self, root: Path, address: str = "127.0.0.1", port: int = 0) -> None:
        self.root, self.address = root, address
        self.requests: list[str] = []  # "GET /app.git/info/refs?service=git-upload-pack"
        self.credentials: list[str] = []  # the Authorization headers received
        self.redirects: dict[str, str] = {}  # path prefix -> the URL prefix it redirects to
        self.needs_auth = False
        self.authorize: Callable[[str, str, str], bool] | None = None  # (path, user, password) -> allowed
        self._server = ThreadingHTTPServer((address, port), self._handler())
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def url(self, path: str) -> str:
        return f"http://{self.address}:{self.port}/{path}"

    def __enter__(self) -> GitHttp:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def authorized_user(self, path: str, header: str) -> str | None:
        """The Basic user of an accepted ``Authorization`` header (any when there is no ``authorize``)."""
        scheme, _, encoded = header.partition(" ")
        if scheme.lower() != "basic":
            return None
        try:
            user, _, password = base64.b64decode(encoded).decode().partition(":")
        except (ValueError, UnicodeDecodeError):
            return None
        if self.authorize is not None and not self.authorize(path, user, password):
            return None
        return user or "anonymous"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        forge = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                self._serve()

            def do_POST(self) -> None:
                self._serve()

            def _serve(self) -> None:
                forge.requests.append(f"{self.command} {self.path}")
                if "Authorization" in self.headers:
                    forge.credentials.append(self.headers["Authorization"])
                for prefix, target in forge.redirects.items():
                    if self.path.startswith(prefix):
                        self.send_response(302)
                        self.send_header("Location", target + self.path[len(prefix) :])
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                user = forge.authorized_user(self.path, self.headers.get("Authorization", ""))
                if forge.needs_auth and user is None:
                    self.send_response(401)
                    self.send_header("WWW-Authenticate", 'Basic realm="forge"')
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                parts = urlsplit(self.path)
                env = {
                    "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                    "GIT_PROJECT_ROOT": str(forge.root),
                    "GIT_HTTP_EXPORT_ALL": "1",
                    "REQUEST_METHOD": self.command,
                    "PATH_INFO": parts.path,
                    "QUERY_STRING": parts.query,
                    "CONTENT_TYPE": self.headers.get("Content-Type", ""),
                    "CONTENT_LENGTH": str(len(body)),
                    "REMOTE_ADDR": self.client_address[0],
                    **({"REMOTE_USER": user} if user else {}),
                    "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
                    "HTTP_GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
                }
                done = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True, check=False)
                # CGI: header lines, a blank line, the payload (whose own bytes are left as they are)
                head, _, payload = done.stdout.partition(b"\r\n\r\n" if b"\r\n\r\n" in done.stdout else b"\n\n")
                headers = [line.split(":", 1) for line in head.decode().splitlines() if ":" in line]
                status = next((int(v.split()[0]) for k, v in headers if k.strip().lower() == "status"), 200)
                self.send_response(status)
                for key, value in headers:
                    if key.strip().lower() != "status":
                        self.send_header(key.strip(), value.strip())
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        return Handler
