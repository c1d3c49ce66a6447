from __future__ import annotations

import os
from pathlib import Path

# Tests never touch a user's real data directory.
os.environ.pop("HANGAR_DATA_DIR", None)
os.environ.pop("HANGAR_PUBLIC_URL", None)
os.environ.pop("SERVER_WEB_CLIENT_URL", None)
# Every server a test starts (in this process or as a child) boots rigs, confined shell steps and command
# agents from one image pack per machine, built once.
os.environ["HANGAR_RIG_PACKS_DIR"] = os.environ.get(
    "HANGAR_TEST_PACKS", str(Path.home() / ".cache" / "hangar-test" / "packs")
)
