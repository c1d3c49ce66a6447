"""The value index behind SCIM filtering: one ``scim_values`` row per leaf value of a stored representation.

A filter then runs as index lookups (``path`` and the folded text, the exact text or the number) instead of
parsing every user's JSON. Paths are lower-cased: ``name.familyname``, ``emails.value`` (``elem`` numbers the
element of a multi-valued attribute, so the conditions of a value filter can be held to one element),
``urn:...:enterprise:2.0:user:department``. Each complex value also gets a marker row at its own path (no
value), so ``emails pr`` and a value filter's ``not (...)`` see elements whatever sub-attributes they carry.
Empty strings are not indexed: in filters they count as absent. The attributes kept in columns (``id``,
``userName``, ``externalId``, ``active``, ``meta``) are not indexed here. Rows name their record by ``user_seq``
(``scim_users.seq``), which filters read, and by ``user_id``.
"""

from __future__ import annotations

from typing import Any

from hangar.sso.scim.match import Target, fold
from hangar.sso.scim.schema import AttrDef, ResourceSchema

COLUMN_ATTRS = frozenset({"id", "username", "externalid", "active", "meta", "schemas"})


def attr_key(ext: str | None, attr: AttrDef) -> str:
    if ext is None:
        return attr.name.lower()
    if attr.name == ext:
        return ext.lower()
    return f"{ext.lower()}:{attr.name.lower()}"


def leaf_key(target: Target) -> str:
    base = attr_key(target.ext, target.attr)
    return f"{base}.{target.sub.name.lower()}" if target.sub is not None else base


Owner = tuple[str, int]  # (user_id, seq): every row carries both, filters read only the integer


def _row(owner: Owner, path: str, elem: int) -> dict[str, Any]:
    user_id, seq = owner
    return {"user_id": user_id, "user_seq": seq, "path": path, "elem": elem, "text": None, "text_lc": None, "num": None}


def _scalar(rows: list[dict[str, Any]], owner: Owner, path: str, elem: int, value: Any) -> None:
    row = _row(owner, path, elem)
    if isinstance(value, bool):
        row["num"] = 1.0 if value else 0.0
    elif isinstance(value, int | float):
        row["num"] = float(value)
    elif isinstance(value, str) and value != "":
        row["text"], row["text_lc"] = value, fold(value)
    else:
        return
    rows.append(row)


def _walk(rows: list[dict[str, Any]], owner: Owner, ext: str | None, attr: AttrDef, value: Any) -> None:
    base = attr_key(ext, attr)
    items = value if isinstance(value, list) else [value]
    for elem, item in enumerate(items):
        if not attr.complex:
            _scalar(rows, owner, base, elem, item)
            continue
        if not isinstance(item, dict) or not item:
            continue
        rows.append(_row(owner, base, elem))
        for key, sub_value in item.items():
            sub = attr.sub(key)
            if sub is None:
                continue
            for leaf in sub_value if isinstance(sub_value, list) else [sub_value]:
                _scalar(rows, owner, f"{base}.{sub.name.lower()}", elem, leaf)


def index_rows(schema: ResourceSchema, user_id: str, seq: int, resource: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``scim_values`` rows of one stored (canonical) representation of the record numbered ``seq``."""
    owner = (user_id, seq)
    rows: list[dict[str, Any]] = []
    for key, value in resource.items():
        low = key.lower()
        ext = schema.extensions.get(low)
        if ext is not None:
            if isinstance(value, dict) and value:
                urn, attrs = ext
                rows.append(_row(owner, low, 0))
                for sub_key, sub_value in value.items():
                    sub = attrs.get(sub_key.lower())
                    if sub is not None:
                        _walk(rows, owner, urn, sub, sub_value)
            continue
        attr = schema.attrs.get(low)
        if attr is None or low in COLUMN_ATTRS:
            continue
        _walk(rows, owner, None, attr, value)
    return rows
