"""Dev-domain lanes on real enclosure rigs: a dev server in one rig reached by name from another rig, over HTTP
and HTTPS (the server-local CA trusted inside, not outside), the key never inside a rig, the lane ports the host's,
and a rig's connections to the lanes capped (each is a descriptor of the server process).

The lanes are started on a terminal rig here: browser rigs (which get them at boot) carry them the same way, since
``DevLanes`` needs only ``RigHandle.serve_loopback``, ``connect`` and ``set_local_names``.
"""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path

import pytest

from hangar.errors import Conflict, Refused
from hangar.rigs.backends.enclosure import EnclosureRig
from hangar.rigs.devdomains.lanes import DevLanes, LaneMiss, Streams
from hangar.rigs.devdomains.tls import DevTls
from tests.integration.rigs_enclosure_env import enclosure, spec

pytestmark = [pytest.mark.needs_root, pytest.mark.packs("terminal")]

DEV_PORT = 18300


async def start_dev_server(rig: EnclosureRig, port: int, text: str) -> None:
    await rig.exec(
        f"mkdir -p ~/site && echo '{text}' > ~/site/index.html && cd ~/site && "
        f"setsid -f python3 -m http.server {port} --bind 127.0.0.1 >/dev/null 2>&1",
        timeout_s=10,
    )
    for _ in range(200):  # the server comes up on its own time
        if port in await rig.listening_ports():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the dev server did not start")


async def sh(rig: EnclosureRig, command: str) -> tuple[int, str]:
    done = await rig.exec(command, timeout_s=20)
    return done.exit_code, done.stdout + done.stderr


async def test_a_name_reaches_another_rigs_dev_server_over_http_and_https(tmp_path: Path) -> None:
    tls = DevTls(tmp_path / "rigs" / "tls")
    async with enclosure() as backend:
        target = await backend.start(spec("dev", home=tmp_path / "home-dev"), lambda _t: None)
        browser = await backend.start(spec("lanes", home=tmp_path / "home-lanes"), lambda _t: None)
        assert isinstance(target, EnclosureRig) and isinstance(browser, EnclosureRig)
        try:
            await start_dev_server(target, DEV_PORT, "hello from the dev rig")
            names = {"app.test": DEV_PORT}

            async def route(name: str) -> Streams:
                if name not in names:
                    raise LaneMiss(404, f"There is no dev domain {name} in this space.")
                return await target.connect(names[name])

            await asyncio.to_thread(tls.leaf, "ws1/space", names)
            status = await DevLanes(route, lambda: tls.context("ws1/space")).start(browser)
            assert status.http and status.https
            await browser.set_local_names(frozenset(names))
            # the lanes are the host's: not the guest's ports to forward, not a target to connect to
            assert await browser.listening_ports() == []
            with pytest.raises(Refused):
                await browser.connect(80)
            with pytest.raises(Conflict):
                await browser.serve_loopback(443, route)  # type: ignore[arg-type]

            code, out = await sh(browser, "getent hosts app.test; curl -sS http://app.test/")
            assert code == 0 and out.startswith("127.0.0.1") and "hello from the dev rig" in out, out
            # a name the space does not map: the resolver does not know it, and the lane answers a page saying so
            code, _ = await sh(browser, "curl -sS http://nothing.test/")
            assert code == 6  # could not resolve
            code, out = await sh(browser, "curl -sS -w '%{http_code}' --resolve nothing.test:80:127.0.0.1 "
                                 "http://nothing.test/")  # fmt: skip
            assert out.endswith("404") and "no dev domain nothing.test" in out, out
            code, out = await sh(browser, "curl -sS -w '%{http_code}' -H 'Host:' http://127.0.0.1/")
            assert out.endswith("400") and "Host header" in out, out

            # HTTPS: the CA (public part only) trusted inside; ALPN settles on HTTP/1.1 even when h2 is offered
            await browser.write_file("/home/rig/dev-ca.pem", tls.ca_pem(), exclusive=True)
            code, out = await sh(browser, "curl -sS -v --http2 --cacert ~/dev-ca.pem https://app.test/")
            assert code == 0 and "hello from the dev rig" in out, out
            assert "ALPN: server accepted http/1.1" in out, out
            code, out = await sh(browser, "curl -sS https://app.test/")  # the rig's own trust store: refused
            assert code == 60, out

            # ... and outside: the host's default trust store refuses the leaf (same lane, reached from the host)
            with pytest.raises(ssl.SSLCertVerificationError):
                await asyncio.open_connection(
                    sock=await browser.netns.connect(443), ssl=ssl.create_default_context(), server_hostname="app.test"
                )
            _reader, writer = await asyncio.open_connection(
                sock=await browser.netns.connect(443),
                ssl=ssl.create_default_context(cafile=str(tls.ca_cert)),
                server_hostname="app.test",
            )
            writer.close()

            # the keys stay on the host: 0600, not reachable by path from inside, and in no file a rig wrote
            for key in (tls.ca_key, tls.leaf_key):
                assert key.stat().st_mode & 0o777 == 0o600
                code, _ = await sh(browser, f"test -e {key}")
                assert code == 1
            secrets = [k.read_bytes().splitlines()[1] for k in (tls.ca_key, tls.leaf_key)]
            for rig in (browser, target):
                written = [*rig.run_dir.rglob("*"), *(rig.spec.home_dir or tmp_path).rglob("*")]
                for path in written:
                    if path.is_file() and not path.is_symlink():
                        data = path.read_bytes()
                        assert not any(line in data for line in secrets), path

            # the target stops: its name answers 502 with why; a parked target is the manager's to wake
            await target.exec(f"pkill -f 'http.server {DEV_PORT}'", timeout_s=10)
            code, out = await sh(browser, "curl -sS -w '%{http_code}' http://app.test/")
            assert out.endswith("502") and f"nothing listens on port {DEV_PORT}" in out, out
            await target.park()
            with pytest.raises(Refused):
                await target.connect(DEV_PORT)
            await target.wake()
            names.clear()
            await browser.set_local_names(frozenset())
            code, _ = await sh(browser, "curl -sS http://app.test/")
            assert code == 6
        finally:
            await browser.aclose()
            await target.aclose()


async def test_a_rig_holds_at_most_its_cap_of_lane_connections(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("hangar.rigs.backends.enclosure.rig.MAX_LOOPBACK_CONNECTIONS", 4, raising=False)
    release = asyncio.Event()

    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"hi")
        await writer.drain()
        await release.wait()

    async with enclosure() as backend:
        rig = await backend.start(spec("capped", home=tmp_path / "home"), lambda _t: None)
        assert isinstance(rig, EnclosureRig)
        try:
            await rig.serve_loopback(8080, hold)
            # At the cap: four connections from inside the rig are each served.
            held = [await asyncio.open_connection(sock=await rig.netns.connect(8080)) for _ in range(4)]
            for reader, _writer in held:
                assert await asyncio.wait_for(reader.readexactly(2), 10) == b"hi"
            # One past it: closed at once, unserved.
            reader, writer = await asyncio.open_connection(sock=await rig.netns.connect(8080))
            assert await asyncio.wait_for(reader.read(), 10) == b""
            writer.close()
            release.set()
            for _reader, w in held:
                w.close()
        finally:
            await rig.aclose()
