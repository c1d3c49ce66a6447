from __future__ import annotations

import os

# Tests never touch a user's real data directory.
os.environ.pop("HANGAR_DATA_DIR", None)
os.environ.pop("HANGAR_PUBLIC_URL", None)
os.environ.pop("SERVER_WEB_CLIENT_URL", None)
