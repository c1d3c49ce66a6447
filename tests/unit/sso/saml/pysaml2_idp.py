"""A real SAML identity provider for the tests: pysaml2's IdP (signing with Debian's ``xmlsec1``), served over
HTTP on loopback. It answers our HTTP-Redirect ``AuthnRequest`` at ``/sso/redirect`` with an auto-posting
HTML form (HTTP-POST binding) carrying its signed response, exactly as a browser would receive it; the
signed-in user is whoever the test sets in ``user``. ``/metadata`` serves its entity descriptor."""

from __future__ import annotations

import contextlib
import shutil
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.unit.sso.saml.kit import keypair

XMLSEC1 = shutil.which("xmlsec1")
RSA_SHA256 = "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256"
SHA256 = "http://www.w3.org/2001/04/xmlenc#sha256"
RSA_SHA1 = "http://www.w3.org/2000/09/xmldsig#rsa-sha1"
SHA1 = "http://www.w3.org/2000/09/xmldsig#sha1"


@dataclass
class IdpUser:
    name_id: str
    attributes: dict[str, list[str]] = field(default_factory=dict)


class Pysaml2Idp:
    def __init__(self, workdir: Path, sp_metadata: bytes) -> None:
        if XMLSEC1 is None:
            raise RuntimeError("xmlsec1 is not installed (Debian package xmlsec1); pysaml2 needs it to sign")
        self.workdir = workdir
        self.sp_metadata = sp_metadata
        self.user = IdpUser("ada@example.test", {"email": ["ada@example.test"], "displayName": ["Ada"]})
        self.requests_seen: list[str] = []
        # pysaml2 signs with SHA-1 unless told otherwise; tests choose.
        self.sign_alg = RSA_SHA256
        self.digest_alg = SHA256
        self.sign_response = True
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.base = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self.entity_id = f"{self.base}/metadata"
        self.sso_url = f"{self.base}/sso/redirect"
        kp = keypair("pysaml2-idp")
        (workdir / "idp.key").write_bytes(kp.key_pem)
        (workdir / "idp.crt").write_bytes(kp.cert_pem)
        (workdir / "sp.xml").write_bytes(sp_metadata)
        self.server = self._make_server()
        self._thread: threading.Thread | None = None

    def _config(self) -> dict[str, Any]:
        from saml2 import BINDING_HTTP_REDIRECT
        from saml2.saml import NAME_FORMAT_BASIC, NAMEID_FORMAT_EMAILADDRESS, NAMEID_FORMAT_PERSISTENT

        return {
            "entityid": self.entity_id,
            "service": {
                "idp": {
                    "endpoints": {"single_sign_on_service": [(self.sso_url, BINDING_HTTP_REDIRECT)]},
                    "policy": {
                        "default": {
                            "lifetime": {"minutes": 5},
                            "attribute_restrictions": None,
                            "name_form": NAME_FORMAT_BASIC,
                        }
                    },
                    "name_id_format": [NAMEID_FORMAT_EMAILADDRESS, NAMEID_FORMAT_PERSISTENT],
                    "sign_response": True,
                    "sign_assertion": True,
                    "want_authn_requests_signed": False,
                }
            },
            "metadata": {"local": [str(self.workdir / "sp.xml")]},
            "key_file": str(self.workdir / "idp.key"),
            "cert_file": str(self.workdir / "idp.crt"),
            "xmlsec_binary": XMLSEC1,
            "delete_tmpfiles": True,
        }

    def _make_server(self) -> Any:
        from saml2.config import IdPConfig
        from saml2.server import Server

        conf = IdPConfig()
        conf.load(self._config())
        return Server(config=conf)

    def metadata_xml(self) -> str:
        from saml2.metadata import entity_descriptor

        return str(entity_descriptor(self.server.config))

    def answer(self, saml_request: str, relay_state: str | None) -> str:
        """The auto-posting HTML form carrying the signed response to ``saml_request``."""
        from saml2 import BINDING_HTTP_POST, BINDING_HTTP_REDIRECT
        from saml2.saml import NAMEID_FORMAT_EMAILADDRESS, NameID

        req = self.server.parse_authn_request(saml_request, BINDING_HTTP_REDIRECT)
        message = req.message
        self.requests_seen.append(message.id)
        args = self.server.response_args(message, [BINDING_HTTP_POST])
        name_id = NameID(format=NAMEID_FORMAT_EMAILADDRESS, text=self.user.name_id)
        response = self.server.create_authn_response(
            identity=self.user.attributes,
            name_id=name_id,
            authn={"class_ref": "urn:oasis:names:tc:SAML:2.0:ac:classes:Password"},
            sign_response=self.sign_response,
            sign_assertion=True,
            sign_alg=self.sign_alg,
            digest_alg=self.digest_alg,
            **args,
        )
        http = self.server.apply_binding(
            BINDING_HTTP_POST, str(response), args["destination"], relay_state or "", response=True
        )
        return str(http["data"])

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        idp = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                url = urlsplit(self.path)
                if url.path == "/metadata":
                    self._send(200, idp.metadata_xml(), "application/samlmetadata+xml")
                    return
                if url.path != "/sso/redirect":
                    self._send(404, "not found", "text/plain")
                    return
                query = parse_qs(url.query)
                try:
                    page = idp.answer(query["SAMLRequest"][0], query.get("RelayState", [None])[0])
                except Exception as exc:  # the IdP's own refusal, shown to the test
                    self._send(400, f"IdP refused the request: {exc!r}", "text/plain")
                    return
                self._send(200, page, "text/html; charset=utf-8")

            def _send(self, status: int, body: str, ctype: str) -> None:
                data = body.encode()
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler

    def start(self) -> None:
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="pysaml2-idp", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(5)


@contextlib.contextmanager
def running_idp(workdir: Path, sp_metadata: bytes) -> Iterator[Pysaml2Idp]:
    idp = Pysaml2Idp(workdir, sp_metadata)
    idp.start()
    try:
        yield idp
    finally:
        idp.stop()
