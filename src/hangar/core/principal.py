"""The vocabulary of access every layer speaks: who is calling (``Principal``) and the workspace role they hold
(``Role``). Identity makes principals, the RPC layer checks them, every part reads them; so they live in the kernel,
below all three."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from hangar.errors import Forbidden, InvalidArgs


class Role(IntEnum):
    """Workspace roles, lowest first: guest < member < admin < owner."""

    guest = 1
    member = 2
    admin = 3
    owner = 4

    @classmethod
    def parse(cls, value: str, *, field: str = "role") -> Role:
        try:
            return cls[value]
        except KeyError:
            names = ", ".join(r.name for r in cls)
            raise InvalidArgs(f"{field} must be one of {names}, not {value!r}", field=field) from None


@dataclass(frozen=True)
class Principal:
    """An authenticated caller: a user, or an agent, acting through one device credential.

    A credential may be narrower than its holder (an OAuth client the person consented for, an agent's
    short-lived credential): ``workspace_id`` limits it to one workspace, ``space_id`` to one space of it,
    ``read_only`` to ops that change nothing, ``tools`` to the named ops. ``agent_id`` marks an agent acting in
    its own workspace: it holds the member role there and nowhere else."""

    user_id: str
    device_id: str
    display_name: str
    is_server_owner: bool
    authority: int = -1  # the authority counter this principal was checked against (``IdentityService``)
    workspace_id: str | None = None
    read_only: bool = False
    tools: frozenset[str] | None = None
    agent_id: str | None = None
    # An agent run's credential: the space the run works in. Ops naming another space are refused, reads that
    # list spaces answer this one, reads of every space's events are refused (``check_space``, ``whole_workspace``).
    space_id: str | None = None
    # Issued to an application or an agent (an OAuth client's grant, an agent run's credential, anything with a
    # deadline): it may act within its grant but never mint or end the holder's other credentials.
    delegated: bool = False

    @property
    def label(self) -> str:
        """How the principal is written in audit rows: never the credential."""
        if self.agent_id is not None:
            return f"agent:{self.agent_id}"
        return f"user:{self.user_id}"

    @property
    def scoped(self) -> bool:
        """Whether the credential is narrower than its holder."""
        return self.workspace_id is not None or self.space_id is not None or self.read_only or self.tools is not None

    def check_reach(
        self,
        workspace_id: str | None,
        *,
        changes: bool,
        action: str,
        op: bool = True,
        space_id: str | None = None,
    ) -> None:
        """Refuse ``action`` (an op's name when ``op``, else a lane or route) when it lies outside what this
        credential was granted: another workspace, another space than ``space_id`` (the space the action names or
        acts in, when it names one), a change through a read-only credential, an op not among its tools (a
        credential limited to tools reaches no lane). The holder's own role is checked elsewhere."""
        if self.workspace_id is not None and workspace_id != self.workspace_id:
            where = f"workspace {workspace_id}" if workspace_id is not None else "server-wide changes"
            if workspace_id is not None or changes:
                raise Forbidden(f"this credential is limited to workspace {self.workspace_id}; {action} needs {where}")
        self.check_space(space_id, action=action)
        if changes and self.read_only:
            raise Forbidden(f"this credential is read-only; {action} changes something")
        if self.tools is not None and (not op or action not in self.tools):
            raise Forbidden(f"{action} is not among the tools this credential was granted")

    def check_space(self, space_id: str | None, *, action: str, subject: str | None = None) -> None:
        """Refuse ``action`` when it names or acts in ``space_id`` and this credential is limited to another space;
        ``subject`` is what the action names instead of a space, when the space is that thing's (a rig). An action
        that names no space (``None``) is not about one and passes; reads across every space are the op's to hold
        (``whole_workspace``, or answering the credential's space only)."""
        if self.space_id is None or space_id is None or space_id == self.space_id:
            return
        limit = f"this credential is limited to space {self.space_id}"
        if subject is not None:
            raise Forbidden(f"{limit}; {action}: {subject} is in space {space_id}")
        raise Forbidden(f"{limit}; {action} names space {space_id}")

    def whole_workspace(self, action: str) -> None:
        """Refuse ``action``, a read of every space of the workspace at once (its events), to a credential
        limited to one space."""
        if self.space_id is not None:
            raise Forbidden(
                f"this credential is limited to space {self.space_id}; {action} reads every space of the workspace"
            )
