"""The agent-skills discovery index, format 0.2.0 (what the product site serves at
``/.well-known/agent-skills/index.json``): ``{"$schema": ..., "skills": [{name, type, description, url, digest}]}``.

Parsed totally: anything else is refused with ``InvalidArgs`` naming the entry and field, since a server that
trusted a half-read index would install something nobody described.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

from hangar.errors import InvalidArgs

SCHEMA_0_2_0 = "https://schemas.agentskills.io/discovery/0.2.0/schema.json"
KINDS = ("skill-md", "archive")
MAX_ENTRIES = 500
MAX_DESCRIPTION = 1024
NAME = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$")
DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")


@dataclass(frozen=True)
class Entry:
    name: str
    kind: str  # ``skill-md`` or ``archive``
    description: str
    url: str  # absolute: a relative one is resolved against the index's own URL
    digest: str  # ``sha256:<hex>``


def parse(raw: bytes, index_url: str, field: str = "indexUrl") -> list[Entry]:
    """The entries of the index at ``index_url`` whose bytes are ``raw``; ``InvalidArgs`` naming what is wrong."""

    def bad(what: str) -> InvalidArgs:
        return InvalidArgs(f"{field}: the index at {index_url} is not a discovery index 0.2.0: {what}", field=field)

    try:
        doc = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise bad(f"it is not JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise bad("it is not a JSON object")
    if doc.get("$schema") != SCHEMA_0_2_0:
        raise bad(f"$schema is {doc.get('$schema')!r}, not {SCHEMA_0_2_0!r}")
    skills = doc.get("skills")
    if not isinstance(skills, list):
        raise bad("skills is not a list")
    if len(skills) > MAX_ENTRIES:
        raise bad(f"it lists {len(skills)} skills, more than {MAX_ENTRIES}")
    entries: list[Entry] = []
    seen: set[str] = set()
    for i, item in enumerate(skills):
        where = f"skills[{i}]"
        if not isinstance(item, dict):
            raise bad(f"{where} is not an object")
        values: dict[str, str] = {}
        for key in ("name", "type", "description", "url", "digest"):
            value = item.get(key)
            if not isinstance(value, str) or not value:
                raise bad(f"{where}.{key} is missing or not a string")
            values[key] = value
        if not NAME.match(values["name"]):
            raise bad(f"{where}.name {values['name']!r} is not a skill name (a-z, 0-9 and -, at most 64)")
        if values["name"] in seen:
            raise bad(f"{where}.name {values['name']!r} is listed twice")
        seen.add(values["name"])
        if values["type"] not in KINDS:
            raise bad(f"{where}.type {values['type']!r} is not one of {', '.join(KINDS)}")
        if len(values["description"]) > MAX_DESCRIPTION:
            raise bad(f"{where}.description is longer than {MAX_DESCRIPTION} characters")
        if not DIGEST.match(values["digest"]):
            raise bad(f"{where}.digest {values['digest']!r} is not sha256: and 64 lowercase hex digits")
        url = urljoin(index_url, values["url"])
        if urlsplit(url).scheme not in ("http", "https"):
            raise bad(f"{where}.url {values['url']!r} is not an http:// or https:// URL")
        entries.append(Entry(values["name"], values["type"], values["description"], url, values["digest"]))
    return entries


def find(entries: list[Entry], name: str, index_url: str) -> Entry:
    for entry in entries:
        if entry.name == name:
            return entry
    raise InvalidArgs(f"name: the index at {index_url} lists no skill {name!r}", field="name")
