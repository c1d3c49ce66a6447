"""Every HTTP route of the server answers errors with the one JSON error body (``hangar.httpkit.errors``)."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.integration.core_parts import PARTS
from tests.support.server import running_server


async def test_routes_answer_errors_with_the_one_body(tmp_path: Path) -> None:
    async with running_server(tmp_path, parts=PARTS) as srv, httpx.AsyncClient() as http:
        me = await http.get(f"{srv.url}/auth/me")
        assert me.status_code == 401 and me.json()["error"]["code"] == "unauthenticated"
        bad = await http.post(f"{srv.url}/auth/pair", json={"code": 5})
        assert bad.status_code == 400
        assert bad.json() == {"error": {"code": "invalid_args", "message": "code must be a string", "field": "code"}}
        big = await http.post(f"{srv.url}/auth/pair", content=b"x" * (64 * 1024))
        assert big.status_code == 413 and big.json()["error"]["field"] == "body"
