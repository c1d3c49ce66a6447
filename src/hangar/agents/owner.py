"""Which process drives an agent run: ``<pid>:<start time>`` (see ``hangar.pipelines.procs``)."""

from __future__ import annotations

from hangar.pipelines.procs import is_alive, start_ticks, this_process

__all__ = ["is_alive", "start_ticks", "this_process"]
