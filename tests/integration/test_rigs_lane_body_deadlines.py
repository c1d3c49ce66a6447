"""The file lane reads a drop at the lanes' pace (``hangar.rigs.lanes.access.BODY_GRACE_S`` and
``MIN_BYTES_PER_SECOND``): a drop that arrives in pieces and is whole inside the grace lands, one that stalls gets
408 and nothing of it lands. (The clipboard lane reads its pastes the same way; its test is with the browser
rigs, in test_rigs_browser_lanes.py.)

A real server in the test's process (so the grace can be shortened), a real terminal rig, raw connections sending
the bodies."""

from __future__ import annotations

from pathlib import Path

import pytest

from hangar.rigs.lanes import access as lane_access
from tests.integration.rigs_env import rigs_server
from tests.integration.test_connection_limits import Conn

pytestmark = pytest.mark.packs("terminal")

GRACE_S = 3.0
BOUNDARY = "lanepace"


def multipart(name: str, data: bytes) -> bytes:
    return (
        (
            f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="{name}"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n"
        ).encode()
        + data
        + f"\r\n--{BOUNDARY}--\r\n".encode()
    )


def head(path: str, token: str, length: int) -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nhost: x\r\ncontent-type: multipart/form-data; boundary={BOUNDARY}\r\n"
        f"authorization: Bearer {token}\r\ncontent-length: {length}\r\n\r\n"
    ).encode()


async def test_a_drop_whole_inside_the_grace_lands_and_a_stalled_one_gets_408_and_lands_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lane_access, "BODY_GRACE_S", GRACE_S)
    async with rigs_server(tmp_path) as env:
        rig = await env.open()
        path = str((await env.client.call("rig.fileLaneUrl", workspace_id=env.ws, rigId=rig))["path"])
        token = env.srv.owner_token
        # In three pieces, the last a third of the grace before it: it lands.
        body = multipart("prompt.txt", b"p" * 3000)
        prompt = await Conn.open(env.srv.url, "127.0.0.1")
        await prompt.send_in_thirds(head(path, token, len(body)), body, GRACE_S / 3)
        assert await prompt.status() == 200
        # Left unfinished (its file's bytes half sent): 408 once the grace passes, and nothing of it lands.
        body = multipart("stalled.txt", b"s" * 3000)
        stalled = await Conn.open(env.srv.url, "127.0.0.1")
        stalled.send(head(path, token, len(body)) + body[: len(body) // 2])
        assert await stalled.status() == 408
        for conn in (prompt, stalled):
            conn.close()
        out = await env.exec(rig, "ls ~/drops")
        assert out["stdout"] == "prompt.txt\n"
        assert not any((env.srv.ctx.datadir.sub("rigs", "spool")).iterdir())
