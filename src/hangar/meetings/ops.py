"""The ``meetings.*`` ops, each also an MCP tool: records (create, list, get, delete), the transcript (import as
WebVTT or JSON segments, rename speakers), voice profiles (create with consent, or from a diarised speaker's
voiceprint the server kept; list, delete) and action items made tickets. Retained audio arrives over HTTP
(``hangar.meetings.routes``); notes, action items and decisions are saved by the meeting-notes pipeline's bodies.

Who may do what: any member reads and creates; a meeting is deleted by its creator or an admin. A voice profile is
a person's own: a member records their own voice with their consent; an admin may record a member's when that
member consented elsewhere (``consented`` says so, and the audit row names who recorded it); a profile is deleted
by its member or an admin."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import AfterValidator, Field

from hangar.core.part import OpFunction
from hangar.core.principal import Role
from hangar.errors import Forbidden, InvalidArgs, NotFound
from hangar.identity import IdentityService
from hangar.meetings import files, outcomes, store, voiceprints
from hangar.meetings.outcomes import OUTCOME_TABLES
from hangar.meetings.profiles import members_profiles
from hangar.meetings.results import (
    ActionItemTicket,
    ActionItemView,
    ChannelView,
    DecisionView,
    MeetingDeleted,
    MeetingDetail,
    MeetingList,
    MeetingView,
    NotesView,
    ProfileDeleted,
    ProfileList,
    ProfileView,
    SegmentView,
    SpeakersRelabelled,
    TranscriptImported,
)
from hangar.meetings.tables import meeting_voiceprints
from hangar.meetings.transcript import MAX_SPEAKER, parse
from hangar.rpc.context import OpContext
from hangar.rpc.registry import Args, op
from hangar.workspace import TICKET_DESCRIPTION_MAX, TicketService

MAX_TITLE = 300
MAX_PARTICIPANTS = 100
MAX_TRANSCRIPT_CHARS = 200_000  # what one import carries (an RPC frame holds 256 KiB)
TICKET_TITLE_MAX = 300


def _plain(text: str) -> str:
    if "\x00" in text:
        raise ValueError("must not contain a NUL character")
    return text.strip()


Text = Annotated[str, AfterValidator(_plain)]
Name = Annotated[str, AfterValidator(_plain), Field(min_length=1, max_length=MAX_SPEAKER)]
Id = Annotated[str, Field(min_length=1, max_length=64)]


class CreateArgs(Args):
    title: Annotated[Text, Field(min_length=1, max_length=MAX_TITLE)]
    started_at: datetime | None = Field(default=None, description="When it started (ISO 8601); now if absent")
    participants: list[Name] = Field(default_factory=list, max_length=MAX_PARTICIPANTS)


class MeetingArgs(Args):
    meeting_id: Id


class ListArgs(Args):
    limit: int = Field(default=100, ge=1, le=1000)


class ImportArgs(MeetingArgs):
    format: str = Field(pattern="^(webvtt|json)$", description="webvtt, or json (segments start/end/speaker/text)")
    content: str = Field(min_length=1, max_length=MAX_TRANSCRIPT_CHARS)


class RelabelArgs(MeetingArgs):
    names: dict[Name, Name] = Field(min_length=1, max_length=100, description="Old speaker label to new label")


class ProfileCreateArgs(Args):
    label: Name
    embedding: list[float] = Field(min_length=1, max_length=store.MAX_EMBEDDING)
    consented: bool = Field(description="The member consented to their voice being kept: required, true")
    user_id: Id | None = Field(default=None, description="The member whose voice it is (admins only); you if absent")


class ProfileFromSpeakerArgs(MeetingArgs):
    speaker: Name = Field(description="The diarised speaker (Person 2) of the meeting's latest diarisation")
    consented: bool = Field(description="The member consented to their voice being kept: required, true")
    user_id: Id | None = Field(default=None, description="The member whose voice it is (admins only); you if absent")
    label: Name | None = Field(default=None, description="The name the profile gives its speaker; the member's name")
    diarization_id: Id | None = Field(default=None, description="Another of the meeting's diarisations than the latest")


class ProfileListArgs(Args):
    user_id: Id | None = None


class ProfileArgs(Args):
    profile_id: Id


class TicketArgs(MeetingArgs):
    action_item_id: Id


def _as_utc(value: datetime | None, now: datetime) -> datetime:
    if value is None:
        return now
    if value.tzinfo is None:
        raise InvalidArgs("startedAt must carry a time zone (for example 2026-01-31T09:00:00Z)", field="startedAt")
    return value


@op("meetings.create", kind="mutate", scope="workspace")
async def meetings_create(ctx: OpContext, args: CreateArgs) -> MeetingView:
    """Record a meeting: its title, when it started, who took part (names)."""
    now = ctx.app.clock.now()
    meeting = await store.create_meeting(
        await ctx.db(), title=args.title, started_at=_as_utc(args.started_at, now),
        participants=list(dict.fromkeys(args.participants)), by=ctx.principal.label, now=now,
    )  # fmt: skip
    await ctx.audit("meetings.create", f"meeting:{meeting.id}", {"title": meeting.title})
    return MeetingView.of(meeting)


@op("meetings.list", kind="read", scope="workspace")
async def meetings_list(ctx: OpContext, args: ListArgs) -> MeetingList:
    """The workspace's meetings, the latest first."""
    return MeetingList(meetings=[MeetingView.of(m) for m in await store.list_meetings(await ctx.db(), args.limit)])


