"""Which agent run answers a chat message, so that a message handled twice is answered once.

Inbound events are handled at least once (``claims.InboundSeen``): a handler that dies after dispatching the
message's agent run and before marking the event handled leaves it to the next holder of the connection, which
handles it again. The run that answers a message therefore has an id derived from the event (UUID 5 of the
workspace, the provider, the provider's event id and a try number), chosen before it is dispatched: the second
handling finds the run the first dispatched and answers with it (its events so far, then the rest as they come)
instead of dispatching another. A run closed because its driver died with the first handler (``ABANDONED``)
answered nothing: the next try's id is dispatched, up to ``ANSWER_TRIES`` runs for one message.
"""

from __future__ import annotations

import uuid

from hangar.agents import ABANDONED, AgentRunner

# Fixed for ever: the ids it derives must stay the same across versions and processes.
ANSWER_IDS = uuid.UUID("6f0c7d2e-3b8a-5c41-9e57-2d4a8b1c0f93")
ANSWER_TRIES = 3


def answer_run_id(workspace_id: str, provider: str, event_id: str, attempt: int) -> str:
    return str(uuid.uuid5(ANSWER_IDS, f"{workspace_id}/{provider}/{event_id}/{attempt}"))


async def answer_run(runner: AgentRunner, workspace_id: str, provider: str, event_id: str) -> str | None:
    """The id of the run to answer the event with: the first try's not recorded yet, or one whose run did not die
    with its driver, or the last; dispatching under an id recorded already is a ``Conflict``, and the caller then
    follows that run. An event without an id (none to tell its copies by) gets no chosen id."""
    if not event_id:
        return None
    for attempt in range(ANSWER_TRIES - 1):
        run_id = answer_run_id(workspace_id, provider, event_id, attempt)
        run = await runner.store.find(workspace_id, run_id)
        if run is None or run.error != ABANDONED:
            return run_id
    return answer_run_id(workspace_id, provider, event_id, ANSWER_TRIES - 1)
