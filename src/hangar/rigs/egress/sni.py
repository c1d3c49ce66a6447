"""Reading the server name out of a TLS ClientHello, without terminating TLS.

The gate never holds keys: it peeks at the first record, checks the SNI against the allowlist, then replays
the bytes upstream and relays blindly.
"""

from __future__ import annotations

import struct

MAX_HELLO = 16 * 1024 + 5


class NotTls(ValueError):
    pass


def record_length(head: bytes) -> int:
    """Total length (header included) of the TLS record starting with ``head`` (at least 5 bytes)."""
    if len(head) < 5 or head[0] != 0x16 or head[1] != 0x03:
        raise NotTls("not a TLS handshake record")
    return 5 + int.from_bytes(head[3:5], "big")


def server_name(record: bytes) -> str | None:
    """The SNI host name of a ClientHello record, or None when it carries none. ``NotTls`` when malformed."""
    try:
        return _server_name(record)
    except (IndexError, struct.error) as exc:
        raise NotTls("truncated ClientHello") from exc


def _server_name(record: bytes) -> str | None:
    body = record[5 : record_length(record)]
    if body[0] != 0x01:
        raise NotTls("first handshake message is not a ClientHello")
    pos = 4 + 2 + 32  # handshake header, legacy version, random
    pos += 1 + body[pos]  # session id
    pos += 2 + struct.unpack("!H", body[pos : pos + 2])[0]  # cipher suites
    pos += 1 + body[pos]  # compression methods
    if pos >= len(body):
        return None
    end = pos + 2 + struct.unpack("!H", body[pos : pos + 2])[0]
    pos += 2
    while pos + 4 <= end:
        ext_type, ext_len = struct.unpack("!HH", body[pos : pos + 4])
        pos += 4
        if ext_type == 0:  # server_name: list length, then (type, length, name) entries
            inner = pos + 2
            while inner + 3 <= pos + ext_len:
                name_type, name_len = body[inner], struct.unpack("!H", body[inner + 1 : inner + 3])[0]
                inner += 3
                if name_type == 0:
                    return body[inner : inner + name_len].decode("ascii", "replace")
                inner += name_len
            return None
        pos += ext_len
    return None
