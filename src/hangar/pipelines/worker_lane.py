"""The lane between a ``hangar worker`` and a server for the files a step's body needs that live in a server's
data directory (a repository's clone, a meeting's retained audio): the worker asks a server over HTTP with its
worker credential, naming the try it holds, and the server answers only for a live claim of that workspace.

Why a lane and not a shared filesystem or the database: a space's repositories and files stay in the data
directory of the server host that holds them (one writer, one set of rules: see the README's *Where a space's
files live*); a worker on another host reaches them through that server as it reaches the product for its agents
(``hangar.agents.worker_grants``), and the database keeps records, not gigabytes of audio or git objects.

Server side: ``claim_of`` checks ``Authorization: Bearer <worker credential>`` (a live one; ``Unauthenticated``
otherwise) and the ``X-Hangar-Try-Key`` header (the current try of a step of ``workspace_id`` claimed by a worker
holding that credential, its lease not lapsed: ``live_claim``; ``Forbidden`` otherwise). Worker side:
``ServerLane`` (provided when the worker is given ``--server``) downloads into a file and uploads one, each with
a bound on the bytes.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from starlette.requests import Request

from hangar.core.context import AppContext
from hangar.errors import Forbidden, HangarError, InvalidArgs, NotFound, Refused, Unauthenticated, Unavailable
from hangar.httpkit.requests import bearer_token
from hangar.httpkit.tls import client_tls
from hangar.pipelines.queue_attempts import live_claim, parse_try_key
from hangar.pipelines.workercreds import verify

TRY_KEY_HEADER = "X-Hangar-Try-Key"
NO_SERVER = "this worker was started without --server, so it cannot reach {what}, which lies with the server"
TIMEOUT_S = 600.0  # one transfer: a repository's bundle or an hour of audio over a slow link
CHUNK = 1 << 20


async def claim_of(request: Request, workspace_id: str) -> str:
    """The try key of the live claim the request is made for (see the module docstring), else a refusal."""
    app: AppContext = request.app.state.ctx
    text = bearer_token(request.headers.get("authorization"))
    if text is None:
        raise Unauthenticated("a worker asks with Authorization: Bearer <worker credential>")
    credential = await verify(app.dbs.server, text)
    try_key = request.headers.get(TRY_KEY_HEADER, "")
    if len(try_key) > 400 or parse_try_key(try_key) is None:
        raise InvalidArgs(f"{TRY_KEY_HEADER} is not the key of a step's try", field="tryKey")
    if await live_claim(app.dbs.server, workspace_id, try_key, credential.id) is None:
        raise Forbidden(f"{try_key} is not a live claim in workspace {workspace_id} of a worker with this credential")
    return try_key


@dataclass(frozen=True)
class ServerLane:
    """How a worker reaches a server's files: its origin and the worker credential."""

    server_url: str
    credential: str

    def _headers(self, try_key: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.credential}", TRY_KEY_HEADER: try_key}

    async def download(
        self, method: str, path: str, try_key: str, to: Path, limit: int, json: Any = None
    ) -> tuple[httpx.Headers, int]:
        """The answer's body written to a new file ``to`` (0600), at most ``limit`` bytes; its headers and the
        bytes written. An answer without a body (204) writes an empty file."""
        async with (
            httpx.AsyncClient(timeout=TIMEOUT_S, verify=client_tls()) as client,
            client.stream(method, self.server_url + path, headers=self._headers(try_key), json=json) as answer,
        ):
            if answer.status_code >= 400:
                await answer.aread()
                raise _refusal(answer)
            fd = os.open(to, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            with os.fdopen(fd, "wb") as out:
                size = 0
                async for chunk in answer.aiter_bytes(CHUNK):
                    size += len(chunk)
                    if size > limit:
                        raise Refused(f"the server sent more than {limit} bytes for {path}")
                    out.write(chunk)
            return answer.headers, size

    async def upload(self, path: str, try_key: str, source: Path) -> None:
        """``source``'s bytes as the body of ``PUT path``."""

        reader = await asyncio.to_thread(source.open, "rb")

        async def chunks() -> AsyncIterator[bytes]:
            with reader:
                while chunk := await asyncio.to_thread(reader.read, CHUNK):
                    yield chunk

        headers = self._headers(try_key) | {"Content-Length": str(os.fstat(reader.fileno()).st_size)}
        async with httpx.AsyncClient(timeout=TIMEOUT_S, verify=client_tls()) as client:
            answer = await client.put(self.server_url + path, headers=headers, content=chunks())
        if answer.status_code >= 400:
            raise _refusal(answer)


def lane_of(app: AppContext, what: str) -> ServerLane:
    """The worker's lane to a server, or a refusal saying the worker was started without one."""
    lane = app.maybe_service(ServerLane)
    if lane is None:
        raise Unavailable(NO_SERVER.format(what=what))
    return lane


def _refusal(answer: httpx.Response) -> HangarError:
    message = f"HTTP {answer.status_code}"
    with contextlib.suppress(ValueError, KeyError, TypeError):
        message = str(answer.json()["error"]["message"])
    said = f"the server refused: {message}"
    if answer.status_code == 400:
        return InvalidArgs(said)
    if answer.status_code == 404:
        return NotFound(said)
    if answer.status_code in (401, 403):
        return Forbidden(said)
    return Unavailable(said)
