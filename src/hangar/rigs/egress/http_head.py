"""Reading an HTTP/1.x request head: its Host, and the head rewritten to carry one request per connection.

Shared by the egress gate (which checks the Host against the allowlist) and the dev-domain lanes (which route by
it): both decide once per connection, so neither may let a keep-alive connection carry a second request naming
another host.
"""

from __future__ import annotations


def host_header(head: bytes) -> str | None:
    """The Host header's value, lower case (port included when given); None when absent or empty."""
    for line in head.split(b"\r\n")[1:]:
        key, sep, value = line.partition(b":")
        if sep and key.strip().lower() == b"host":
            text = value.strip().decode("ascii", "replace").lower()
            return text or None
    return None


def one_request(head: bytes) -> bytes:
    """The request head with ``Connection: close``: the host is checked once per connection, so a keep-alive
    connection must not carry a second request naming another host. Upgrades (WebSocket) are left alone."""
    lines = head[:-4].split(b"\r\n")
    if any(line.lower().startswith(b"upgrade:") for line in lines[1:]):
        return head
    kept = [lines[0]] + [
        line
        for line in lines[1:]
        if not line.lower().startswith((b"connection:", b"keep-alive:", b"proxy-connection:"))
    ]
    return b"\r\n".join([*kept, b"Connection: close"]) + b"\r\n\r\n"
