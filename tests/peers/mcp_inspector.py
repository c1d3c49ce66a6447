"""Run the MCP Inspector's command-line client (the npm package ``@modelcontextprotocol/inspector-cli``, pinned
by the lock file) against a real server. ``npm ci`` runs once when ``node_modules`` is missing.

The umbrella ``@modelcontextprotocol/inspector`` package asks for Node 22, more than Debian's Node carries; its
command-line client alone runs on the Node the tests install, and is the same code ``--cli`` runs.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.peers import npm

PEER_DIR = Path(__file__).parent / "mcp-inspector"
CLI_DIR = PEER_DIR / "node_modules" / "@modelcontextprotocol" / "inspector-cli" / "build"


def ensure_installed() -> None:
    npm.ensure_installed(PEER_DIR, CLI_DIR / "cli.js")


def inspect(url: str, *args: str, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    """``mcp-inspector --cli <url> --transport http [--header ...] <args>``: its exit code and its JSON output
    (the text when it printed none)."""
    ensure_installed()
    command = ["node", "cli.js", "--cli", url, "--transport", "http"]
    for name, value in (headers or {}).items():
        command += ["--header", f"{name}: {value}"]
    # Run from its build folder: the client finds its own package.json relative to the working directory.
    done = subprocess.run([*command, *args], cwd=CLI_DIR, capture_output=True, text=True, timeout=120)
    try:
        return done.returncode, json.loads(done.stdout)
    except ValueError:
        return done.returncode, done.stdout + done.stderr
