"""The one HTTP error handler: the error tree as status and JSON body, anything else as ``internal``."""

from __future__ import annotations

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route, WebSocketRoute
from starlette.testclient import TestClient
from starlette.websockets import WebSocket

from hangar.errors import Conflict, HangarError, InvalidArgs, NotFound, Unauthenticated
from hangar.httpkit.errors import EXCEPTION_HANDLERS, error_body
from hangar.httpkit.ratelimit import TooManyAttempts
from hangar.httpkit.requests import BodyTooLarge
from hangar.identity.pairing import PairingDisabled
from hangar.sso.errors import SsoError

RAISED: dict[str, Exception] = {
    "not_found": NotFound("no rig r1"),
    "conflict": Conflict("already open"),
    "unauthenticated": Unauthenticated("send a bearer credential"),
    "invalid": InvalidArgs("must be a string", field="code"),
    "too_large": BodyTooLarge(16),
    "rate": TooManyAttempts("pair attempts", 7),
    "pairing": PairingDisabled("manual pairing is disabled"),
    "sso": SsoError("audience", "the audience restriction does not name us"),
    "crash": RuntimeError("secret-value-123"),
}


def make_client() -> TestClient:
    async def fail(request: Request) -> Response:
        raise RAISED[request.path_params["which"]]

    async def socket(ws: WebSocket) -> None:
        raise NotFound("no such socket")

    app = Starlette(
        routes=[Route("/fail/{which}", fail), WebSocketRoute("/ws", socket)], exception_handlers=EXCEPTION_HANDLERS
    )
    return TestClient(app, raise_server_exceptions=False)


@pytest.mark.parametrize(
    ("which", "status", "error"),
    [
        ("not_found", 404, {"code": "not_found", "message": "no rig r1"}),
        ("conflict", 409, {"code": "conflict", "message": "already open"}),
        ("unauthenticated", 401, {"code": "unauthenticated", "message": "send a bearer credential"}),
        ("invalid", 400, {"code": "invalid_args", "message": "code: must be a string", "field": "code"}),
        (
            "too_large",
            413,
            {
                "code": "invalid_args",
                "message": "the request body is larger than this route takes (16 bytes)",
                "field": "body",
            },
        ),
        ("rate", 429, {"code": "refused", "message": "too many pair attempts; retry in 7 s"}),
        ("pairing", 403, {"code": "pairing_disabled", "message": "manual pairing is disabled"}),
        ("sso", 400, {"code": "audience", "message": "the audience restriction does not name us"}),
        ("crash", 500, {"code": "internal", "message": "the server failed to handle this request"}),
    ],
)
def test_every_error_renders_as_status_and_body(which: str, status: int, error: dict[str, str]) -> None:
    r = make_client().get(f"/fail/{which}")
    assert r.status_code == status and r.json() == {"error": error}
    assert r.headers["content-type"] == "application/json"
    assert "secret-value-123" not in r.text


def test_the_errors_own_headers_go_with_it() -> None:
    assert make_client().get("/fail/rate").headers["retry-after"] == "7"


def test_a_socket_is_left_to_close_its_own_way() -> None:
    # No status line to answer on: the error goes on up, as it would without the handler.
    with pytest.raises(NotFound), make_client().websocket_connect("/ws") as ws:
        ws.receive_text()


def test_the_body_is_the_error_dict_plus_the_field() -> None:
    assert error_body(HangarError("boom")) == {"error": {"code": "internal", "message": "boom"}}
    assert error_body(InvalidArgs("p is required", field="p"))["error"]["field"] == "p"
