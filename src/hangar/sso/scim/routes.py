"""SCIM 2.0 over HTTP at ``/scim/v2`` (RFC 7644), authenticated with the SCIM bearer token.

Users: list (``filter``, ``startIndex``, ``count``, ``attributes``, ``excludedAttributes``), ``.search``,
create, get, PUT, PATCH, DELETE. Groups (workspaces) are read-only: writes answer 501 by design. Discovery:
``ServiceProviderConfig``, ``ResourceTypes``, ``Schemas``. Every error is a SCIM error body with ``scimType``
where RFC 7644 §3.12 defines one.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from hangar.core import wire
from hangar.core.context import AppContext
from hangar.errors import HangarError, Internal, InvalidArgs, NotFound, Unauthenticated
from hangar.httpkit.requests import bearer_token, read_body
from hangar.sso.config import SsoConfigStore
from hangar.sso.endpoints import SCIM_BASE_PATH, scim_base_url, sso_origin
from hangar.sso.scim.documents import resource_types, schemas, service_provider_config
from hangar.sso.scim.errors import (
    ScimBadRequest,
    ScimMethodNotAllowed,
    ScimNotImplemented,
    error_body,
)
from hangar.sso.scim.filter import FilterSyntaxError, parse_filter
from hangar.sso.scim.match import Bound, FilterSemanticError, bind, get_ci, matches
from hangar.sso.scim.schema import group_schema, user_schema
from hangar.sso.scim.store import ScimDirectory

log = logging.getLogger(__name__)

PREFIX = SCIM_BASE_PATH
MEDIA_TYPE = "application/scim+json"
LIST_URN = "urn:ietf:params:scim:api:messages:2.0:ListResponse"
SEARCH_URN = "urn:ietf:params:scim:api:messages:2.0:SearchRequest"
DEFAULT_COUNT = 100
MAX_COUNT = 1000
MAX_BODY_BYTES = 1024 * 1024


class ScimResponse(JSONResponse):
    media_type = MEDIA_TYPE


def base_url(request: Request) -> str:
    """Where resources say they live: the SCIM base URL the settings page shows (``hangar.sso.endpoints``)."""
    ctx: AppContext = request.app.state.ctx
    return scim_base_url(sso_origin(ctx.settings, request))


def _authenticate(request: Request) -> None:
    store = request.app.state.ctx.service(SsoConfigStore)
    token = bearer_token(request.headers.get("authorization"))
    if token is None:
        raise Unauthenticated("send the SCIM token as Authorization: Bearer <token>")
    if not store.scim_token_matches(token):  # constant-time (secrets.compare_digest)
        raise Unauthenticated("the SCIM token is not valid")


Handler = Callable[[Request], Awaitable[Response]]


def scim(handler: Handler) -> Handler:
    """Authenticate, run, and turn errors into SCIM error bodies."""

    async def run(request: Request) -> Response:
        try:
            _authenticate(request)
            return await handler(request)
        except HangarError as exc:
            err = exc
        except Exception:
            log.exception("SCIM %s %s failed", request.method, request.url.path)
            err = Internal("the server failed to handle this SCIM request")
        status, body = error_body(err)
        headers = {"WWW-Authenticate": 'Bearer realm="scim"'} if status == 401 else None
        return ScimResponse(body, status_code=status, headers=headers)

    return run


def directory(request: Request) -> ScimDirectory:
    found: ScimDirectory = request.app.state.ctx.service(ScimDirectory)
    return found


async def read_json(request: Request) -> Any:
    body = await read_body(request, MAX_BODY_BYTES)
    try:
        return wire.loads(body, field="body")
    except InvalidArgs as exc:
        raise ScimBadRequest("invalidSyntax", exc.message) from None


def _int(value: Any, name: str, default: int) -> int:
    if value is None or value == "":
        return default
    if isinstance(value, bool):
        raise ScimBadRequest("invalidValue", f"{name} must be an integer")
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ScimBadRequest("invalidValue", f"{name} must be an integer, not {value!r}") from None


def _names(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, list):
        return [str(v).strip() for v in value if str(v).strip()]
    return [v.strip() for v in str(value).split(",") if v.strip()]


def bind_filter(text: str | None, kind: str) -> Bound | None:
    if text is None or not str(text).strip():
        return None
    try:
        return bind(user_schema() if kind == "User" else group_schema(), parse_filter(str(text)))
    except (FilterSyntaxError, FilterSemanticError) as exc:
        raise ScimBadRequest("invalidFilter", f"filter: {exc}") from None


def _pick(source: dict[str, Any], path: str, out: dict[str, Any]) -> None:
    """Copy ``name`` or ``name.sub`` of ``source`` into ``out`` (names compared case-insensitively)."""
    head, _, sub = path.partition(".")
    for key, value in source.items():
        if key.lower() != head.lower():
            continue
        if not sub:
            out[key] = value
        elif isinstance(value, dict) and get_ci(value, sub) is not None:
            out.setdefault(key, {})[sub] = get_ci(value, sub)
        elif isinstance(value, list):
            picked = [{sub: get_ci(v, sub)} for v in value if isinstance(v, dict) and get_ci(v, sub) is not None]
            if picked:
                out[key] = picked


def project(resource: dict[str, Any], attributes: list[str], excluded: list[str]) -> dict[str, Any]:
    """RFC 7644 §3.9: keep only ``attributes`` (plus what is always returned), or drop ``excluded``. Names may
    be URN-qualified; an extension's attributes are picked inside its object."""
    always = {"id", "schemas"}
    extensions = {k.lower(): k for k, v in resource.items() if k.lower().startswith("urn:") and isinstance(v, dict)}
    if attributes:
        out: dict[str, Any] = {k: v for k, v in resource.items() if k in always}
        for wanted in attributes:
            if wanted.lower() in extensions:
                key = extensions[wanted.lower()]
                out[key] = resource[key]
                continue
            uri, _, name = wanted.rpartition(":")
            if uri and uri.lower() in extensions:
                key = extensions[uri.lower()]
                picked: dict[str, Any] = {}
                _pick(resource[key], name, picked)
                if picked:
                    out.setdefault(key, {}).update(picked)
                continue
            _pick(resource, name, out)
        return out
    if excluded:
        drop = {e.rpartition(":")[2].lower() for e in excluded if e.lower() not in extensions}
        gone = {extensions[e.lower()] for e in excluded if e.lower() in extensions}
        return {k: v for k, v in resource.items() if k in always or (k.lower() not in drop and k not in gone)}
    return resource


