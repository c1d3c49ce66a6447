"""Signed lane targets: HMAC-SHA256 with the server key from the secrets file, expiry, one lane per token."""

from __future__ import annotations

from pathlib import Path

import pytest

from hangar.core.clock import FakeClock
from hangar.core.secrets import SecretsFile
from hangar.errors import Forbidden
from hangar.rigs.lanes.signing import LANE_KEY, LaneSigner, target_of


@pytest.fixture
def signer(tmp_path: Path) -> tuple[LaneSigner, FakeClock, SecretsFile]:
    clock = FakeClock()
    secrets = SecretsFile(tmp_path / "secrets.json")
    return LaneSigner(secrets, clock), clock, secrets


def test_targets_name_lane_workspace_and_rig() -> None:
    assert target_of("files", "ws1", "r1") == "rig-files:ws1/r1"
    assert target_of("watch", "ws1", "r1") == "rig-watch:ws1/r1"


def test_a_minted_token_verifies_for_its_lane_and_rig(signer: tuple[LaneSigner, FakeClock, SecretsFile]) -> None:
    s, _clock, secrets = signer
    token, exp = s.mint("files", "ws1", "r1", "u1")
    grant = s.verify(token, "files", "r1")
    assert (grant.workspace_id, grant.rig_id, grant.user_id, grant.expires_at) == ("ws1", "r1", "u1", exp)
    key = secrets.get(LANE_KEY)
    assert key and key not in token  # the key lives in the secrets file only


def test_a_watch_or_terminal_token_does_not_authorize_files(signer: tuple[LaneSigner, FakeClock, SecretsFile]) -> None:
    s, _, _ = signer
    for lane in ("watch", "terminal"):
        token, _ = s.mint(lane, "ws1", "r1", "u1")  # type: ignore[arg-type]
        with pytest.raises(Forbidden, match="another lane"):
            s.verify(token, "files", "r1")


def test_another_rig_expiry_and_tampering_are_refused(signer: tuple[LaneSigner, FakeClock, SecretsFile]) -> None:
    s, clock, _ = signer
    token, _ = s.mint("files", "ws1", "r1", "u1", ttl_s=60)
    with pytest.raises(Forbidden, match="another rig"):
        s.verify(token, "files", "r2")
    head, body, mac = token.split(".")
    forged_body = body[:-2] + ("AA" if body[-2:] != "AA" else "BB")
    for bad in (f"{head}.{forged_body}.{mac}", f"{head}.{body}.{mac[:-1]}x", "v1.x", "", None, "v2.a.b"):
        with pytest.raises(Forbidden):
            s.verify(bad, "files", "r1")
    clock.advance(61)
    with pytest.raises(Forbidden, match="expired"):
        s.verify(token, "files", "r1")


def test_a_new_key_invalidates_old_tokens(tmp_path: Path) -> None:
    clock = FakeClock()
    s1 = LaneSigner(SecretsFile(tmp_path / "a.json"), clock)
    s2 = LaneSigner(SecretsFile(tmp_path / "b.json"), clock)
    token, _ = s1.mint("files", "ws1", "r1", "u1")
    with pytest.raises(Forbidden, match="does not verify"):
        s2.verify(token, "files", "r1")
