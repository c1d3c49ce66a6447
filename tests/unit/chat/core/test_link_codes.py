"""Link codes on the injected clock: shape, lifetime, one use, one per member, identical failures, and the limit
on each chat account's wrong codes."""

from __future__ import annotations

from datetime import timedelta

import pytest

from hangar.chat.links import CODE_ALPHABET, LINK_FAILURES, LinkCodes
from hangar.core.clock import FakeClock
from hangar.httpkit.ratelimit import TooManyAttempts

ME = ("T1", "U1")  # the chat account trying codes


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
    assert codes.redeem("ws", "chatprovider", f" {code.lower()} ", ME) == "u1"
    assert codes.redeem("ws", "chatprovider", code, ME) is None


def test_a_code_expires_after_fifteen_minutes() -> None:
    clock = FakeClock()
    codes = LinkCodes(clock)
    code, _ = codes.mint("ws", "chatprovider", "u1")
    _advance(clock, timedelta(minutes=14, seconds=59))
    kept, _ = codes.mint("ws", "chatprovider", "u2")
    _advance(clock, timedelta(seconds=1))
    assert codes.redeem("ws", "chatprovider", code, ME) is None
    assert codes.redeem("ws", "chatprovider", kept, ME) == "u2"


def test_minting_again_invalidates_the_members_previous_code_only() -> None:
    codes = LinkCodes(FakeClock())
    first, _ = codes.mint("ws", "chatprovider", "u1")
    other, _ = codes.mint("ws", "chatprovider", "u2")
    elsewhere, _ = codes.mint("ws2", "chatprovider", "u1")
    second, _ = codes.mint("ws", "chatprovider", "u1")
    assert codes.redeem("ws", "chatprovider", first, ME) is None
    assert codes.redeem("ws", "chatprovider", second, ME) == "u1"
    assert codes.redeem("ws", "chatprovider", other, ME) == "u2"
    assert codes.redeem("ws2", "chatprovider", elsewhere, ME) == "u1"


def test_foreign_workspace_and_wrong_provider_fail_like_unknown_and_leave_the_code_usable() -> None:
    codes = LinkCodes(FakeClock())
    code, _ = codes.mint("ws", "chatprovider", "u1")
    answers = {
        codes.redeem("other-ws", "chatprovider", code, ME),
        codes.redeem("ws", "otherprovider", code, ME),
        codes.redeem("ws", "chatprovider", "ZZZZZZ" if code != "ZZZZZZ" else "YYYYYY", ME),
        codes.redeem("ws", "chatprovider", "", ME),
    }
    assert answers == {None}
    assert codes.redeem("ws", "chatprovider", code, ME) == "u1"


def test_a_chat_account_may_fail_five_times_then_waits_and_a_good_code_costs_nothing() -> None:
    clock = FakeClock()
    codes = LinkCodes(clock)
    code, _ = codes.mint("ws", "chatprovider", "u1")
    assert LINK_FAILURES.burst == 5
    # Good codes give their attempt back: any number of them.
    for n in range(8):
        good, _ = codes.mint("ws", "chatprovider", f"g{n}")
        assert codes.redeem("ws", "chatprovider", good, ME) == f"g{n}"
    # Five wrong codes are answered (as wrong); the sixth attempt is refused unread, even with the right code.
    for _ in range(5):
        assert codes.redeem("ws", "chatprovider", "ZZZZZZ" if code != "ZZZZZZ" else "YYYYYY", ME) is None
    with pytest.raises(TooManyAttempts) as refused:
        codes.redeem("ws", "chatprovider", code, ME)
    assert refused.value.retry == 180 and "wrong link codes" in refused.value.message
    # Another chat account, and the same account in another workspace, are not held to it.
    assert codes.redeem("ws", "chatprovider", code, ("T1", "U2")) == "u1"
    other, _ = codes.mint("ws2", "chatprovider", "u1")
    assert codes.redeem("ws2", "chatprovider", other, ME) == "u1"
    # Three minutes later the account has one more attempt.
    clock.advance(179)
    with pytest.raises(TooManyAttempts):
        codes.redeem("ws", "chatprovider", "ZZZZZZ", ME)
    clock.advance(2)
    again, _ = codes.mint("ws", "chatprovider", "u3")
    assert codes.redeem("ws", "chatprovider", again, ME) == "u3"
