"""The adapter that drives one agent's run: its model endpoint's client, or its command line."""

from __future__ import annotations

import ssl

import httpx

from hangar.agents.adapters.base import Adapter
from hangar.agents.adapters.command import CommandLineAdapter
from hangar.agents.adapters.openai import OpenAIChatAdapter
from hangar.agents.config import OpenAIAdapter
from hangar.agents.endpoints import ModelEndpoint
from hangar.agents.service import Agent
from hangar.core.context import AppContext


def make_adapter(app: AppContext, agent: Agent, http: httpx.AsyncClient, tls: ssl.SSLContext) -> Adapter:
    """``http`` and ``tls`` are the runner's, shared by every run: a client made per run loads the CA bundle."""
    if isinstance(agent.adapter, OpenAIAdapter):
        endpoint = ModelEndpoint(app, agent.adapter.base_url, by_owner=agent.endpoint_by_owner, shared=http, tls=tls)
        return OpenAIChatAdapter(agent.adapter, endpoint)
    return CommandLineAdapter(agent.adapter)