@op("meetings.get", kind="read", scope="workspace")
async def meetings_get(ctx: OpContext, args: MeetingArgs) -> MeetingDetail:
    """A meeting with its transcript, retained channels, notes (newest first), action items and decisions."""
    engine = await ctx.db()
    meeting = await store.get_meeting(engine, args.meeting_id)
    return MeetingDetail(
        meeting=MeetingView.of(meeting),
        transcript=[SegmentView(**s.to_wire()) for s in await store.transcript(engine, meeting.id)],
        channels=[ChannelView.of(c) for c in await store.channels(engine, meeting.id)],
        notes=[NotesView.of(n) for n in await outcomes.notes_of(engine, meeting.id)],
        action_items=[ActionItemView.of(a) for a in await outcomes.action_items_of(engine, meeting.id)],
        decisions=[DecisionView.of(d) for d in await outcomes.decisions_of(engine, meeting.id)],
    )


@op("meetings.delete", kind="mutate", scope="workspace")
async def meetings_delete(ctx: OpContext, args: MeetingArgs) -> MeetingDeleted:
    """Delete a meeting, its transcript, audio, notes, action items and decisions (tickets made stay)."""
    engine = await ctx.db()
    meeting = await store.get_meeting(engine, args.meeting_id)
    if meeting.created_by != ctx.principal.label and (ctx.role is None or ctx.role < Role.admin):
        raise Forbidden("a meeting is deleted by the person who recorded it or an admin")
    await store.delete_meeting(engine, meeting.id, (*OUTCOME_TABLES, meeting_voiceprints))
    files.remove_meeting_files(ctx.app, ctx.ws, meeting.id)
    await ctx.audit("meetings.delete", f"meeting:{meeting.id}", {"title": meeting.title})
    return MeetingDeleted(meeting_id=meeting.id)


@op("meetings.importTranscript", kind="mutate", scope="workspace")
async def meetings_import_transcript(ctx: OpContext, args: ImportArgs) -> TranscriptImported:
    """Replace the meeting's transcript with one in WebVTT or JSON segments. Overlapping or out-of-order segments
    are refused, naming the segment, and the stored transcript stays as it was."""
    segments = parse(args.content, args.format)
    kept = await store.replace_transcript(await ctx.db(), args.meeting_id, segments)
    await ctx.audit(
        "meetings.importTranscript", f"meeting:{args.meeting_id}", {"format": args.format, "segments": len(kept)}
    )
    speakers = list(dict.fromkeys(s.speaker for s in kept if s.speaker))
    return TranscriptImported(meeting_id=args.meeting_id, segments=len(kept), speakers=speakers)


@op("meetings.relabelSpeakers", kind="mutate", scope="workspace")
async def meetings_relabel_speakers(ctx: OpContext, args: RelabelArgs) -> SpeakersRelabelled:
    """Rename speakers in the transcript (``{"Person 1": "Ada"}``), all at once."""
    changed = await store.relabel_speakers(await ctx.db(), args.meeting_id, args.names)
    await ctx.audit("meetings.relabelSpeakers", f"meeting:{args.meeting_id}", {"segments": changed})
    return SpeakersRelabelled(meeting_id=args.meeting_id, segments=changed)


async def _check_member(ctx: OpContext, user_id: str) -> None:
    if await ctx.app.service(IdentityService).role_of(ctx.ws, user_id) is None:
        raise NotFound(f"user {user_id} is not a member of this workspace")


async def _profile_owner(ctx: OpContext, consented: bool, user_id: str | None) -> str:
    """Whose voice profile a call records: only with consent; the caller's own, or (admins) a member's."""
    if consented is not True:
        raise InvalidArgs("a voice profile is kept only with its member's consent: consented must be true",
                          field="consented")  # fmt: skip
    owner = user_id or ctx.principal.user_id
    if owner != ctx.principal.user_id:
        if ctx.role is None or ctx.role < Role.admin:
            raise Forbidden("only an admin records another member's voice profile")
        await _check_member(ctx, owner)
    return owner


async def _kept_profile(
    ctx: OpContext, action: str, user_id: str, label: str, embedding: list[float], how: dict[str, str]
) -> ProfileView:
    profile = await store.add_profile(
        await ctx.db(), user_id=user_id, label=label, embedding=embedding, by=ctx.principal.label,
        now=ctx.app.clock.now(),
    )  # fmt: skip
    details = {"userId": user_id, "consented": True, **how}
    await ctx.audit(action, f"voiceProfile:{profile.id}", details)
    return ProfileView.of(profile)


