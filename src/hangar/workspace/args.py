"""The base of the workspace and agents op argument models: ``Args`` itself, which holds the spelling rules
(camelCase on the wire, snake_case accepted, errors naming the field as the caller spelled it). The name stays
so the op modules that import it need not change."""

from __future__ import annotations

from hangar.rpc.registry import Args

WsArgs = Args
