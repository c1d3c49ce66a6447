"""GitHub's webhook deliveries: ``POST /forge/github/webhooks/<workspaceId>``.

A delivery is taken in this order, each step refusing clearly: the workspace must exist and have a webhook secret
(else 404, the same answer for both); the body at most ``MAX_BODY`` bytes (413); ``X-Hub-Signature-256`` present
and equal to the HMAC-SHA256 of the body under the secret, compared in constant time (401 naming which); the
event named (``X-GitHub-Event``) and one Hangar takes (``ping``, ``pull_request``; any other 400 naming it); a
delivery id (``X-GitHub-Delivery``, 400 without); the body a JSON object of the event's shape (400 naming what
is wrong). Only then is the delivery recorded: one whose id, or whose signed body, was taken in the last
``KEEP_DELIVERIES`` is answered 200 ``duplicate`` and does nothing. The body counts as well as the id because the
id is the caller's to choose and only the body is signed: anyone who captured one delivery could send its body
again under a fresh id, so a body is taken once (a genuine new event's body differs: its action, its timestamps),
with ``reason`` saying which delivery brought it first. A pull request of a linked repo is then synced
(``PullRequests.sync``: the forge is asked, the payload's facts are not taken as they are); one of an unlinked
repo is answered 202 ``ignored``. When the forge cannot be
asked (5xx, rate-limited, unreachable) the delivery is forgotten again, so GitHub's redelivery is taken, and the
answer is 503; the poll, where one runs, catches it up too.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
from datetime import timedelta
from typing import Any

import sqlalchemy as sa
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from hangar.core.context import AppContext
from hangar.core.db import write_transaction
from hangar.errors import HangarError, InvalidArgs, NotFound, Unauthenticated, Unavailable
from hangar.forges.pulls import PullRequests
from hangar.forges.service import ForgeService
from hangar.forges.tables import forge_deliveries
from hangar.httpkit.requests import read_body

log = logging.getLogger(__name__)

WEBHOOK_PATH = "/forge/github/webhooks/{workspace_id}"
MAX_BODY = 5 * 1024 * 1024  # GitHub caps payloads at 25 MB; a pull_request event is a few tens of KB
EVENTS: tuple[str, ...] = ("ping", "pull_request")
DELIVERY_MAX = 100
KEEP_DELIVERIES = timedelta(days=7)  # a delivery id is remembered this long (GitHub redelivers within days)


class BadSignature(Unauthenticated):
    pass


def webhook_path(workspace_id: str) -> str:
    return WEBHOOK_PATH.replace("{workspace_id}", workspace_id)


def check_signature(secret: str, body: bytes, header: str | None) -> None:
    if not header:
        raise BadSignature("the delivery carries no X-Hub-Signature-256 header: it cannot be verified")
    expected = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected.encode(), header.strip().encode()):
        raise BadSignature("X-Hub-Signature-256 does not match the body signed with this workspace's webhook secret")


def _pull_request_fields(payload: Any) -> tuple[str, int, str]:
    """The action, number and repository (owner/name) of a ``pull_request`` event's body."""
    if not isinstance(payload, dict):
        raise InvalidArgs("the body is not a JSON object", field="body")
    action, number, repository = payload.get("action"), payload.get("number"), payload.get("repository")
    if not isinstance(action, str) or not action:
        raise InvalidArgs("a pull_request event's body needs action (a string)", field="action")
    if not isinstance(number, int) or isinstance(number, bool) or number < 1:
        raise InvalidArgs("a pull_request event's body needs number (a positive integer)", field="number")
    full_name = repository.get("full_name") if isinstance(repository, dict) else None
    if not isinstance(full_name, str) or "/" not in full_name:
        raise InvalidArgs("a pull_request event's body needs repository.full_name", field="repository.full_name")
    return action, number, full_name


