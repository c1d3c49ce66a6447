"""Agent records: workspace-scoped agents with a name, a role, a system prompt and adapter settings.

The API key of an ``openai`` agent lives only in the secrets file under ``agents.<workspaceId>.<agentId>.apiKey``;
records say ``hasApiKey`` instead. Updating the adapter without an ``apiKey`` keeps the stored key (switching to
the ``command`` adapter drops it).

Where an ``openai`` agent's turns may go depends on who configured its endpoint (the server owner or a workspace
admin; recorded with the agent, since every turn goes there again): ``hangar.agents.endpoints`` holds those rules.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from hangar.agents import tables
from hangar.agents.config import CommandAdapter, OpenAIAdapter, check_role, parse_adapter, stored_adapter
from hangar.agents.endpoints import check_saved
from hangar.agents.tools.catalogue import check_product_tools
from hangar.core.context import AppContext
from hangar.core.db import write_transaction
from hangar.core.ids import new_id
from hangar.core.redact import SecretValues
from hangar.core.stamps import WorkspaceCaches
from hangar.core.types import rfc3339_or_none
from hangar.core.wire import require_text
from hangar.errors import Conflict, NotFound
from hangar.rpc.op_caller import OpCaller


@dataclass(frozen=True)
class Agent:
    id: str
    name: str
    role: str
    system_prompt: str
    adapter: OpenAIAdapter | CommandAdapter
    has_api_key: bool
    created_at: datetime
    updated_at: datetime
    # The server owner configured the model endpoint: its turns may reach anything the server reaches (False,
    # a workspace admin's, unless known).
    endpoint_by_owner: bool = False

    def to_wire(self) -> dict[str, Any]:
        adapter = stored_adapter(self.adapter)
        if isinstance(self.adapter, OpenAIAdapter):
            adapter["hasApiKey"] = self.has_api_key
        return {
            "id": self.id,
            "name": self.name,
            "role": self.role,
            "systemPrompt": self.system_prompt,
            "adapter": adapter,
            "createdAt": rfc3339_or_none(self.created_at),
            "updatedAt": rfc3339_or_none(self.updated_at),
        }


COUNTER = "agents"  # the change counter of the agents table (migration a0004)


def secret_key(workspace_id: str, agent_id: str) -> str:
    return f"agents.{workspace_id}.{agent_id}.apiKey"


def env_secret_key(workspace_id: str, agent_id: str, name: str) -> str:
    return f"agents.{workspace_id}.{agent_id}.env.{name}"


class AgentService:
    def __init__(self, app: AppContext) -> None:
        self._app = app
        # Every dispatch reads its agent: kept while the workspace's ``agents`` change counter stays put, so an
        # agent changed by another process is read fresh.
        self._cache: WorkspaceCaches[str, Agent] = WorkspaceCaches(app.dbs.stamp, COUNTER)

    def api_key(self, workspace_id: str, agent_id: str) -> str | None:
        return self._app.secrets.get(secret_key(workspace_id, agent_id))

    async def create(
        self,
        workspace_id: str,
        *,
        name: str,
        adapter: Any,
        role: str = "member",
        system_prompt: str = "",
        by_owner: bool = False,
    ) -> Agent:
        """``by_owner``: the server owner configures it (its endpoint then reaches anything); otherwise a workspace
        admin, whose endpoint the rules of ``hangar.agents.endpoints`` hold (``Forbidden`` naming
        ``adapter.baseUrl``)."""
        name = require_text(name, "name", limit=200)
        check_role(role)
        config = self._parse(adapter)
        await self._check_endpoint(config, by_owner)
        if role == "chiefExecutive":
            await self._check_single_chief(workspace_id, None)
        agent_id = new_id()
        now = self._app.clock.now()
        config = self._keep_secrets(workspace_id, agent_id, config, previous=None)
        insert = sa.insert(tables.agents).values(
            id=agent_id,
            name=name,
            role=role,
            system_prompt=system_prompt,
            adapter=stored_adapter(config),
            created_at=now,
            updated_at=now,
            endpoint_by_owner=by_owner,
        )
        try:
            await self._write(workspace_id, agent_id, insert, chief=role == "chiefExecutive")
        except Conflict:
            self._app.secrets.delete_prefix(f"agents.{workspace_id}.{agent_id}.")  # the agent was never made
            raise
        return await self.get(workspace_id, agent_id)

    async def _write(self, workspace_id: str, agent_id: str, statement: sa.Executable, *, chief: bool) -> None:
        """Write an agent's row; naming it chief-executive is checked in the same serialized transaction (the
        write lock from its first statement), so two agents named at the same moment cannot both pass."""
        engine = await self._app.dbs.workspace(workspace_id)
        async with write_transaction(engine) as conn:
            if chief:
                t = tables.agents
                other = await conn.execute(
                    sa.select(t.c.name).where(t.c.role == "chiefExecutive", t.c.id != agent_id).limit(1)
                )
                name = other.scalar()
                if name is not None:
                    raise Conflict(f"agent {name} is already the workspace's chief-executive agent")
            await conn.execute(statement)

    async def _check_endpoint(self, config: OpenAIAdapter | CommandAdapter, by_owner: bool) -> None:
        """Refuse a workspace admin's model endpoint the server may not reach (checked again at every turn)."""
        if isinstance(config, OpenAIAdapter) and not by_owner:
            await check_saved(self._app, config.base_url)

    def _parse(self, raw: Any) -> OpenAIAdapter | CommandAdapter:
        """Adapter settings as given; the product tools they name checked against the ops this process serves."""
        config = parse_adapter(raw)
        caller = self._app.maybe_service(OpCaller)
        if config.product_tools is not None and caller is not None:
            check_product_tools(config.product_tools, caller.registry)
        return config

    def _keep_secrets(
        self,
        workspace_id: str,
        agent_id: str,
        config: OpenAIAdapter | CommandAdapter,
        *,
        previous: OpenAIAdapter | CommandAdapter | None,
    ) -> OpenAIAdapter | CommandAdapter:
        """Move the config's secret values to the secrets file; returns the config as the database keeps it.

        An API key or secret variable left out keeps its stored value; switching adapters drops the other's."""
        secrets = self._app.secrets
        if isinstance(config, OpenAIAdapter):
            secrets.delete_prefix(f"agents.{workspace_id}.{agent_id}.env.")
            if config.api_key:
                secrets.set(secret_key(workspace_id, agent_id), config.api_key)
            return config.model_copy(update={"api_key": None})
        secrets.delete(secret_key(workspace_id, agent_id))
        names = set(previous.secret_env_names) if isinstance(previous, CommandAdapter) else set()
        for name, value in config.secret_env.items():
            if value:
                secrets.set(env_secret_key(workspace_id, agent_id, name), value)
                names.add(name)
            else:
                secrets.delete(env_secret_key(workspace_id, agent_id, name))
                names.discard(name)
        return config.model_copy(update={"secret_env": {}, "secret_env_names": tuple(sorted(names))})

    def secret_env(self, workspace_id: str, agent: Agent) -> dict[str, str]:
        """The secret environment of a command agent, read from the secrets file at run time."""
        if not isinstance(agent.adapter, CommandAdapter):
            return {}
        found = {
            n: self._app.secrets.get(env_secret_key(workspace_id, agent.id, n)) for n in agent.adapter.secret_env_names
        }
        return {n: v for n, v in found.items() if v is not None}

    async def secret_values(self, workspace_id: str) -> list[str]:
        """Every agent's API key and secret variables in the workspace: what a step that ran one of them had, to
        blank from what leaves the server (``hangar.core.redact.SecretValues``). Every agent's, not only the run's:
        a step's agent may be named from state or be a team's member that has changed since."""
        values: list[str] = []
        for agent in await self.all(workspace_id):
            key = self.api_key(workspace_id, agent.id)
            values += [key] if key else []
            values += self.secret_env(workspace_id, agent).values()
        return values

    async def _check_single_chief(self, workspace_id: str, agent_id: str | None) -> None:
        """Refused early, before any secret moves; ``_write`` holds the rule against a concurrent change."""
        for other in await self.all(workspace_id):
            if other.role == "chiefExecutive" and other.id != agent_id:
                raise Conflict(f"agent {other.name} is already the workspace's chief-executive agent")

    def _from_row(self, workspace_id: str, row: Any) -> Agent:
        return Agent(
            id=row["id"],
            name=row["name"],
            role=row["role"],
            system_prompt=row["system_prompt"],
            adapter=parse_adapter(row["adapter"]),
            has_api_key=self._app.secrets.has(secret_key(workspace_id, row["id"])),
            created_at=row["created_at"],
            updated_at=row["updated_at"],
            endpoint_by_owner=bool(row["endpoint_by_owner"]),
        )

    async def get(self, workspace_id: str, agent_id: str, *, field: str = "agent_id") -> Agent:
        async def load() -> Agent:
            engine = await self._app.dbs.workspace(workspace_id)
            async with engine.connect() as conn:
                row = (
                    (await conn.execute(sa.select(tables.agents).where(tables.agents.c.id == agent_id)))
                    .mappings()
                    .first()
                )
            if row is None:
                raise NotFound(f"{field}: agent {agent_id} does not exist in this workspace")
            return self._from_row(workspace_id, row)

        return await self._cache.get(workspace_id, agent_id, load)

    async def all(self, workspace_id: str) -> list[Agent]:
        t = tables.agents
        engine = await self._app.dbs.workspace(workspace_id)
        async with engine.connect() as conn:
            rows = (await conn.execute(sa.select(t).order_by(t.c.created_at, t.c.id))).mappings().all()
        return [self._from_row(workspace_id, r) for r in rows]

    async def front_door(self, workspace_id: str) -> Agent | None:
        """The agent a new conversation wakes: the chief-executive agent, else the first agent, else none."""
        agents = await self.all(workspace_id)
        chief = [a for a in agents if a.role == "chiefExecutive"]
        picked = chief or agents
        return picked[0] if picked else None

    async def update(
        self,
        workspace_id: str,
        agent_id: str,
        *,
        name: str | None = None,
        role: str | None = None,
        system_prompt: str | None = None,
        adapter: Any = None,
        by_owner: bool = False,
    ) -> Agent:
        """Change what is given; ``by_owner`` as for ``create``. An adapter a workspace admin saves with the
        ``baseUrl`` it had keeps whoever configured that endpoint."""
        current = await self.get(workspace_id, agent_id)
        values: dict[str, Any] = {"updated_at": self._app.clock.now()}
        if name is not None:
            values["name"] = require_text(name, "name", limit=200)
        if role is not None:
            values["role"] = check_role(role)
            if role == "chiefExecutive":
                await self._check_single_chief(workspace_id, agent_id)
        if system_prompt is not None:
            values["system_prompt"] = system_prompt
        if adapter is not None:
            parsed = self._parse(adapter)
            before = current.adapter.base_url if isinstance(current.adapter, OpenAIAdapter) else None
            kept = isinstance(parsed, OpenAIAdapter) and parsed.base_url == before and current.endpoint_by_owner
            owners = by_owner or kept
            await self._check_endpoint(parsed, owners)
            config = self._keep_secrets(workspace_id, agent_id, parsed, previous=current.adapter)
            values["adapter"] = stored_adapter(config)
            values["endpoint_by_owner"] = owners
        update = sa.update(tables.agents).where(tables.agents.c.id == agent_id).values(**values)
        await self._write(workspace_id, agent_id, update, chief=role == "chiefExecutive")
        return await self.get(workspace_id, agent_id)

    async def delete(self, workspace_id: str, agent_id: str) -> None:
        await self.get(workspace_id, agent_id)
        engine = await self._app.dbs.workspace(workspace_id)
        async with engine.begin() as conn:
            await conn.execute(sa.delete(tables.agents).where(tables.agents.c.id == agent_id))
        self._app.secrets.delete_prefix(f"agents.{workspace_id}.{agent_id}.")


class AgentSecretValues(SecretValues):
    def __init__(self, agents: AgentService) -> None:
        self._agents = agents

    async def of(self, workspace_id: str) -> list[str]:
        return await self._agents.secret_values(workspace_id)
