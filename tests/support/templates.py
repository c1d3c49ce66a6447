"""Pipeline templates tests and benchmarks share."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

# A run that starts and ends at once: no body touches the host, so it needs no image pack.
HOP: dict[str, Any] = {
    "id": "hop",
    "name": "Hop",
    "steps": [
        {"id": "start", "kind": "trigger", "body": "pipeline.trigger"},
        {"id": "end", "kind": "terminal", "trigger": {"sourceStepIds": ["start"]}},
    ],
}


def written(template: dict[str, Any], folder: Path) -> Path:
    """``template`` as a JSON file in ``folder`` (what ``hangar pipeline run`` reads)."""
    path = folder / f"{template['id']}.json"
    path.write_text(json.dumps(template))
    return path
