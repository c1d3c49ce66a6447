"""The JSON a SCIM User is served as, most of it built once per write and kept with the record.

Everything in a User's representation except three parts changes only when SCIM writes the record: ``active``
comes from ``users.deactivated_at`` (identity deactivates users too), ``groups`` from workspace memberships
(managed in Hangar), and ``meta.location`` from the request's origin. So every write stores the rest as JSON text
(``scim_users.rendered``, see ``fixed_parts``), and reading a page joins texts (``document``) instead of
decoding each stored representation, building a dictionary and encoding it again. A record whose ``rendered``
is NULL (written before the column existed, or cleared to have it rebuilt) is rendered from its ``resource``.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from hangar.core.types import rfc3339
from hangar.sso.scim.match import get_ci
from hangar.sso.scim.schema import ENTERPRISE_URN, USER_URN

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def stamp(value: datetime) -> str:
    return rfc3339(value)


def fixed_parts(
    user_id: str,
    user_name: str,
    external_id: str | None,
    resource: dict[str, Any],
    created_at: datetime,
    updated_at: datetime,
) -> str:
    """``rendered`` for a record: ``[members, meta, shows_active]``, where ``members`` is the JSON text of the
    representation's leading members (``schemas`` to ``userName``, no braces), ``meta`` that of ``meta``'s
    leading members (to ``lastModified``), and ``shows_active`` whether the provider set ``active`` (it is shown
    once set; a provider that removes it makes the user active again, the attribute's meaning when absent)."""
    schemas = [USER_URN]
    if get_ci(resource, ENTERPRISE_URN) is not None:
        schemas.append(ENTERPRISE_URN)
    head: dict[str, Any] = {"schemas": schemas, "id": user_id}
    if external_id:
        head["externalId"] = external_id
    head.update({k: v for k, v in resource.items() if k not in ("externalId", "active")})
    head["userName"] = user_name
    meta = {"resourceType": "User", "created": stamp(created_at), "lastModified": stamp(updated_at)}
    return _dumps([_dumps(head)[1:-1], _dumps(meta)[1:-1], "active" in resource])


def groups_json(found: str | None, base_url: str) -> str | None:
    """The ``groups`` value (JSON text), from the page query's ``[[joined, workspace id, name], ...]``: in order
    of joining, then id. None when the user is in no workspace."""
    if not found or found == "[]":
        return None
    return _dumps(
        [
            {"value": ws_id, "display": name, "type": "direct", "$ref": f"{base_url}/Groups/{ws_id}"}
            for _, ws_id, name in sorted(json.loads(found))
        ]
    )


def document(rendered: str, user_id: str, version: int, deactivated: bool, groups: str | None, base_url: str) -> str:
    """A User's JSON text from its ``rendered`` parts and what changes without SCIM writing it."""
    members, meta, shows_active = json.loads(rendered)
    parts = ["{", members]
    if shows_active or deactivated:
        parts.append(',"active":false' if deactivated else ',"active":true')
    if groups is not None:
        parts += [',"groups":', groups]
    parts += [',"meta":{', meta, ',"location":', _dumps(f"{base_url}/Users/{user_id}")]
    parts += [',"version":', _dumps(f'W/"{version}"'), "}}"]
    return "".join(parts)
