"""Starting Hangar stays quick: the heavy libraries a command or a request needs only sometimes are imported when
that command runs or that request comes, never by importing the command line or building the server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import mcp.types as mt

from hangar.rpc.mcp import wire

SRC = Path(__file__).resolve().parents[2] / "src"
# The MCP SDK (the /mcp door, the website's MCP server), SCIM's models (the first SCIM request), the progress
# display (`hangar rigs build-pack`), and what every command that opens a data directory needs but `--help` does not.
# numpy: the meetings' diarisation, loaded when a meeting is diarised. slack_sdk: the Slack provider's client
# (its package loads the whole Web API client and block models), loaded when a workspace first calls Slack.
# githubkit (with PyJWT and its HTTP cache): loaded when the server first calls a forge.
LAZY_FOR_CLI = ("mcp", "mcp_types", "scim2_models", "rich", "sqlalchemy", "alembic", "pydantic", "hangar.server")
LAZY_FOR_SERVER = ("mcp", "mcp_types", "scim2_models", "hangar.site", "numpy", "slack_sdk", "githubkit")


def loaded_after(code: str, modules: tuple[str, ...]) -> list[str]:
    """Which of ``modules`` a fresh interpreter has loaded after running ``code``."""
    probe = f"import sys, json\n{code}\nprint(json.dumps([m for m in {list(modules)!r} if m in sys.modules]))"
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    loaded: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return loaded


def test_importing_the_command_line_loads_no_heavy_library() -> None:
    assert loaded_after("import hangar.cli", LAZY_FOR_CLI) == []


def test_the_probe_sees_what_is_loaded() -> None:
    # Without this, a probe that always answered [] would pass the tests around it.
    loaded = loaded_after("import mcp.types, hangar.cli", LAZY_FOR_CLI)
    assert {"mcp", "mcp_types", "pydantic"} <= set(loaded) and "scim2_models" not in loaded


def test_building_the_server_loads_none_of_the_libraries_only_some_requests_need(tmp_path: Path) -> None:
    code = (
        "from hangar.config import Settings\n"
        "from hangar.server.app import build_server\n"
        f"build_server(Settings(data_dir={str(tmp_path)!r}))"
    )
    assert loaded_after(code, LAZY_FOR_SERVER) == []


def test_the_door_writes_the_sdk_code_for_an_invalid_request() -> None:
    # wire.py spells JSON-RPC's code itself so that importing it does not load the SDK: it must stay the SDK's.
    assert wire.INVALID_REQUEST == mt.INVALID_REQUEST


# What an admin command on SQLite does not use: the metrics library (nothing is counted) and SQLAlchemy's
# PostgreSQL dialect (it loads every PostgreSQL driver's module).
LAZY_FOR_ADMIN = ("prometheus_client", "sqlalchemy.dialects.postgresql")
# Nor what only the server or another command needs: the relay to other servers (httpx, which loads rich and
# click for its own command line, and websockets), the retention part (its ops stand on the RPC layer), the
# identity part's ops and routes (the command opens ``IDENTITY_COMMAND_PART``), the rigs' image builder
# (`hangar rigs build-pack`), Starlette and the HTTP server.
SERVER_ONLY_FOR_ADMIN = (
    "httpx",
    "websockets",
    "rich",
    "hangar.rpc.relay",
    "hangar.rpc.registry",
    "hangar.retention",
    "hangar.identity.ops",
    "hangar.identity.routes",
    "hangar.rigs.images.builder",
    "starlette",
    "uvicorn",
)


def test_an_admin_command_on_sqlite_loads_neither_the_metrics_library_nor_the_postgresql_dialect(
    tmp_path: Path,
) -> None:
    code = (
        f"sys.argv = ['hangar', 'admin', 'owner-token', '--data-dir', {str(tmp_path)!r}]\n"
        "from hangar.cli import main\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    assert not exc.code, exc.code\n"
    )
    # The first run creates the data directory (migrating loads Alembic and more); the second finds it at head, as
    # every admin command after installation does.
    loaded_after(code, ())
    assert loaded_after(code, LAZY_FOR_ADMIN + SERVER_ONLY_FOR_ADMIN) == []


def test_a_server_that_counts_loads_the_metrics_library() -> None:
    # The other side: the lazy import is still made when metrics are on (the server's default).
    code = "from hangar.core.metrics import Metrics\nMetrics(enabled=True)"
    assert loaded_after(code, LAZY_FOR_ADMIN) == ["prometheus_client"]


def test_metrics_turned_off_expose_nothing_and_on_expose_the_families() -> None:
    from hangar.core.metrics import Metrics

    off = Metrics(enabled=False)
    off.rpc_call("server.info", "socket", "ok", 0.001)
    assert off.exposition() == b""
    on = Metrics(enabled=True)
    on.rpc_call("server.info", "socket", "ok", 0.001)
    assert b'hangar_rpc_calls_total{door="socket",op="server.info",outcome="ok"} 1.0' in on.exposition()
