"""The product tools an agent may call: the default set is served and documented, names are checked against the
registry, and the dot-free names of OpenAI function tools map back to their ops."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hangar.agents.config import parse_adapter
from hangar.agents.tools.catalogue import DEFAULT_PRODUCT_TOOLS, check_product_tools, granted
from hangar.errors import InvalidArgs
from hangar.rpc.mcp.tools import function_tool, input_schema, is_tool, op_of_openai_name, openai_name
from hangar.rpc.registry import OpRegistry
from hangar.server.parts import all_parts

REGISTRY = OpRegistry(o for p in all_parts() for o in p.ops)
MANUAL = Path(__file__).parents[3] / "src" / "hangar" / "site" / "content" / "manual" / "reference"


def test_every_default_tool_is_served_as_a_tool() -> None:
    check_product_tools(DEFAULT_PRODUCT_TOOLS, REGISTRY)
    assert granted(parse_adapter({"type": "command", "argv": ["x"]}), REGISTRY) == DEFAULT_PRODUCT_TOOLS


@pytest.mark.parametrize("page", ["agent-tools.md", "mcp-tools.md"])
def test_the_manual_states_the_default(page: str) -> None:
    text = (MANUAL / page).read_text()
    rig_verbs = next(line for line in text.splitlines() if line.startswith(("| Rig verbs", "Agents configured")))
    section = text[text.index(rig_verbs) :][:1200]
    named = set(re.findall(r"`([a-z][A-Za-z_.]*)`", section))
    assert set(DEFAULT_PRODUCT_TOOLS) <= named, set(DEFAULT_PRODUCT_TOOLS) - named


def test_unknown_names_and_watches_are_refused_by_name() -> None:
    with pytest.raises(InvalidArgs, match=r"no op is named 'nope', 'also.nope'") as info:
        check_product_tools(["spaces.list", "nope", "also.nope"], REGISTRY)
    assert info.value.field == "adapter.productTools"
    with pytest.raises(InvalidArgs, match=r"'rig.watch' are watch ops"):
        check_product_tools(["rig.watch"], REGISTRY)


def test_an_explicit_list_is_kept_in_order_once_and_empty_means_none() -> None:
    adapter = parse_adapter(
        {"type": "openai", "baseUrl": "http://h/v1", "model": "m", "productTools": ["rig.exec", "rig.open", "rig.exec"]}
    )
    assert adapter.product_tools == ("rig.exec", "rig.open")
    assert granted(adapter, REGISTRY) == ("rig.exec", "rig.open")
    none = parse_adapter({"type": "openai", "baseUrl": "http://h/v1", "model": "m", "productTools": []})
    assert granted(none, REGISTRY) == ()


def test_people_only_ops_are_never_offered_to_an_agent() -> None:
    named = ["spaces.list", "orchestration.approve", "workspaces.export"]
    adapter = parse_adapter({"type": "command", "argv": ["x"], "productTools": named})
    assert granted(adapter, REGISTRY) == ("spaces.list",)


def test_function_tools_carry_the_mcp_schema_under_names_that_map_back() -> None:
    for spec in REGISTRY.specs.values():
        if not is_tool(spec):
            continue
        tool = function_tool(spec)["function"]
        assert re.fullmatch(r"[A-Za-z0-9_-]{1,64}", tool["name"]), tool["name"]
        assert op_of_openai_name(tool["name"]) == spec.name
        assert tool["parameters"] == input_schema(spec)
    assert openai_name("pipelines.runs.start") == "pipelines__runs__start"
