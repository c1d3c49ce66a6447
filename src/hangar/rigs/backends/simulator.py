"""Why a simulator rig (``sim_use``, backend ``mobile-simulator``) cannot run here, in one message naming what it
needs: the spec runs them only on a macOS server with the platform toolchain, an installed simulator runtime and
the checksum-pinned automation bridge. On any other host that is the answer for good, and it says what to use
instead; on macOS the backend is not built yet, which it says too."""

from __future__ import annotations

import platform
import sys

NEEDS = (
    "a macOS server with the platform toolchain (Xcode and its simctl), an installed simulator runtime and the "
    "pinned automation bridge (Settings, Server, Rigs)"
)


def simulator_refusal(what: str) -> str:
    if sys.platform != "darwin":
        host = platform.system() or sys.platform
        return (
            f"{what}: simulator rigs (the mobile-simulator backend) run only on {NEEDS}; this server runs on {host}, "
            "where they cannot run. "
            "For Android, open a mobile rig (surface mobile) instead"
        )
    return f"{what}: simulator rigs need {NEEDS}; the mobile-simulator backend is not built yet (planned)"
