"""The wire shapes of the ``meetings.*`` ops."""

from __future__ import annotations

from hangar.core.types import Timestamp
from hangar.meetings.outcomes import ActionItem, Decision, Notes
from hangar.meetings.store import Channel, Meeting, VoiceProfile
from hangar.rpc.registry import Result


class MeetingView(Result):
    id: str
    title: str
    started_at: Timestamp
    participants: list[str]
    created_by: str
    created_at: Timestamp
    playback: bool  # whether the mixed playback track is assembled (GET /meeting-audio/<ws>/<id>/playback)
    playback_bytes: int | None

    @classmethod
    def of(cls, m: Meeting) -> MeetingView:
        return cls(playback=m.playback_bytes is not None, **m.__dict__)


class MeetingList(Result):
    meetings: list[MeetingView]


class SegmentView(Result):
    start: float
    end: float
    speaker: str
    text: str


class ChannelView(Result):
    id: str
    label: str
    uploaded_bytes: int
    source_format: str
    seconds: float
    created_by: str
    created_at: Timestamp

    @classmethod
    def of(cls, c: Channel) -> ChannelView:
        return cls(
            id=c.id, label=c.label, uploaded_bytes=c.uploaded_bytes, source_format=c.source_format, seconds=c.seconds,
            created_by=c.created_by, created_at=c.created_at,
        )  # fmt: skip


class NotesView(Result):
    summary: str
    enhanced_notes: str
    run_id: str | None
    created_at: Timestamp

    @classmethod
    def of(cls, n: Notes) -> NotesView:
        return cls(summary=n.summary, enhanced_notes=n.enhanced_notes, run_id=n.run_id, created_at=n.created_at)


class ActionItemView(Result):
    id: str
    text: str
    owner: str | None
    due: str | None
    ticket_id: str | None
    created_at: Timestamp

    @classmethod
    def of(cls, a: ActionItem) -> ActionItemView:
        return cls(id=a.id, text=a.text, owner=a.owner, due=a.due, ticket_id=a.ticket_id, created_at=a.created_at)


class DecisionView(Result):
    text: str
    created_at: Timestamp

    @classmethod
    def of(cls, d: Decision) -> DecisionView:
        return cls(text=d.text, created_at=d.created_at)


class MeetingDetail(Result):
    meeting: MeetingView
    transcript: list[SegmentView]
    channels: list[ChannelView]
    notes: list[NotesView]  # newest first
    action_items: list[ActionItemView]
    decisions: list[DecisionView]


class TranscriptImported(Result):
    meeting_id: str
    segments: int
    speakers: list[str]


class SpeakersRelabelled(Result):
    meeting_id: str
    segments: int


class MeetingDeleted(Result):
    meeting_id: str


class ProfileView(Result):
    id: str
    user_id: str
    label: str
    dimensions: int
    consented_at: Timestamp
    created_by: str

    @classmethod
    def of(cls, p: VoiceProfile) -> ProfileView:
        return cls(
            id=p.id, user_id=p.user_id, label=p.label, dimensions=len(p.embedding), consented_at=p.consented_at,
            created_by=p.created_by,
        )  # fmt: skip


class ProfileList(Result):
    profiles: list[ProfileView]


class ProfileDeleted(Result):
    profile_id: str


class ActionItemTicket(Result):
    action_item_id: str
    ticket_id: str
    created: bool  # False: the item had its ticket already
