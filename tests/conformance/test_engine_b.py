"""Engine B (Firefox ESR over WebDriver BiDi) launched on this host: every verb of ``EngineSession``, plus what
is particular to it: the console feed from the start of each load, the document's HTTP status, live-view
frames at most six a second, and a dev CA trusted through the profile's NSS database."""

from __future__ import annotations

import asyncio
import datetime
import ssl
import time
from pathlib import Path

import pytest
from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from hangar.rigs.engines.clipboard_image import encode
from hangar.rigs.engines.firefox.engine import NO_CLIPBOARD_IMAGES, FirefoxSession
from hangar.rigs.engines.hostlaunch import host_engine
from hangar.rigs.engines.session import EngineSession
from tests.conformance.engine_fixtures import engine_fixture, pages_fixture
from tests.conformance.w3c_cases import W3CEngineCases, shows
from tests.support.images import solid_png
from tests.support.pages import PageServer

pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="module")]


pages = pages_fixture()
session = engine_fixture("engine-b")


class TestEngineB(W3CEngineCases):
    async def close_others(self, session: EngineSession) -> None:
        assert isinstance(session, FirefoxSession)
        for context in session._pages.known():  # the session's pages (not its blank reserve tab)
            if context != session._context:
                await session._client.call("browsingContext.close", {"context": context})

    async def test_session_shape(self, session: EngineSession) -> None:
        assert isinstance(session, FirefoxSession)
        assert (session.engine, session.hard_reload, session.real_drop) == ("engine-b", False, False)
        assert await session.viewport() == (1280, 800)  # the boot display

    async def test_clipboard_images_are_refused_and_why(self, session: EngineSession, pages: PageServer) -> None:
        """Headless Firefox's clipboard keeps text and HTML only: the image write answers False saying so and
        leaves the clipboard as it was. The claim itself is checked: the page's own write of a valid PNG
        resolves, and the clipboard then holds no image (were that to change, engine B could take images)."""
        await session.navigate(pages.url("/bc-form.html"))  # loopback: a secure context
        assert await session.clipboard_write("still here") is True
        png = solid_png(16, 16, (200, 0, 0))
        assert await session.clipboard_write_image("image/png", png) is False
        assert session.clipboard_image_note == NO_CLIPBOARD_IMAGES
        assert await session.clipboard_read() == "still here"
        assert isinstance(session, FirefoxSession)
        answer = await session._call("clipboard_image", "write", encode(png), "image/png", 0)
        assert answer == {"kept": False, "type": "image/png", "converted": False}
        assert await session.clipboard_read_image() is None and session.clipboard_image_note is None

    async def test_status_of_the_document(self, session: EngineSession, pages: PageServer) -> None:
        assert (await session.navigate(pages.url("/bc-form.html"))).status == 200
        missing = await session.navigate(pages.url("/status/404"))
        assert (missing.status, missing.title) == (404, "status 404")
        assert (await session.reload(hard=True)).status == 404

    async def test_console_includes_output_during_load(self, session: EngineSession, pages: PageServer) -> None:
        await session.navigate(pages.url("/bc-console.html"))
        x, y = await session.locate("#log")
        await session.click(x, y)
        assert await shows(session, 'body[data-logged="yes"]')
        for _ in range(50):  # the entry arrives as an event; give it a moment
            extracted = await session.extract("console")
            if "logged-after-load" in extracted.content:
                break
            await asyncio.sleep(0.1)
        assert extracted.kind == "console" and extracted.note is None
        assert "[log] logged-during-load" in extracted.content
        assert "[warn] logged-after-load" in extracted.content

    async def test_frames_at_most_six_a_second(self, session: EngineSession, pages: PageServer) -> None:
        await session.navigate(pages.url("/bc-paint.html?animate=1"))  # changes every animation frame
        frames = session.frames(640, 400)
        stamps: list[float] = []
        try:
            start = time.monotonic()
            async for frame in frames:
                assert (frame.width, frame.height) == (640, 400)  # 1280x800 fitted, not stretched
                stamps.append(frame.captured_at)
                if time.monotonic() - start > 2.5:
                    break
        finally:
            await frames.aclose()  # type: ignore[attr-defined]
        assert len(stamps) >= 3  # the page kept changing, so frames kept coming
        for i, stamp in enumerate(stamps):
            in_one_second = [s for s in stamps[i:] if s - stamp < 1.0]
            assert len(in_one_second) <= 7, stamps  # six intervals fit in one second, never more

    async def test_https_needs_the_trusted_ca(self, session: EngineSession, tmp_path: Path) -> None:
        ca_pem = await _tls_pages(tmp_path)
        async with _https_server(tmp_path) as port:
            untrusted = await session.navigate(f"https://localhost:{port}/")
            assert untrusted.title != "trusted page"  # Firefox's certificate error page
            async with host_engine("engine-b", ca_file=str(ca_pem)) as trusting:
                trusted = await trusting.navigate(f"https://localhost:{port}/")
                assert (trusted.title, trusted.status) == ("trusted page", 200)


async def _tls_pages(tmp_path: Path) -> Path:
    """A throw-away CA and a leaf for localhost signed by it, as PEM files in ``tmp_path``."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Hangar test CA")])
    ca = (
        x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                     data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                     crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
        .sign(ca_key, hashes.SHA256())
    )  # fmt: skip
    leaf_key = ec.generate_private_key(ec.SECP256R1())
    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
        .issuer_name(ca_name).public_key(leaf_key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )  # fmt: skip
    (tmp_path / "ca.pem").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    (tmp_path / "leaf.pem").write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    (tmp_path / "leaf.key").write_bytes(
        leaf_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return tmp_path / "ca.pem"


class _https_server:
    """An HTTPS page on localhost with the leaf from ``_tls_pages``."""

    def __init__(self, tmp_path: Path) -> None:
        self._tmp = tmp_path
        self._runner: web.AppRunner | None = None

    async def __aenter__(self) -> int:
        async def page(_: web.Request) -> web.Response:
            return web.Response(text="<!doctype html><title>trusted page</title>ok", content_type="text/html")

        app = web.Application()
        app.router.add_get("/", page)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self._tmp / "leaf.pem", self._tmp / "leaf.key")
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=context)
        await site.start()
        server = site._server
        assert server is not None
        return int(server.sockets[0].getsockname()[1])  # type: ignore[union-attr]

    async def __aexit__(self, *_: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
