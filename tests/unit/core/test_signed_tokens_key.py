"""The key signed tokens are made with (relay, lane, export links) is made on first use, once, by whichever process
mints first: two processes that both found no key keep the first one stored, so a token either minted verifies
at both (before, the second overwrote the first, and the first's tokens failed)."""

from __future__ import annotations

from pathlib import Path

from hangar.core.clock import FakeClock
from hangar.core.secrets import SecretsFile
from hangar.core.signed_tokens import SignedTokens


class Raced(SecretsFile):
    """A process that read the key as missing just before another made it: its next read says none."""

    def get(self, key: str) -> str | None:
        return None


def test_two_processes_making_the_key_at_once_end_with_one(tmp_path: Path) -> None:
    clock = FakeClock()
    first = SignedTokens(SecretsFile(tmp_path / "secrets.json"), "servers.relayKey", clock, what="t", expired="e")
    second = SignedTokens(Raced(tmp_path / "secrets.json"), "servers.relayKey", clock, what="t", expired="e")
    token, _ = first.mint({"t": "relay:op:rig.exec"}, 60)
    late, _ = second.mint({"t": "relay:op:rig.exec"}, 60)
    for minted in (token, late):
        assert first.open(minted, ("t",))[0] == {"t": "relay:op:rig.exec"}
    assert SecretsFile(tmp_path / "secrets.json").get("servers.relayKey") is not None
