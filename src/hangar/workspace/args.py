"""Base of the workspace and agents op argument models: fields are snake_case in Python and accepted on the
wire both as written in the contracts (``space_id``, ``runId``) and in the other spelling."""

from __future__ import annotations

from pydantic import ConfigDict
from pydantic.alias_generators import to_camel

from hangar.rpc.registry import Args


class WsArgs(Args):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, alias_generator=to_camel)
