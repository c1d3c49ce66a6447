"""Base of the workspace and agents op argument models: fields are snake_case in Python and accepted on the
wire in both spellings. Error messages name a field the way the contracts write it: ``space_id`` and
``agent_id`` (CONTRACTS §7), camelCase for everything else (``runId``, ``outputSchema``, ``afterSeq``)."""

from __future__ import annotations

from pydantic import AliasChoices, AliasGenerator, ConfigDict
from pydantic.alias_generators import to_camel

from hangar.rpc.registry import Args

_SNAKE_FIRST = frozenset({"space_id", "agent_id"})


def _both_spellings(name: str) -> AliasChoices:
    camel = to_camel(name)
    return AliasChoices(name, camel) if name in _SNAKE_FIRST else AliasChoices(camel, name)


class WsArgs(Args):
    model_config = ConfigDict(
        extra="forbid", populate_by_name=True, alias_generator=AliasGenerator(validation_alias=_both_spellings)
    )