@op("meetings.profiles.create", kind="mutate", scope="workspace", people_only=True)
async def meetings_profiles_create(ctx: OpContext, args: ProfileCreateArgs) -> ProfileView:
    """Keep a member's voice profile (an embedding vector) for recognising them in meetings: only with their
    consent (``consented`` must be true). Yours, or (admins) another member's."""
    user_id = await _profile_owner(ctx, args.consented, args.user_id)
    return await _kept_profile(ctx, "meetings.profiles.create", user_id, args.label, args.embedding, {})


@op("meetings.profiles.fromSpeaker", kind="mutate", scope="workspace", people_only=True)
async def meetings_profiles_from_speaker(ctx: OpContext, args: ProfileFromSpeakerArgs) -> ProfileView:
    """Keep the voiceprint the server holds of a diarised speaker (``Person 2`` of the meeting's latest
    diarisation) as a member's voice profile, so later meetings name them: only with their consent
    (``consented`` must be true). Yours, or (admins) another member's. The voiceprint never leaves the server."""
    user_id = await _profile_owner(ctx, args.consented, args.user_id)
    engine = await ctx.db()
    embedding = await voiceprints.of_speaker(engine, args.meeting_id, args.speaker, args.diarization_id)
    label = args.label
    if label is None:
        user = await ctx.app.service(IdentityService).get_user(user_id)
        label = (user.display_name if user is not None else "")[:MAX_SPEAKER].strip() or args.speaker
    how = {"meetingId": args.meeting_id, "speaker": args.speaker}
    return await _kept_profile(ctx, "meetings.profiles.fromSpeaker", user_id, label, embedding, how)


@op("meetings.profiles.list", kind="read", scope="workspace")
async def meetings_profiles_list(ctx: OpContext, args: ProfileListArgs) -> ProfileList:
    """The workspace's voice profiles (their embeddings are not sent), or one member's. A profile of someone who is
    no longer a member is deleted rather than listed."""
    return ProfileList(profiles=[ProfileView.of(p) for p in await members_profiles(ctx.app, ctx.ws, args.user_id)])


@op("meetings.profiles.delete", kind="mutate", scope="workspace")
async def meetings_profiles_delete(ctx: OpContext, args: ProfileArgs) -> ProfileDeleted:
    """Delete a voice profile: your own, or (admins) anyone's."""
    engine = await ctx.db()
    profile = await store.get_profile(engine, args.profile_id)
    own = ctx.principal.agent_id is None and profile.user_id == ctx.principal.user_id
    if not own and (ctx.role is None or ctx.role < Role.admin):
        raise Forbidden("a voice profile is deleted by its member or an admin")
    await store.delete_profiles(engine, [profile.id])
    await ctx.audit("meetings.profiles.delete", f"voiceProfile:{profile.id}", {"userId": profile.user_id})
    return ProfileDeleted(profile_id=profile.id)


@op("meetings.actionItems.ticket", kind="mutate", scope="workspace")
async def meetings_action_items_ticket(ctx: OpContext, args: TicketArgs) -> ActionItemTicket:
    """Make an action item a ticket (once: an item that has its ticket answers it)."""
    engine = await ctx.db()
    item = await outcomes.action_item(engine, args.meeting_id, args.action_item_id)
    if item.ticket_id is not None:
        return ActionItemTicket(action_item_id=item.id, ticket_id=item.ticket_id, created=False)
    meeting = await store.get_meeting(engine, args.meeting_id)
    tickets = ctx.app.service(TicketService)
    title = item.text if len(item.text) <= TICKET_TITLE_MAX else item.text[: TICKET_TITLE_MAX - 1] + "…"
    extra = "".join(f"\n{k}: {v}" for k, v in (("Owner", item.owner), ("Due", item.due)) if v)
    description = f"From the meeting {meeting.title!r}: {item.text}{extra}"[:TICKET_DESCRIPTION_MAX]
    ticket = await tickets.create(ctx.ws, title=title, description=description, reporter=ctx.principal.label)
    linked = await outcomes.link_ticket(engine, item.id, ticket.id)
    if linked != ticket.id:  # another click linked its ticket first: this one is not kept
        await tickets.delete(ctx.ws, ticket.id)
        return ActionItemTicket(action_item_id=item.id, ticket_id=linked, created=False)
    await ctx.audit("meetings.actionItems.ticket", f"ticket:{ticket.id}", {"actionItemId": item.id})
    return ActionItemTicket(action_item_id=item.id, ticket_id=ticket.id, created=True)


MEETING_OPS: list[OpFunction] = [
    meetings_create, meetings_list, meetings_get, meetings_delete, meetings_import_transcript,
    meetings_relabel_speakers, meetings_profiles_create, meetings_profiles_from_speaker, meetings_profiles_list,
    meetings_profiles_delete,
    meetings_action_items_ticket,
]  # fmt: skip
