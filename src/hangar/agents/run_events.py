"""An agent run's persisted events, in order: what ``runs.events`` answers and what a worker taking a run over reads
to close the turn the dead driver left open."""

from __future__ import annotations

from hangar.agents import events as ev
from hangar.agents.runs import RunStore
from hangar.core.context import AppContext
from hangar.core.event_types import StoredEvent

PAGE = 1000


async def stored_run_events(app: AppContext, store: RunStore, workspace_id: str, run_id: str) -> list[StoredEvent]:
    """Read in pages from the run's first event up to its ``runFinished``."""
    run = await store.get(workspace_id, run_id)
    after = (run.first_seq - 1) if run.first_seq else 0
    found: list[StoredEvent] = []
    while True:
        page = await app.bus.replay(workspace_id, after_seq=after, types=ev.RUN_EVENT_TYPES, limit=PAGE)
        for e in page:
            if e.payload.get("runId") == run_id:
                found.append(e)
                if e.type == ev.RunFinished.type:
                    return found
        if len(page) < PAGE:
            return found
        after = page[-1].seq
