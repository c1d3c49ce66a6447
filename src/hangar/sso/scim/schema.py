"""Attribute definitions of the SCIM resources we serve, read from scim2-models' schema documents.

The same documents answer ``/Schemas``; here they become lookups by lower-cased name (attribute names are
case-insensitive) that the filter binder, the PATCH engine and the payload checks share. The common attributes
(``id``, ``externalId``, ``meta``) are not part of a schema document (RFC 7643 §3.1) and are added by hand.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from typing import Any

USER_URN = "urn:ietf:params:scim:schemas:core:2.0:User"
ENTERPRISE_URN = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"
GROUP_URN = "urn:ietf:params:scim:schemas:core:2.0:Group"
SCHEMA_URN = "urn:ietf:params:scim:schemas:core:2.0:Schema"


@dataclass(frozen=True)
class AttrDef:
    name: str
    type: str
    multi: bool = False
    case_exact: bool = False
    mutability: str = "readWrite"
    returned: str = "default"
    required: bool = False
    subs: dict[str, AttrDef] = field(default_factory=dict)

    def sub(self, name: str) -> AttrDef | None:
        return self.subs.get(name.lower())

    @property
    def complex(self) -> bool:
        return self.type == "complex"


@dataclass(frozen=True)
class ResourceSchema:
    """A resource type's attributes: the core schema's (plus the common ones) and each extension's."""

    core_urn: str
    attrs: dict[str, AttrDef]
    extensions: dict[str, tuple[str, dict[str, AttrDef]]]

    def find(self, uri: str | None, name: str) -> tuple[str | None, AttrDef] | None:
        """``(extension urn or None, attribute)`` for a possibly URI-qualified name, or None if unknown."""
        key = name.lower()
        if uri is None or uri.lower() == self.core_urn.lower():
            found = self.attrs.get(key)
            if found is not None:
                return None, found
            if uri is None:
                # A bare extension URN names the extension object itself (PATCH paths, payload keys).
                ext = self.extensions.get(key)
                if ext is not None:
                    return ext[0], _extension_attr(ext[0], ext[1])
            return None
        ext = self.extensions.get(uri.lower())
        if ext is None:
            # ``urn:...:2.0:User`` parses as URI ``urn:...:2.0`` and name ``User``: the extension object itself.
            whole = self.extensions.get(f"{uri}:{name}".lower())
            return (whole[0], _extension_attr(whole[0], whole[1])) if whole is not None else None
        sub = ext[1].get(key)
        return (ext[0], sub) if sub is not None else None


def _extension_attr(urn: str, attrs: dict[str, AttrDef]) -> AttrDef:
    return AttrDef(name=urn, type="complex", subs=attrs)


def _from_document(raw: dict[str, Any]) -> AttrDef:
    subs = {s["name"].lower(): _from_document(s) for s in raw.get("subAttributes", [])}
    return AttrDef(
        name=raw["name"],
        type=raw["type"],
        multi=bool(raw.get("multiValued", False)),
        case_exact=bool(raw.get("caseExact", False)),
        mutability=raw.get("mutability", "readWrite"),
        returned=raw.get("returned", "default"),
        required=bool(raw.get("required", False)),
        subs=subs,
    )


def _common() -> dict[str, AttrDef]:
    meta_subs = {
        "resourcetype": AttrDef("resourceType", "string", case_exact=True, mutability="readOnly"),
        "created": AttrDef("created", "dateTime", mutability="readOnly"),
        "lastmodified": AttrDef("lastModified", "dateTime", mutability="readOnly"),
        "location": AttrDef("location", "reference", case_exact=True, mutability="readOnly"),
        "version": AttrDef("version", "string", case_exact=True, mutability="readOnly"),
    }
    return {
        "id": AttrDef("id", "string", case_exact=True, mutability="readOnly", returned="always"),
        "externalid": AttrDef("externalId", "string", case_exact=True),
        "meta": AttrDef("meta", "complex", mutability="readOnly", subs=meta_subs),
    }


@cache
def schema_documents() -> dict[str, dict[str, Any]]:
    """The ``/Schemas`` documents by URN, as scim2-models writes them."""
    # Imported here, on the first SCIM request: scim2-models is heavy (pydantic models documenting every
    # attribute), and a server that no directory provisions should not pay for it at every start.
    from scim2_models import EnterpriseUser, Group, User

    docs: dict[str, dict[str, Any]] = {}
    for model in (User, EnterpriseUser, Group):
        doc = json.loads(model.to_schema().model_dump_json(exclude_none=True))
        docs[doc["id"]] = doc
    return docs


def _attrs_of(urn: str) -> dict[str, AttrDef]:
    return {a["name"].lower(): _from_document(a) for a in schema_documents()[urn]["attributes"]}


@cache
def user_schema() -> ResourceSchema:
    attrs = {**_common(), **_attrs_of(USER_URN)}
    # We never store or return passwords (sign-in goes through the identity provider).
    attrs.pop("password", None)
    return ResourceSchema(USER_URN, attrs, {ENTERPRISE_URN.lower(): (ENTERPRISE_URN, _attrs_of(ENTERPRISE_URN))})


@cache
def group_schema() -> ResourceSchema:
    return ResourceSchema(GROUP_URN, {**_common(), **_attrs_of(GROUP_URN)}, {})
