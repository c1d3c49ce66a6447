"""Link codes on the injected clock: shape, lifetime, one use, one per member, identical failures."""

from __future__ import annotations

from datetime import timedelta

from hangar.chat.links import CODE_ALPHABET, LinkCodes
from hangar.core.clock import FakeClock


def _advance(clock: FakeClock, delta: timedelta) -> None:
    clock._now += delta  # the wall clock only: codes expire by ``now``


def test_a_code_has_six_characters_of_the_alphabet_and_lasts_fifteen_minutes() -> None:
    clock = FakeClock()
    codes = LinkCodes(clock)
    for _ in range(50):
        code, expires = codes.mint("ws", "chatprovider", "u1")
        assert len(code) == 6 and set(code) <= set(CODE_ALPHABET)
        assert expires == clock.now() + timedelta(minutes=15)
    assert "0" not in CODE_ALPHABET and "O" not in CODE_ALPHABET and "1" not in CODE_ALPHABET


def test_a_code_serves_once_case_insensitively() -> None:
    codes = LinkCodes(FakeClock())
    code, _ = codes.mint("ws", "chatprovider", "u1")
    assert codes.redeem("ws", "chatprovider", f" {code.lower()} ") == "u1"
    assert codes.redeem("ws", "chatprovider", code) is None


def test_a_code_expires_after_fifteen_minutes() -> None:
    clock = FakeClock()
    codes = LinkCodes(clock)
    code, _ = codes.mint("ws", "chatprovider", "u1")
    _advance(clock, timedelta(minutes=14, seconds=59))
    kept, _ = codes.mint("ws", "chatprovider", "u2")
    _advance(clock, timedelta(seconds=1))
    assert codes.redeem("ws", "chatprovider", code) is None
    assert codes.redeem("ws", "chatprovider", kept) == "u2"


def test_minting_again_invalidates_the_members_previous_code_only() -> None:
    codes = LinkCodes(FakeClock())
    first, _ = codes.mint("ws", "chatprovider", "u1")
    other, _ = codes.mint("ws", "chatprovider", "u2")
    elsewhere, _ = codes.mint("ws2", "chatprovider", "u1")
    second, _ = codes.mint("ws", "chatprovider", "u1")
    assert codes.redeem("ws", "chatprovider", first) is None
    assert codes.redeem("ws", "chatprovider", second) == "u1"
    assert codes.redeem("ws", "chatprovider", other) == "u2"
    assert codes.redeem("ws2", "chatprovider", elsewhere) == "u1"


def test_foreign_workspace_and_wrong_provider_fail_like_unknown_and_leave_the_code_usable() -> None:
    codes = LinkCodes(FakeClock())
    code, _ = codes.mint("ws", "chatprovider", "u1")
    answers = {
        codes.redeem("other-ws", "chatprovider", code),
        codes.redeem("ws", "otherprovider", code),
        codes.redeem("ws", "chatprovider", "ZZZZZZ" if code != "ZZZZZZ" else "YYYYYY"),
        codes.redeem("ws", "chatprovider", ""),
    }
    assert answers == {None}
    assert codes.redeem("ws", "chatprovider", code) == "u1"
