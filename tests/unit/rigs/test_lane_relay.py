"""What a relayed lane carries to the server running the rig (``hangar.rigs.lanes.relay``): the person's own
headers, never one hop's, one relay mark, and the client's address as this server determined it, whatever the
client claimed."""

from __future__ import annotations

from starlette.requests import HTTPConnection

from hangar.rigs.lanes.relay import HANDSHAKE_HEADERS, HOP_HEADERS, _relayed_headers


def connection(headers: list[tuple[bytes, bytes]]) -> HTTPConnection:
    scope = {"type": "websocket", "headers": headers, "client": ("203.0.113.9", 55555), "path": "/rig/terminal/r1"}
    return HTTPConnection(scope)


def test_the_person_s_headers_go_on_and_the_hop_s_and_their_claims_do_not() -> None:
    conn = connection(
        [
            (b"host", b"b.internal:8420"),
            (b"connection", b"Upgrade"),
            (b"upgrade", b"websocket"),
            (b"sec-websocket-key", b"dGhlIHNhbXBsZSBub25jZQ=="),
            (b"authorization", b"Bearer hd_person"),
            (b"origin", b"https://hangar.example"),
            (b"x-forwarded-for", b"10.9.9.9"),  # the client's own claim: not what the holder hears
            (b"x-hangar-relay", b"forged"),
        ]
    )
    sent = _relayed_headers(conn, HOP_HEADERS | HANDSHAKE_HEADERS)
    assert sent == [
        ("authorization", "Bearer hd_person"),
        ("origin", "https://hangar.example"),
        ("x-hangar-relay", "lane"),
        ("x-forwarded-for", "203.0.113.9"),
    ]