def list_response(total: int, start: int, page: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "schemas": [LIST_URN],
        "totalResults": total,
        "startIndex": start,
        "itemsPerPage": len(page),
        "Resources": page,
    }


def list_response_json(total: int, start: int, page: list[str]) -> bytes:
    """``list_response`` of resources that are JSON texts already: the page is joined, not decoded and encoded
    again (the same bytes as ``ScimResponse`` would give, spacing included)."""
    envelope = {"schemas": [LIST_URN], "totalResults": total, "startIndex": start, "itemsPerPage": len(page)}
    head = json.dumps(envelope, ensure_ascii=False, separators=(",", ":"))
    return "".join([head[:-1], ',"Resources":[', ",".join(page), "]}"]).encode()


async def _search_users(request: Request, params: dict[str, Any]) -> Response:
    start = max(1, _int(params.get("startIndex"), "startIndex", 1))
    count = min(MAX_COUNT, max(0, _int(params.get("count"), "count", DEFAULT_COUNT)))
    bound = bind_filter(params.get("filter"), "User")
    attributes, excluded = _names(params.get("attributes")), _names(params.get("excludedAttributes"))
    if not attributes and not excluded:
        total, texts = await directory(request).search_json(bound, start, count, base_url(request))
        return Response(list_response_json(total, start, texts), media_type=MEDIA_TYPE)
    total, page = await directory(request).search(bound, start, count, base_url(request))
    return ScimResponse(list_response(total, start, [project(r, attributes, excluded) for r in page]))


@scim
async def users_list(request: Request) -> Response:
    return await _search_users(request, dict(request.query_params))


@scim
async def users_search(request: Request) -> Response:
    body = await read_json(request)
    if not isinstance(body, dict):
        raise ScimBadRequest("invalidSyntax", "a search request must be a JSON object")
    return await _search_users(request, body)


def _one(request: Request, resource: dict[str, Any], status: int = 200) -> Response:
    params = request.query_params
    shown = project(resource, _names(params.get("attributes")), _names(params.get("excludedAttributes")))
    headers = {"ETag": resource["meta"]["version"]} if "version" in resource.get("meta", {}) else {}
    if status == 201:
        headers["Location"] = resource["meta"]["location"]
    return ScimResponse(shown, status_code=status, headers=headers)


@scim
async def users_create(request: Request) -> Response:
    created = await directory(request).create(await read_json(request), base_url(request))
    return _one(request, created, 201)


@scim
async def users_get(request: Request) -> Response:
    return _one(request, await directory(request).get(request.path_params["id"], base_url(request)))


@scim
async def users_replace(request: Request) -> Response:
    body = await read_json(request)
    uid = request.path_params["id"]
    given = get_ci(body, "id") if isinstance(body, dict) else None
    if given is not None and given != uid:
        raise ScimBadRequest("mutability", "id cannot be changed")
    return _one(request, await directory(request).replace(uid, body, base_url(request)))


@scim
async def users_patch(request: Request) -> Response:
    body = await read_json(request)
    return _one(request, await directory(request).patch(request.path_params["id"], body, base_url(request)))


