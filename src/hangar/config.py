"""Process settings: flags win over environment variables, which win over defaults.

Environment: ``HANGAR_DATA_DIR``, ``HANGAR_PUBLIC_URL``, ``SERVER_WEB_CLIENT_URL``, ``HANGAR_RIG_PACKS_DIR``,
``HANGAR_WEB_DIST``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import AliasChoices, Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from hangar.ports import DEFAULT_PORT, DEFAULT_SITE_PORT


def default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "hangar"


def _clean_origin(value: str | None, name: str) -> str | None:
    if value is None or value == "":
        return None
    if not value.startswith(("http://", "https://")):
        raise ValueError(f"{name} must start with http:// or https://")
    return value.rstrip("/")


class Settings(BaseSettings):
    model_config = SettingsConfigDict(extra="ignore", populate_by_name=True)

    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    data_dir: Path = Field(
        default_factory=default_data_dir, validation_alias=AliasChoices("data_dir", "HANGAR_DATA_DIR")
    )
    public_url: str | None = Field(default=None, validation_alias=AliasChoices("public_url", "HANGAR_PUBLIC_URL"))
    web_client_url: str | None = Field(
        default=None, validation_alias=AliasChoices("web_client_url", "SERVER_WEB_CLIENT_URL")
    )
    site_port: int | None = DEFAULT_SITE_PORT  # where the website listens beside the server; None: not served
    site_url: str | None = None  # the website's public origin when it is served under one (``--site-url``)
    # Where rig image packs are built and cached (default ``<dataDir>/rigs/microvm-packs``). Packs hold no
    # workspace data, so several data directories on one host may share one cache.
    rig_packs_dir: Path | None = Field(
        default=None, validation_alias=AliasChoices("rig_packs_dir", "HANGAR_RIG_PACKS_DIR")
    )

    # The chat provider's Web API base (its socket URL is whatever ``apps.connections.open`` answers); tests point
    # it at a loopback fake so no other host is dialled.
    chatprovider_api_url: str = Field(
        default="https://slack.com/api/",
        validation_alias=AliasChoices("chatprovider_api_url", "HANGAR_CHATPROVIDER_API_URL"),
    )

    # The built web client the server serves at ``/`` (default: ``web/dist`` of the checkout it runs from).
    web_dist: Path | None = Field(default=None, validation_alias=AliasChoices("web_dist", "HANGAR_WEB_DIST"))

    @property
    def packs_root(self) -> Path:
        """Where rig image packs are built and looked for: ``rig_packs_dir``, else ``<dataDir>/rigs/microvm-packs``."""
        return self.rig_packs_dir or self.data_dir / "rigs" / "microvm-packs"

    @field_validator("public_url")
    @classmethod
    def _public_url(cls, v: str | None) -> str | None:
        return _clean_origin(v, "--public-url")

    @field_validator("site_url")
    @classmethod
    def _site_url(cls, v: str | None) -> str | None:
        return _clean_origin(v, "--site-url")

    @field_validator("web_client_url")
    @classmethod
    def _web_client_url(cls, v: str | None) -> str | None:
        return _clean_origin(v, "--web-client-url")

    @classmethod
    def from_flags(cls, **flags: Any) -> Settings:
        """Settings from command-line flags; a flag left as ``None`` falls back to the environment."""
        given = {k: v for k, v in flags.items() if v is not None}
        return cls(**given)

    @property
    def origin(self) -> str:
        """The server's canonical origin: the public URL when set, else its own listener."""
        return self.public_url or f"http://{self.host}:{self.port}"
