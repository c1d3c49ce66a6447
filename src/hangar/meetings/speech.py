"""The voiceprint work of the speaker bodies (``hangar.meetings.speakers``), apart so numpy is loaded when a
meeting's speakers are identified, not when the server starts: the confident matches of voiceprints against voice
profiles. (Diarisation itself runs in a process of its own: ``hangar.meetings.diarize_process``.)"""

from __future__ import annotations

from typing import Any

from hangar.meetings import store
from hangar.meetings.diarize import MATCH_THRESHOLD, VOICEPRINT_DIM, similarity

__all__ = ["VOICEPRINT_DIM", "matches"]


def matches(speakers: dict[str, list[float]], profiles: list[store.VoiceProfile]) -> list[dict[str, Any]]:
    """The confident matches, best first: each speaker and each person (a profile's user) at most once."""
    pairs = sorted(
        ((similarity(vec, p.embedding), speaker, p) for speaker, vec in speakers.items() for p in profiles),
        key=lambda t: -t[0],
    )
    taken_speakers: set[str] = set()
    taken_people: set[str] = set()
    out: list[dict[str, Any]] = []
    for score, speaker, profile in pairs:
        if score < MATCH_THRESHOLD:
            break
        if speaker in taken_speakers or profile.user_id in taken_people:
            continue
        taken_speakers.add(speaker)
        taken_people.add(profile.user_id)
        out.append({"speaker": speaker, "profileId": profile.id, "userId": profile.user_id, "label": profile.label,
                    "similarity": round(score, 3)})  # fmt: skip
    return out
