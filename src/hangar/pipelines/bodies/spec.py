"""Declaring pipeline bodies.

A body is an async function taking a ``StepContext`` and returning a ``StepResult``, declared with ``@body``.
The decorator validates the declaration at import and attaches a frozen ``BodySpec``; it registers nothing
globally. Each part lists its bodies in its ``Part(bodies=...)``; the composition hands them to the pipelines part,
whose engine is given the registry built from them.

    @body("shell.run", summary="Runs a bash script in the run's directory.",
          config=[ConfigField("script", "Bash script with {{key}} substitution", required=True)])
    async def shell_run(step: StepContext) -> StepResult: ...

``on_worker=True`` means the body does work on a host (a shell script, an agent's turn): with ``hangar worker``
processes attached to a PostgreSQL install, the server hands its steps to them (``hangar.pipelines.stepqueue``)
instead of running them itself. Such a body must build everything it needs from its ``StepContext`` (it runs in
another process), and there (``StepContext.on_worker``) must finish its work within the call: a worker never
suspends a step on work it leaves running. A resumed body (``step.resume``) is never handed over.
``needs_server=True`` (with ``on_worker``) means the body reads files that lie with a server
(``hangar.pipelines.worker_lane``): only a worker started with ``--server`` claims its steps; a function of the
step says it per step (a shell step naming ``repoIds`` needs a server to mint its forge token).

``resumes=True`` means the body is called again (with ``step.resume`` set) when its suspension ends, to harvest
what it waited for. Otherwise the engine completes the step itself: the event payload, or the tasks' outputs
(one task: its output; several: a map of task id to output), become the step's output, and a task that did not
succeed fails the step.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar, get_args

if TYPE_CHECKING:
    from hangar.pipelines.step import StepContext
    from hangar.pipelines.step_results import StepResult

BodyFn = Callable[["StepContext"], Awaitable["StepResult"]]
F = TypeVar("F", bound=Callable[..., Any])

_KEY = re.compile(r"^[a-z][A-Za-z0-9]*(\.[a-z][A-Za-z0-9]*)+$")
_CONFIG_NAME = re.compile(r"^(state\.|payload\.|extras\.)?[A-Za-z_][A-Za-z0-9_.]*$")
NODE_FIELDS: frozenset[str] = frozenset(
    {
        "prompt",
        "script",
        "agentId",
        "inputKeys",
        "repoIds",
        "outputKey",
        "label",
        "outputSchema",
        "reducer",
        "retryPolicy",
        "continueOnFail",
        "timeoutMs",
        "teamId",
        "dispatchMode",
    }
)


# The records a setting can name (``ConfigField.refers``): a template naming one that the workspace does not hold
# is refused when it is saved (``hangar.pipelines.references``), and an editor offers the records by name.
Refers = Literal["agent", "team", "space", "repo", "template"]
REFERS: tuple[str, ...] = get_args(Refers)


@dataclass(frozen=True)
class ConfigField:
    """One setting a body reads: a node-config field (``script``), an extra (``extras.templateId``) or a state
    key (``state.space_id``). ``required`` node-config fields and extras are checked when a template loads;
    ``refers`` says the value names a record of the workspace (an agent's id, a repo spec), checked too."""

    name: str
    doc: str
    required: bool = False
    refers: Refers | None = None

    @property
    def where(self) -> str:
        if self.name.startswith("extras."):
            return "extras"
        if self.name.startswith(("state.", "payload.")):
            return "state"
        return "config"

    def value_in(self, config: Mapping[str, Any]) -> Any:
        """The setting's value in a node's wire config (camelCase keys, ``extras`` nested); None for a state key."""
        if self.where == "config":
            return config.get(self.name)
        if self.where == "extras":
            return (config.get("extras") or {}).get(self.name.removeprefix("extras."))
        return None


@dataclass(frozen=True)
class BodySpec:
    key: str
    summary: str
    fn: BodyFn
    config: tuple[ConfigField, ...] = ()
    resumes: bool = False
    honours_dry_run: bool = False
    module: str = ""
    # Does work on a host (a shell script, an agent's turn): handed to ``hangar worker`` processes when attached.
    on_worker: bool = False
    # Only a worker given ``--server`` runs its steps: always (it reads files that lie with a server: a repo's
    # clone, a meeting's audio), or for the steps this says so of (a shell step naming ``repoIds``).
    needs_server: bool | Callable[[StepContext], bool] = False

    def needs_server_for(self, step: StepContext) -> bool:
        return self.needs_server(step) if callable(self.needs_server) else self.needs_server

    def missing_config(self, config: Mapping[str, Any]) -> list[str]:
        """Required settings absent from a node's wire config (camelCase keys, ``extras`` nested)."""
        return [
            f.name
            for f in self.config
            if f.required and f.where != "state" and f.value_in(config) in (None, "", [], {}, ())
        ]


def body(
    key: str,
    *,
    summary: str,
    config: Iterable[ConfigField] = (),
    resumes: bool = False,
    honours_dry_run: bool = False,
    on_worker: bool = False,
    needs_server: bool | Callable[[StepContext], bool] = False,
) -> Callable[[F], F]:
    """Declare a pipeline body under ``key`` (dotted lower-camel words, e.g. ``shell.run``)."""

    def decorate(fn: F) -> F:
        where = f"body {key!r} ({fn.__module__}.{fn.__qualname__})"
        if not _KEY.match(key):
            raise ValueError(f"{where}: key must be dotted lower-camel words such as 'shell.run'")
        line = summary.strip()
        if not line or "\n" in line:
            raise ValueError(f"{where}: summary must be one non-empty line")
        if not inspect.iscoroutinefunction(fn):
            raise ValueError(f"{where}: must be an async function")
        if len(inspect.signature(fn).parameters) != 1:
            raise ValueError(f"{where}: signature must be (step)")
        if needs_server and not on_worker:
            raise ValueError(f"{where}: needs_server is for a body that runs on workers (on_worker=True)")
        fields = tuple(config)
        for f in fields:
            if not _CONFIG_NAME.match(f.name):
                raise ValueError(f"{where}: config field {f.name!r} is not a field, extras.x or state.x name")
            if f.where == "config" and f.name not in NODE_FIELDS:
                raise ValueError(f"{where}: {f.name!r} is not a node-config field; use extras.{f.name}")
            if f.refers is not None and (f.refers not in REFERS or f.where == "state"):
                raise ValueError(f"{where}: config field {f.name!r} cannot refer to {f.refers!r}")
        spec = BodySpec(
            key=key,
            summary=line,
            fn=fn,
            config=fields,
            resumes=resumes,
            honours_dry_run=honours_dry_run,
            module=fn.__module__,
            on_worker=on_worker,
            needs_server=needs_server,
        )
        fn.__body_spec__ = spec  # type: ignore[attr-defined]
        return fn

    return decorate


def spec_of_body(item: Callable[..., Any] | BodySpec) -> BodySpec:
    if isinstance(item, BodySpec):
        return item
    spec = getattr(item, "__body_spec__", None)
    if not isinstance(spec, BodySpec):
        raise ValueError(f"{item!r} is not declared with @body")
    return spec


class BodyRegistry:
    """The bodies one engine executes, built from an explicit list."""

    def __init__(self, bodies: Iterable[Callable[..., Any] | BodySpec] = ()) -> None:
        self._by_key: dict[str, BodySpec] = {}
        for item in bodies:
            self.add(spec_of_body(item))

    def add(self, spec: BodySpec) -> None:
        known = self._by_key.get(spec.key)
        if known is not None and known.fn is not spec.fn:
            raise ValueError(f"body {spec.key!r} is registered twice ({known.module}, {spec.module})")
        self._by_key[spec.key] = spec

    def get(self, key: str | None) -> BodySpec | None:
        return self._by_key.get(key) if key else None

    def __contains__(self, key: object) -> bool:
        return key in self._by_key

    @property
    def keys(self) -> list[str]:
        return sorted(self._by_key)

    @property
    def specs(self) -> Sequence[BodySpec]:
        return [self._by_key[k] for k in self.keys]
