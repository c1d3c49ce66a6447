"""What the rig ops answer: rigs, their state, ports, command output, lane URLs and the host's rig status."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, RootModel

from hangar.core.types import Timestamp
from hangar.rigs.model import CloseReason, Phase, Surface
from hangar.rpc.registry import Result


class RigOpened(Result):
    rig_id: str
    phase: Phase
    status_detail: str


class Controller(Result):
    """The person holding control of a rig."""

    user_id: str
    display_name: str


class DisplaySize(Result):
    """A rig's screen in pixels."""

    width: int
    height: int

    @classmethod
    def parse(cls, stored: str | None) -> DisplaySize | None:
        """From the row's ``<width>x<height>`` (None for surfaces without a screen)."""
        if not stored:
            return None
        width, _, height = stored.partition("x")
        return cls(width=int(width), height=int(height))


class RigRow(Result):
    """One rig of ``rig_list``."""

    rig_id: str
    space_id: str
    surface: Surface
    engine: str | None
    backend: str
    status: Phase
    status_detail: str
    display: DisplaySize | None  # for surfaces with a screen
    controller: Controller | None
    close_reason: CloseReason | None
    memory_mb: int
    resident_mb: int
    created_at: Timestamp
    closed_at: Timestamp | None


class RigClosed(Result):
    rig_id: str
    phase: Phase
    close_reason: CloseReason | None


class ExecOutput(Result):
    exit_code: int
    stdout: str
    stderr: str
    timed_out: bool
    truncated: bool  # an output was cut to the reply's size limit


class ControlState(Result):
    rig_id: str
    controller: str | None  # user id


class PortRow(Result):
    """A listening guest port: forwarded to a port of the rig's own host loopback address (and shared on the LAN on
    request), or not. A forward is opened at ``http://<hostAddress>:<hostPort>/`` on the server's host."""

    guest_port: int
    forwarded: bool
    host_address: str | None  # the rig's own address in 127.0.0.0/8, never 127.0.0.1
    host_port: int | None
    lan_port: int | None


class RigPorts(Result):
    rig_id: str
    limit: int  # how many ports are forwarded at most
    ports: list[PortRow]


EgressRule = Literal["allowlist", "address", "port", "direct", "protocol", "limit", "unreachable", "server"]


class EgressRefusal(Result):
    """A connection the rig's egress gate refused, as people watching the rig are told of it: ``host`` is what the
    rig asked for (a name, or an address and port), ``rule`` the rule that said no (``allowlist``: the name is not
    on the rig's allowlist, which an admin may extend with ``rig.grantHosts``; ``address``: the name resolves only
    to addresses rigs may not reach; ``port``: only ports 80 and 443 leave a rig; ``direct``: a connection or
    datagram that went around the gate; ``protocol``: no name to check; ``limit``: too many connections at once;
    ``unreachable``: the host did not answer; ``server``: the rig's door to the server passes only its MCP
    endpoint), ``reason`` the gate's words, ``count`` how often since it was first told (``at``, the last time)."""

    host: str
    kind: str  # dns, http, tls, tcp, udp, server
    rule: EgressRule
    reason: str
    grantable: bool  # an admin's rig.grantHosts of ``host`` would let it through
    count: int
    at: Timestamp


class RigSnapshot(Result):
    """The first reply of ``rig.watch``; its activity events follow."""

    rig_id: str
    surface: Surface
    phase: Phase
    status_detail: str
    controller: str | None  # user id
    ports: list[PortRow]
    egress: list[EgressRefusal]  # the latest refusals of its egress gate, oldest first


class PageRow(Result):
    """One top-level page of a browser rig's session, as its person sees it: ``url`` and ``title`` are the page's
    own text. ``stale``: the engine cannot read a page it is not on (engine C), so this is what it was when last
    current."""

    page_id: str
    url: str
    title: str
    current: bool
    stale: bool


class BrowserPages(Result):
    """What ``rig.navigate`` answers: the session's pages after the move (the current one marked), and the HTTP
    status of the document a navigation loaded where the engine reports it."""

    rig_id: str
    engine: str
    status: int | None
    pages: list[PageRow]


class HostsGranted(Result):
    rig_id: str
    granted: list[str]


class LaneUrl(Result):
    url: str
    path: str
    sig: str
    expires_at: int  # unix seconds


class ActionResult(RootModel[dict[str, Any]]):
    """What one action of a ``*_use`` op answers: its shape depends on the verb (CONTRACTS §6)."""


class ActionLogEntry(Result):
    seq: int
    at: Timestamp
    principal: str
    verb: str
    outcome: str  # ok, refused or error
    details: dict[str, Any]


class PackRefreshView(Result):
    """The last check of a ready pack against its archive: ``current`` (up to date at ``checkedAt``),
    ``refreshing`` (a new version is being built; the current one serves until it is ready), ``refreshed`` (the
    new version took over at ``finishedAt``) or ``failed`` (the check or the rebuild failed: ``error``; the pack in
    place keeps serving). ``newer`` lists the suites released since the pack was built."""

    state: Literal["current", "refreshing", "refreshed", "failed"]
    checked_at: Timestamp | None
    finished_at: Timestamp | None
    error: str | None
    newer: list[str]


class PackView(Result):
    """An image pack: ``ready``, ``missing``, ``building`` (with its step, ``stepIndex`` of ``steps`` when the
    build numbers them) or ``failed`` (with the error of the last build). A ready pack says when its current
    version was built (``builtAt``) and from which archive release (``archiveDate``: the newest ``Date`` of the
    suites it was built from, each in ``archiveDates``); while it is built again its step shows and it stays
    ready."""

    name: str
    surface: str
    revision: str
    state: Literal["ready", "missing", "building", "failed"]
    step: str | None
    step_index: int
    steps: int
    error: str | None
    label: str = Field(description="what a person reads: Terminal image, Chromium browser image, …")
    engine: str | None = Field(default=None, description="a browser pack's engine (engine-a, …)")
    built_at: Timestamp | None = None
    archive_date: Timestamp | None = None
    archive_dates: dict[str, Timestamp] = Field(default_factory=dict)
    refresh: PackRefreshView | None = None


class PackList(Result):
    """``rigs.watchPacks``: the image packs, first as the reply, then again as each event after a change, and the
    hours between their checks against the archives (``rigs.packRefreshHours``; 0: never)."""

    packs: list[PackView]
    refresh_hours: int = 0


class EnclosureView(Result):
    """An enclosure user code runs in (``scope`` names what it runs for, ``pipelineRun:<runId>`` for one): it
    holds its ceiling, ``memoryMb``, in the budget; ``busy`` while a job runs in it."""

    scope: str
    workspace_id: str
    memory_mb: int
    resident_mb: int
    busy: bool


class HostStatus(Result):
    """``heldMb`` is what counts against ``memoryBudgetMb``: rigs' resident memory (their ceiling while booting)
    and each enclosure's ceiling; ``residentMb`` is what rigs and enclosures hold now."""

    backend: str
    unavailable_reason: str | None
    memory_budget_mb: int
    held_mb: int
    resident_mb: int
    live_rigs: int
    enclosures: list[EnclosureView]


class ImageView(Result):
    """An imported desktop image for full-VM rigs (``rigs.images``, ``rigs.importImage``): its id, what the
    server owner called it, its SHA-256, the file's and the guest disk's sizes in bytes, and how its boot check
    went (the accelerator, the seconds from start to the guest agent's answer)."""

    image_id: str
    name: str
    sha256: str
    file_bytes: int
    virtual_bytes: int
    imported_at: Timestamp
    accelerator: str
    boot_seconds: float