@scim
async def users_delete(request: Request) -> Response:
    await directory(request).delete(request.path_params["id"], base_url(request))
    return Response(status_code=204)


async def _groups(request: Request, flt: Bound | None) -> list[dict[str, Any]]:
    found = await directory(request).groups(base_url(request))
    return [g for g in found if flt is None or matches(flt, g)]


@scim
async def groups_list(request: Request) -> Response:
    params = request.query_params
    start = max(1, _int(params.get("startIndex"), "startIndex", 1))
    count = min(MAX_COUNT, max(0, _int(params.get("count"), "count", DEFAULT_COUNT)))
    found = await _groups(request, bind_filter(params.get("filter"), "Group"))
    page = found[start - 1 : start - 1 + count]
    attributes, excluded = _names(params.get("attributes")), _names(params.get("excludedAttributes"))
    return ScimResponse(list_response(len(found), start, [project(g, attributes, excluded) for g in page]))


@scim
async def groups_get(request: Request) -> Response:
    gid = request.path_params["id"]
    for group in await _groups(request, None):
        if group["id"] == gid:
            params = request.query_params
            return ScimResponse(
                project(group, _names(params.get("attributes")), _names(params.get("excludedAttributes")))
            )
    raise NotFound(f"no group {gid}")


@scim
async def groups_write(request: Request) -> Response:
    raise ScimNotImplemented("groups are read-only here: workspace membership is managed in Hangar")


@scim
async def sp_config(request: Request) -> Response:
    return ScimResponse(service_provider_config(base_url(request), MAX_COUNT))


@scim
async def resource_types_list(request: Request) -> Response:
    found = resource_types(base_url(request))
    return ScimResponse(list_response(len(found), 1, found))


@scim
async def resource_type_get(request: Request) -> Response:
    for item in resource_types(base_url(request)):
        if item["id"] == request.path_params["name"]:
            return ScimResponse(item)
    raise NotFound(f"no resource type {request.path_params['name']}")


@scim
async def schemas_list(request: Request) -> Response:
    found = schemas(base_url(request))
    return ScimResponse(list_response(len(found), 1, found))


@scim
async def schema_get(request: Request) -> Response:
    for item in schemas(base_url(request)):
        if item["id"] == request.path_params["urn"]:
            return ScimResponse(item)
    raise NotFound(f"no schema {request.path_params['urn']}")


@scim
async def method_not_allowed(request: Request) -> Response:
    raise ScimMethodNotAllowed(f"{request.method} is not allowed on {request.url.path}")


@scim
async def not_found(request: Request) -> Response:
    raise NotFound(f"{request.url.path} is not a SCIM endpoint here")


WRITES = ["POST", "PUT", "PATCH", "DELETE"]

SCIM_ROUTES: list[BaseRoute] = [
    Route(f"{PREFIX}/Users", users_list, methods=["GET"]),
    Route(f"{PREFIX}/Users", users_create, methods=["POST"]),
    Route(f"{PREFIX}/Users/.search", users_search, methods=["POST"]),
    Route(f"{PREFIX}/Users/{{id}}", users_get, methods=["GET"]),
    Route(f"{PREFIX}/Users/{{id}}", users_replace, methods=["PUT"]),
    Route(f"{PREFIX}/Users/{{id}}", users_patch, methods=["PATCH"]),
    Route(f"{PREFIX}/Users/{{id}}", users_delete, methods=["DELETE"]),
    Route(f"{PREFIX}/Groups", groups_list, methods=["GET"]),
    Route(f"{PREFIX}/Groups", groups_write, methods=["POST"]),
    Route(f"{PREFIX}/Groups/{{id}}", groups_get, methods=["GET"]),
    Route(f"{PREFIX}/Groups/{{id}}", groups_write, methods=["PUT", "PATCH", "DELETE"]),
    Route(f"{PREFIX}/.search", users_search, methods=["POST"]),
    Route(f"{PREFIX}/ServiceProviderConfig", sp_config, methods=["GET"]),
    Route(f"{PREFIX}/ResourceTypes", resource_types_list, methods=["GET"]),
    Route(f"{PREFIX}/ResourceTypes/{{name}}", resource_type_get, methods=["GET"]),
    Route(f"{PREFIX}/Schemas", schemas_list, methods=["GET"]),
    Route(f"{PREFIX}/Schemas/{{urn}}", schema_get, methods=["GET"]),
    *(
        Route(f"{PREFIX}/{path}", method_not_allowed, methods=WRITES)
        for path in ("ServiceProviderConfig", "ResourceTypes", "ResourceTypes/{name}", "Schemas", "Schemas/{urn}")
    ),
    Route(f"{PREFIX}/{{rest:path}}", not_found, methods=["GET", *WRITES]),
]
