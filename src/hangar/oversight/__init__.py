"""The oversight part: a workspace's domain events, audit log, guardrails and settings, as ops.

The records themselves are the kernel's (``hangar.core``: events, audit, settings) and the RPC layer's (guardrails,
which the dispatcher enforces); this part only serves them to callers. Other parts need nothing from it."""

from __future__ import annotations

from hangar.oversight.part import OVERSIGHT_PART

__all__ = ["OVERSIGHT_PART"]
