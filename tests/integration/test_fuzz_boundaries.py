"""Property-based fuzzing of the RPC boundary over the real socket: hostile arguments for every op of the
registry and hostile raw frames. No reply may be ``internal`` and the server keeps serving.

``make test`` runs a bounded number of examples (``HANGAR_FUZZ_EXAMPLES``, default 1000); ``make fuzz`` a long
run. Each run prints how many examples ran and how many replies were ``internal``.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hangar.rpc.registry import OpRegistry
from hangar.server.parts import all_parts
from tests.support.rpc import RpcClient
from tests.support.server import running_server

EXAMPLES = int(os.environ.get("HANGAR_FUZZ_EXAMPLES", "1000"))
SPECS = sorted(
    (spec for spec in OpRegistry(o for p in all_parts() for o in p.ops).specs.values() if spec.kind != "watch"),
    key=lambda s: s.name,
)

# Any code point, lone surrogates included; integers past 64 bits; floats past JSON; deep nesting.
TEXT = st.text(st.characters(exclude_categories=()), max_size=40) | st.sampled_from(["\ud800", "x" * 5000, "../.."])
SCALARS = (
    TEXT
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.booleans()
    | st.none()
)
VALUES = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3), max_leaves=12
)
DEEP = st.integers(min_value=60, max_value=3000).map(lambda n: json.loads("[" * min(n, 900) + "]" * min(n, 900)))


def field_names(spec: Any) -> list[str]:
    names = []
    for name, info in spec.args_model.model_fields.items():
        names.append(info.alias or name)
    return names or ["x"]


@st.composite
def calls(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    spec = draw(st.sampled_from(SPECS))
    names = field_names(spec)
    args = {n: draw(VALUES | DEEP) for n in draw(st.lists(st.sampled_from(names), max_size=len(names), unique=True))}
    return spec.name, args


RAW = (
    st.text(st.characters(exclude_categories=()), max_size=200)
    | st.builds(lambda d: "[" * d + "]" * d, st.integers(0, 20_000))
    | st.builds(lambda n: '{"id": ' + "9" * n + ', "op": "server.info"}', st.integers(1, 6000))
    | st.builds(lambda v: json.dumps({"id": 1, "op": "server.info", "args": v}), VALUES)
)


class Tally:
    examples = 0
    internal = 0


async def test_no_op_argument_and_no_raw_frame_gets_internal(tmp_path: Path) -> None:
    async with running_server(tmp_path) as srv, RpcClient(srv.ws_url, srv.owner_token) as c:
        ws = await srv.new_workspace("fuzz")
        loop = asyncio.get_running_loop()
        tally = Tally()

        async def call(op: str, args: dict[str, Any]) -> dict[str, Any]:
            spec = next(s for s in SPECS if s.name == op)
            if spec.scope == "workspace":
                args = {"workspace_id": ws, **args}
            return await asyncio.wait_for(c.request(op, args), 20)

        @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=False)
        @given(calls())
        def fuzz_args(example: tuple[str, dict[str, Any]]) -> None:
            op, args = example
            try:
                reply = asyncio.run_coroutine_threadsafe(call(op, args), loop).result(30)
            except ValueError:
                return  # a value the test's own JSON encoder cannot write (the socket never sees it)
            except TimeoutError:
                raise AssertionError(f"{op} did not answer {str(args)[:300]}") from None
            tally.examples += 1
            if not reply["ok"] and reply["error"]["code"] == "internal":
                tally.internal += 1
                raise AssertionError(f"{op} answered internal to {str(args)[:300]}")

        @settings(max_examples=max(50, EXAMPLES // 3), deadline=None, suppress_health_check=list(HealthCheck))
        @given(RAW)
        def fuzz_frames(raw: str) -> None:
            data: str | bytes = raw
            try:
                raw.encode("utf-8")
            except UnicodeEncodeError:
                # A text frame cannot carry a lone surrogate; send the bytes it would be (invalid UTF-8) as a
                # binary frame instead.
                data = raw.encode("utf-8", "surrogatepass")
            asyncio.run_coroutine_threadsafe(c.send_raw(data), loop).result(30)
            tally.examples += 1
            info = asyncio.run_coroutine_threadsafe(c.request("server.info", {}), loop).result(30)
            assert info["ok"], info

        await asyncio.to_thread(fuzz_args)
        await asyncio.to_thread(fuzz_frames)
        while not c.unsolicited.empty():
            frame = c.unsolicited.get_nowait()
            if frame.get("error", {}).get("code") == "internal":
                tally.internal += 1
        print(f"\nfuzz: {tally.examples} examples, {tally.internal} internal replies")
        assert tally.internal == 0
        assert (await c.call("server.info"))["version"]
