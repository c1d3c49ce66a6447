"""Which environment variables the ``hangar`` commands read as settings, against the real command line: only
``HANGAR_``-prefixed names (and ``SERVER_WEB_CLIENT_URL``, the name the contract fixes). A variable another program
set for itself (``HOST``, ``PORT``, ``DATA_DIR``...) must not move where a command keeps its data or where the
sign-in link it prints (a one-time credential for the server owner) sends the browser."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterable
from pathlib import Path

from hangar.config import Settings
from hangar.default_ports import DEFAULT_PORT
from tests.integration.test_cli_ports import held_port, one_line
from tests.support.processes import HANGAR

CODE = r"#signin=[2-9A-HJ-NP-Z]{24}"


def clean_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """This process's environment without any setting of ours, the default data directory under ``tmp_path``."""
    ours = {k: v for k, v in os.environ.items() if not k.upper().startswith("HANGAR_") and k != "SERVER_WEB_CLIENT_URL"}
    return {**ours, "XDG_DATA_HOME": str(tmp_path / "xdg"), **extra}


def sign_in_link(env: dict[str, str], cwd: Path) -> str:
    done = subprocess.run(
        [HANGAR, "admin", "sign-in-link"], env=env, cwd=cwd, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def stray_variables(tmp_path: Path, names: Iterable[str]) -> dict[str, str]:
    """Settings' own names, unprefixed, in both cases (names are matched without regard to case), each with a value
    that would show if it were read: a host and port of elsewhere, another data directory, origins of another
    site, and for the other settings a value none of them accepts."""
    telling = {
        "host": "203.0.113.7",
        "port": "9999",
        "data_dir": str(tmp_path / "stray"),
        "public_url": "https://stray.example",
        "web_client_url": "https://stray.example",
        "rig_packs_dir": str(tmp_path / "stray-packs"),
        "web_dist": str(tmp_path / "stray-dist"),
    }
    assert set(telling) <= set(Settings.model_fields)
    values = {name: telling.get(name, "0") for name in names}
    return {**{k.upper(): v for k, v in values.items()}, **values}


def test_unprefixed_variables_are_not_settings(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    # The listener's address first (an origin, when set, would hide it), then the origins, then every setting.
    for names in (("host", "port", "data_dir"), ("public_url", "web_client_url"), Settings.model_fields):
        link = sign_in_link(clean_env(tmp_path, **stray_variables(tmp_path, names)), tmp_path / "work")
        assert re.fullmatch(rf"http://127\.0\.0\.1:{DEFAULT_PORT}/{CODE}", link), link
    assert (tmp_path / "xdg" / "hangar" / "server.db").is_file()  # the default data directory, not DATA_DIR's
    assert not (tmp_path / "stray").exists() and not (tmp_path / "work" / "0").exists()


def test_prefixed_variables_are_settings(tmp_path: Path) -> None:
    data = tmp_path / "data"
    env = clean_env(tmp_path, HANGAR_DATA_DIR=str(data), HANGAR_HOST="127.0.0.2", HANGAR_PORT="9001")
    assert re.fullmatch(rf"http://127\.0\.0\.2:9001/{CODE}", sign_in_link(env, tmp_path))
    assert (data / "server.db").is_file() and not (tmp_path / "xdg").exists()
    env |= {"HANGAR_PUBLIC_URL": "https://hangar.example.test"}
    assert re.fullmatch(rf"https://hangar\.example\.test/{CODE}", sign_in_link(env, tmp_path))
    # The web client's origin: the contract's name, and the house's (which wins when both are set).
    env |= {"SERVER_WEB_CLIENT_URL": "https://app.example.test"}
    assert re.fullmatch(rf"https://app\.example\.test/{CODE}", sign_in_link(env, tmp_path))
    env |= {"HANGAR_WEB_CLIENT_URL": "https://web.example.test"}
    assert re.fullmatch(rf"https://web\.example\.test/{CODE}", sign_in_link(env, tmp_path))


def test_serve_listens_where_its_prefixed_variables_say_never_the_unprefixed(tmp_path: Path) -> None:
    with held_port() as port, held_port() as site_port:
        env = clean_env(tmp_path, HANGAR_PORT=str(port), PORT="0", HOST="203.0.113.7", HANGAR_SITE_PORT="0")
        server = subprocess.run(
            [HANGAR, "serve", "--data-dir", str(tmp_path / "a"), "--no-prepare-pack"],
            env=env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        env = clean_env(tmp_path, HANGAR_PORT="0", HANGAR_SITE_PORT=str(site_port), SITE_PORT="0")
        site = subprocess.run(
            [HANGAR, "serve", "--data-dir", str(tmp_path / "b"), "--no-prepare-pack"],
            env=env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    assert one_line(server).startswith(f"the server cannot listen: port {port} on 127.0.0.1 is already in use")
    assert one_line(site).startswith(f"the website cannot listen: port {site_port} on 127.0.0.1 is already in use")
