"""The frame check's limits over the real socket, on both sides of each line (the check runs on every frame, so
its fast path must refuse exactly what the walk refused): integers to the signed 64-bit bounds, nesting to
``MAX_DEPTH`` levels, a lone surrogate written as an escape, NaN; each refused frame answered ``invalid_args``
with the request id, and the socket still serving after."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hangar.core.wire import INT64_MAX, INT64_MIN, MAX_DEPTH
from tests.support.rpc import RpcClient
from tests.support.server import running_server


def nested(levels: int) -> Any:
    """A value ``levels`` deep as the check counts them (the frame object is level 1, ``args`` level 2)."""
    value: Any = {}
    for _ in range(levels - 2):
        value = [value]
    return value


async def answer(c: RpcClient, raw: str) -> dict[str, Any]:
    await c.send_raw(raw)
    reply: dict[str, Any] = await c.unsolicited.get()
    return reply


async def test_frame_limits_on_both_sides(tmp_path: Path) -> None:
    async with running_server(tmp_path) as srv, RpcClient(srv.ws_url, srv.owner_token) as c:
        for req_id in (INT64_MAX, INT64_MIN):  # at the bounds: an id like any other
            ok = await c.request("server.info", {}, req_id=req_id)
            assert ok["ok"] and ok["id"] == req_id

        too_big = await answer(c, f'{{"id": "big", "op": "server.info", "args": {{"n": {INT64_MAX + 1}}}}}')
        assert too_big["id"] == "big" and too_big["error"]["code"] == "invalid_args"
        assert "out of range" in too_big["error"]["message"]
        too_small = await answer(c, f'{{"id": "small", "op": "server.info", "args": {{"n": {INT64_MIN - 1}}}}}')
        assert too_small["id"] == "small" and "out of range" in too_small["error"]["message"]

        # Deep args at the limit pass the frame check (the op then refuses the argument it does not know).
        at_limit = json.dumps({"id": "deep", "op": "server.info", "args": {"x": nested(MAX_DEPTH - 1)}})
        reply = await answer(c, at_limit)
        assert reply["id"] == "deep" and "nests deeper" not in reply["error"]["message"]
        past = json.dumps({"id": "deeper", "op": "server.info", "args": {"x": nested(MAX_DEPTH)}})
        reply = await answer(c, past)
        assert reply["id"] == "deeper" and reply["error"]["code"] == "invalid_args"
        assert f"nests deeper than {MAX_DEPTH} levels" in reply["error"]["message"]

        surrogate = await answer(c, '{"id": "s", "op": "server.info", "args": {"name": "a\\ud800b"}}')
        assert surrogate["id"] == "s" and "surrogate" in surrogate["error"]["message"]
        in_key = await answer(c, '{"id": "k", "op": "server.info", "args": {"\\udfff": 1}}')
        assert in_key["id"] == "k" and "surrogate" in in_key["error"]["message"]
        paired = await answer(c, '{"id": "p", "op": "server.info", "args": {"name": "\\ud83d\\ude00"}}')
        assert paired["id"] == "p" and "surrogate" not in paired["error"]["message"]  # a whole pair is text

        nan = await answer(c, '{"id": "nan", "op": "server.info", "args": {"x": NaN}}')
        assert nan["id"] == "nan" and "not a JSON number" in nan["error"]["message"]

        assert (await c.call("server.info"))["name"] == "Hangar"
