"""Adapter settings of an agent, parsed totally (unknown fields refused, the failing field named).

``openai``: any OpenAI-compatible chat-completions endpoint. ``apiKey`` is write-only: it is moved to the
secrets file on save, never stored in the database and never returned.
``command``: a command-line agent run as a subprocess in the space's working folder. ``secretEnv`` (variables
such as a CLI agent's API key) is write-only too: values go to the secrets file, the record keeps the names
(``secretEnvNames``); a name given with an empty value is removed.

Both take ``productTools``: the product's ops the agent may call as tools (``hangar.agents.tools.product``), by op
name; left out, the default set. Names are checked against the op registry where the process knows it.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator
from pydantic.alias_generators import to_camel

from hangar.errors import InvalidArgs

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
BUILTIN_TOOLS: tuple[str, ...] = ("post_message", "list_files", "read_file")
ROLES: tuple[str, ...] = ("chiefExecutive", "member")


class _Config(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, alias_generator=to_camel, frozen=True)


class _AgentAdapter(_Config):
    # ``None``: the default set (``product_tools.DEFAULT_PRODUCT_TOOLS``); ``[]``: none.
    product_tools: tuple[Annotated[str, Field(min_length=1, max_length=100)], ...] | None = Field(
        default=None, max_length=500
    )

    @field_validator("product_tools")
    @classmethod
    def _product_tools(cls, v: tuple[str, ...] | None) -> tuple[str, ...] | None:
        return None if v is None else tuple(dict.fromkeys(v))


class OpenAIAdapter(_AgentAdapter):
    type: Literal["openai"]
    base_url: str
    model: str = Field(min_length=1, max_length=200)
    api_key: str | None = Field(default=None, min_length=1, max_length=4096)
    max_turns: int = Field(default=20, ge=1, le=200)
    timeout_seconds: float = Field(default=120.0, gt=0, le=3600)
    temperature: float | None = Field(default=None, ge=0, le=2)
    tools: tuple[str, ...] = BUILTIN_TOOLS
    history_limit: int = Field(default=50, ge=0, le=1000)

    @field_validator("base_url")
    @classmethod
    def _base_url(cls, v: str) -> str:
        if not v.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return v.rstrip("/")

    @field_validator("tools")
    @classmethod
    def _tools(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        unknown = [t for t in v if t not in BUILTIN_TOOLS]
        if unknown:
            raise ValueError(f"unknown tools {unknown}; built-in tools are {list(BUILTIN_TOOLS)}")
        return v


class CommandAdapter(_AgentAdapter):
    type: Literal["command"]
    argv: tuple[str, ...] = Field(min_length=1)
    prompt_via: Literal["stdin", "arg"] = "stdin"
    timeout_seconds: float | None = Field(default=None, gt=0, le=86400)
    env: dict[str, str] = Field(default_factory=dict)
    secret_env: dict[str, str] = Field(default_factory=dict)
    secret_env_names: tuple[str, ...] = ()
    # Messages of the space handed over in the context file (``HANGAR_CONTEXT_FILE``), as for chat models.
    history_limit: int = Field(default=50, ge=0, le=1000)
    # Workspace repos (ids or names) the run gets a short-lived forge token for (``hangar.core.brokering``).
    forge_repos: tuple[str, ...] = Field(default=(), max_length=20)

    @field_validator("env", "secret_env")
    @classmethod
    def _env_names(cls, v: dict[str, str]) -> dict[str, str]:
        bad = [k for k in v if not _ENV_NAME.match(k)]
        if bad:
            raise ValueError(f"{bad[0]!r} is not an environment variable name")
        return v

    @field_validator("argv")
    @classmethod
    def _argv(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        if not v[0].strip():
            raise ValueError("the program (first element) must not be empty")
        return v


AdapterConfig = Annotated[OpenAIAdapter | CommandAdapter, Field(discriminator="type")]
_ADAPTER: TypeAdapter[OpenAIAdapter | CommandAdapter] = TypeAdapter(AdapterConfig)


def parse_adapter(raw: Any, field: str = "adapter") -> OpenAIAdapter | CommandAdapter:
    """Parse adapter settings; a bad value is ``InvalidArgs`` naming the field (e.g. ``adapter.baseUrl``)."""
    try:
        return _ADAPTER.validate_python(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = [str(p) for p in err["loc"] if p not in ("openai", "command")]
        where = ".".join([field, *loc]) if loc else field
        if err["type"] == "union_tag_invalid" or err["type"] == "union_tag_not_found":
            raise InvalidArgs(f"{field}.type must be 'openai' or 'command'", field=f"{field}.type") from None
        raise InvalidArgs(f"{where}: {err['msg']}", field=where) from None


def stored_adapter(config: OpenAIAdapter | CommandAdapter) -> dict[str, Any]:
    """What the database keeps: everything but secret values (the API key, secret environment values)."""
    return config.model_dump(mode="json", by_alias=True, exclude={"api_key", "secret_env"})


def check_role(role: str) -> str:
    if role not in ROLES:
        raise InvalidArgs(f"role must be one of {', '.join(ROLES)}, not {role!r}", field="role")
    return role
