"""The product's own ops as an agent's tools (CONTRACTS.md sections 7 and 8): the same catalogue MCP clients get.

An agent's adapter names the ops it may call (``productTools``); left out, ``DEFAULT_PRODUCT_TOOLS``: the rig
verbs, acting in the agent's space, and reads of spaces, messages and tickets. An ``openai`` agent is offered them
as function tools (a dot becomes ``__``; parameters and description as the MCP tool has them); each call is one op
call through the one dispatcher as the agent (``Principal`` with its ``agent_id``, limited to its workspace, the
space its run works in and its tools, holding the member role there), so roles, guardrails and audit answer as
for any caller, and the audit row names ``agent:<id>`` and the door ``agent``. The answer, or the refusal as
``"<code>: <message>"``, goes back to the model as the tool's result.

Where an op takes a space, the agent's own space is the default, and another space is refused: ``messages.list``
or ``messages.post`` elsewhere, ``rig.open`` in another space, a verb on a rig of another space; ``spaces.list``
answers the agent's space alone and ``events.list`` (every space's events) is refused. Why: an agent works on one
space's request, where the people who dispatched it look; what others said and opened in other spaces is not
its business. Ops about no space (tickets, for instance) answer as its tools allow. The rule is the credential's
(``Principal.check_space``), applied by the dispatcher and the ops, so a command agent's MCP credential
(``mcp_grant``, which carries the run's space) is held exactly as these in-process calls are.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from hangar.agents.config import CommandAdapter, OpenAIAdapter
from hangar.core.principal import Principal
from hangar.errors import InvalidArgs
from hangar.rpc.mcp.tools import is_tool
from hangar.rpc.registry import OpRegistry

log = logging.getLogger(__name__)

RIG_VERBS: tuple[str, ...] = (
    "rig.open", "rig_list", "rig.exec", "rig_close", "rig.ports",
    "computer_use", "browser_use", "mobile_use", "sim_use",
)  # fmt: skip
READS: tuple[str, ...] = ("spaces.list", "spaces.get", "messages.list", "tickets.list", "tickets.get")
# The workspace code graph (the code graph part's ops; a server composed without it does not offer them).
CODE_READS: tuple[str, ...] = (
    "code.search", "code.definition", "code.references", "code.callers", "code.callees", "code.outline",
)  # fmt: skip
DEFAULT_PRODUCT_TOOLS: tuple[str, ...] = RIG_VERBS + READS + CODE_READS
"""What an agent may call when its configuration names nothing: drive rigs in its space (open, list, run commands,
use a screen, close; not take control from a person, grant hosts or hand out lanes), read spaces, messages
and tickets, and search and navigate the workspace's code graph."""

FIELD = "adapter.productTools"


def check_product_tools(names: Iterable[str], registry: OpRegistry) -> None:
    """Every name is an op the registry serves as a tool; ``InvalidArgs`` naming the ones that are not."""
    unknown = [n for n in names if registry.get(n) is None]
    if unknown:
        raise InvalidArgs(f"{FIELD}: no op is named {', '.join(map(repr, unknown))}", field=FIELD)
    watches = [n for n in names if not is_tool(registry.get(n))]  # type: ignore[arg-type]
    if watches:
        raise InvalidArgs(f"{FIELD}: {', '.join(map(repr, watches))} are watch ops, which are not tools", field=FIELD)


def granted(
    adapter: OpenAIAdapter | CommandAdapter, registry: OpRegistry, *, read_only: bool = False
) -> tuple[str, ...]:
    """The ops the agent may call here: its list, or the default one, as far as this registry serves them (a
    server composed without the rigs part has no rig verbs to offer). A ``read_only`` run (``readOnlyWorktree``)
    gets the reads among them only: a changing op (``rig.open``, ``rig.exec``: a rig of the space mounts its folder
    writable) would hand it the writes its own mount refuses."""
    names = DEFAULT_PRODUCT_TOOLS if adapter.product_tools is None else adapter.product_tools
    # A people-only op is refused to an agent when called (the dispatcher's check); it is not offered either, so
    # no model is invited to try it.
    served = [n for n in names if (spec := registry.get(n)) is not None and is_tool(spec) and not spec.people_only]
    missing = set(names) - set(served)
    if missing and adapter.product_tools is not None:
        log.warning("product tools named by an agent are not served here: %s", ", ".join(sorted(missing)))
    if read_only:
        served = [n for n in served if (spec := registry.get(n)) is not None and not spec.mutating]
    return tuple(served)


def agent_principal(
    agent_id: str, agent_name: str, workspace_id: str, space_id: str, run_id: str, tools: Iterable[str]
) -> Principal:
    """The agent as a caller of ops during one run: its workspace and the run's space only, its tools only, its
    own name in audit rows (``agent:<id>``); the device names the run, so a row says which run made the call."""
    return Principal(
        user_id=f"agent:{agent_id}",
        device_id=f"run:{run_id}",
        display_name=agent_name,
        is_server_owner=False,
        workspace_id=workspace_id,
        space_id=space_id,
        tools=frozenset(tools),
        agent_id=agent_id,
    )
