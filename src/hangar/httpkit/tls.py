"""The TLS settings of the HTTP clients the server makes per request (a sign-in's token exchange, a worker's ask
of its server, a lane transfer).

Why one: building an ``httpx.AsyncClient`` without ``verify`` builds a new ``ssl.SSLContext`` and loads the whole
CA bundle into it, 30 to 140 ms of CPU on a small machine, on the event loop. A client given this context costs
about half a millisecond. The context is the one httpx makes by default (certifi's bundle, certificates and host
names checked), made once per process; an ``SSLContext`` is safe to share between clients and connections.
"""

from __future__ import annotations

import functools
import ssl

import httpx


@functools.cache
def client_tls() -> ssl.SSLContext:
    """The verifying TLS context every per-request HTTP client of this process shares."""
    return httpx.create_ssl_context()