async def _seen_before(app: AppContext, workspace_id: str, delivery: str, event: str, body: bytes) -> str | None:
    """Record the delivery (its id and its body's hash); when either was recorded before, why it is a duplicate
    instead (None: it is new). Deliveries older than ``KEEP_DELIVERIES`` go."""
    now = app.clock.now()
    digest = hashlib.sha256(body).hexdigest()
    d = forge_deliveries
    # One write transaction holds the lock from its first statement: two processes given one delivery (or one
    # body under two ids) at once cannot both find it new.
    async with write_transaction(await app.dbs.workspace(workspace_id)) as conn:
        await conn.execute(sa.delete(d).where(d.c.received_at < now - KEEP_DELIVERIES))
        if (await conn.execute(sa.select(d.c.delivery_id).where(d.c.delivery_id == delivery))).first() is not None:
            return "this delivery id was taken before"
        first = (await conn.execute(sa.select(d.c.delivery_id).where(d.c.body_sha256 == digest))).first()
        if first is not None:
            return f"this signed body was delivered before (as {first.delivery_id}): a replay is ignored"
        await conn.execute(sa.insert(d).values(delivery_id=delivery, event=event, received_at=now, body_sha256=digest))
    return None


async def _forget_delivery(app: AppContext, workspace_id: str, delivery: str) -> None:
    async with write_transaction(await app.dbs.workspace(workspace_id)) as conn:
        await conn.execute(sa.delete(forge_deliveries).where(forge_deliveries.c.delivery_id == delivery))


async def receive(request: Request) -> Response:
    """A GitHub webhook delivery for one workspace (see the module for what is checked, in order)."""
    app: AppContext = request.app.state.ctx
    forges = app.service(ForgeService)
    workspace_id = request.path_params["workspace_id"]
    try:
        ws = await forges.workspace(workspace_id)
    except NotFound:
        ws = None
    secret = forges.store.webhook_secret(ws.id) if ws is not None else None
    if ws is None or secret is None:
        raise NotFound("no webhook is set up here: a workspace admin sets its secret (forge.setWebhookSecret)")
    body = await read_body(request, MAX_BODY)
    check_signature(secret, body, request.headers.get("x-hub-signature-256"))
    event = request.headers.get("x-github-event", "")
    if event not in EVENTS:
        named = repr(event) if event else "none (no X-GitHub-Event header)"
        raise InvalidArgs(f"event {named} is not one Hangar takes: subscribe to pull_request", field="event")
    delivery = request.headers.get("x-github-delivery", "").strip()
    if not delivery or len(delivery) > DELIVERY_MAX:
        raise InvalidArgs("the delivery has no X-GitHub-Delivery id (at most 100 characters)", field="delivery")
    try:
        payload = json.loads(body)
    except ValueError:
        raise InvalidArgs("the body is not JSON", field="body") from None
    if event == "ping":
        return JSONResponse({"ok": True, "event": "ping"})
    action, number, full_name = _pull_request_fields(payload)
    connection = forges.required(ws)
    repo = next((k.repo for k in await forges.links(ws, connection) if k.full_name.lower() == full_name.lower()), None)
    if repo is None:
        return JSONResponse({"ignored": f"{full_name} is linked to no repo of this workspace"}, status_code=202)
    duplicate = await _seen_before(app, ws.id, delivery, event, body)
    if duplicate is not None:
        log.info("webhook %s for %s#%d ignored: %s", delivery, full_name, number, duplicate)
        return JSONResponse({"duplicate": True, "delivery": delivery, "reason": duplicate})
    try:
        row, fired = await app.service(PullRequests).sync(ws.id, repo, number)
    except Unavailable:
        await _forget_delivery(app, ws.id, delivery)  # GitHub's redelivery (or the poll) brings it again
        raise
    except HangarError as exc:
        log.info("webhook %s for %s#%d: %s", delivery, full_name, number, exc.message)
        raise
    return JSONResponse(
        {"pullRequest": row.id, "spaceId": row.space_id, "state": row.state, "action": action, "fired": fired}
    )


ROUTES = [Route(WEBHOOK_PATH, receive, methods=["POST"])]
