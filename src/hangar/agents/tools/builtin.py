"""The tools an agent can call during a run.

Built-in tools, each really run by the server and confined to the run's space:
``post_message`` (post to the space), ``list_files`` and ``read_file`` (inside the space's working folder).
The folder is the space's guests' to change while the tools read it (a member's terminal, a command agent), so
paths are opened beneath the folder's descriptor with no symlink followed (``hangar.core.beneath``): a path
that leaves the folder or passes through a symlink is refused, and swapping one in mid-call changes nothing.
``submit_output`` is offered whenever the dispatcher gave an output schema:
the payload is validated against it; a refused payload is answered with the reasons so the agent can retry,
an accepted one ends the run and is handed to whoever dispatched it.

Beside them, the product's own ops the agent may call (``hangar.agents.tools.product``).
"""

from __future__ import annotations

import errno
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from hangar.agents.adapters.base import ToolResult
from hangar.agents.tools.output_schema import as_tool_parameters, violation
from hangar.agents.tools.product import RunProductTools
from hangar.core.beneath import NotBeneath, anchored, list_beneath, parts_of, read_regular

READ_LIMIT = 64 * 1024
LIST_LIMIT = 500

_SPECS: dict[str, dict[str, Any]] = {
    "post_message": {
        "description": "Post a message to the conversation (space) you are working in.",
        "parameters": {
            "type": "object",
            "properties": {"content": {"type": "string", "description": "The message text (markdown)."}},
            "required": ["content"],
        },
    },
    "list_files": {
        "description": "List the files and folders of a folder in your working folder (default: its root).",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string", "description": "Folder path relative to the working folder."}},
        },
    },
    "read_file": {
        "description": f"Read a text file of your working folder (the first {READ_LIMIT // 1024} KiB).",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string", "description": "File path relative to the working folder."}},
            "required": ["path"],
        },
    },
}


class OutputHolder:
    """The run's ``submit_output`` slot: the schema, the accepted payload, and the last refusal."""

    def __init__(self, schema: dict[str, Any] | None) -> None:
        self._schema = schema
        self.value: Any = None
        self.accepted = False
        self.last_error: str | None = None
        self.wrapped = False
        if schema is not None:
            self.parameters, self.wrapped = as_tool_parameters(schema)

    @property
    def schema(self) -> dict[str, Any] | None:
        return self._schema

    def submit(self, payload: Any) -> tuple[bool, str]:
        if self._schema is None:
            return False, "no output was asked for in this run"
        problem = violation(self._schema, payload)
        if problem:
            self.last_error = problem
            return False, (
                "submit_output refused: the payload does not match the output schema: "
                f"{self.last_error}. Fix it and call submit_output again."
            )
        self.value, self.accepted, self.last_error = payload, True, None
        return True, "accepted"


class RunToolbox:
    def __init__(
        self,
        *,
        enabled: tuple[str, ...],
        folder: Path,
        output: OutputHolder,
        post: Callable[[str], Awaitable[None]],
        product: RunProductTools | None = None,
    ) -> None:
        self._enabled = enabled
        self._folder = folder
        self._output = output
        self._post = post
        self._product = product

    def specs(self) -> list[dict[str, Any]]:
        tools = [{"type": "function", "function": {"name": n, **_SPECS[n]}} for n in self._enabled]
        if self._product is not None:
            tools.extend(self._product.specs())
        if self._output.schema is not None:
            tools.append(
                {
                    "type": "function",
                    "function": {
                        "name": "submit_output",
                        "description": "Submit the result of your work; it must match the expected schema.",
                        "parameters": self._output.parameters,
                    },
                }
            )
        return tools

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        if name == "submit_output" and self._output.schema is not None:
            payload = arguments.get("output") if self._output.wrapped else arguments
            ok, message = self._output.submit(payload)
            return ToolResult(ok, message, ends_run=ok)
        if name not in self._enabled:
            if self._product is not None and self._product.handles(name):
                return await self._product.call(name, arguments)
            return ToolResult(False, f"there is no tool named {name!r}")
        try:
            if name == "post_message":
                return await self._post_message(arguments)
            if name == "list_files":
                return self._list_files(arguments)
            return self._read_file(arguments)
        except OSError as exc:
            return ToolResult(False, f"{name} failed: {exc.strerror or exc}")

    async def _post_message(self, args: dict[str, Any]) -> ToolResult:
        content = args.get("content")
        if not isinstance(content, str) or not content.strip():
            return ToolResult(False, "post_message needs a non-empty string `content`")
        await self._post(content)
        return ToolResult(True, "posted")

    def _list_files(self, args: dict[str, Any]) -> ToolResult:
        raw = args.get("path")
        raw = "." if raw is None else raw
        if not isinstance(raw, str):
            return ToolResult(False, "`path` must be a string")
        try:
            prefix = "/".join(parts_of(raw))
            with anchored(self._folder) as root:
                entries = list_beneath(root, raw)
        except NotBeneath:
            return ToolResult(False, f"{raw} is outside your working folder or passes through a symbolic link")
        except (FileNotFoundError, NotADirectoryError):
            return ToolResult(False, f"{raw} is not a folder")
        lines = [
            (f"{prefix}/{name}" if prefix else name) + ("/" if is_dir else "")
            for name, is_dir in entries[:LIST_LIMIT]
            if name != ".git" and not name.startswith(".hangar-output-")
        ]
        more = f"\n… and {len(entries) - LIST_LIMIT} more" if len(entries) > LIST_LIMIT else ""
        return ToolResult(True, ("\n".join(lines) or "(empty folder)") + more)

    def _read_file(self, args: dict[str, Any]) -> ToolResult:
        raw = args.get("path")
        if not isinstance(raw, str):
            return ToolResult(False, "`path` must be a string")
        try:
            with anchored(self._folder) as root:
                data = read_regular(root, raw, READ_LIMIT + 1)
        except NotBeneath:
            return ToolResult(False, f"{raw} is outside your working folder or passes through a symbolic link")
        except OSError as exc:
            if exc.errno in (errno.ENOENT, errno.EISDIR, errno.EINVAL, errno.ENOTDIR):
                return ToolResult(False, f"{raw} is not a file")
            raise
        text = data[:READ_LIMIT].decode(errors="replace")
        return ToolResult(True, text + ("\n… (truncated)" if len(data) > READ_LIMIT else ""))
