"""Engine C's session when its last page closed: classic WebDriver ends the session a moment later, and until then
answers "unknown error". The window list and a new window both ride that out, up to ``ENDING_S``, and a session the
driver then says is gone is started again on the home page. The driver here is a script of answers."""

from __future__ import annotations

from typing import Any

import pytest

from hangar.errors import HangarError
from hangar.rigs.engines.w3c.errors import w3c_error
from hangar.rigs.engines.webkit import engine as webkit
from hangar.rigs.engines.webkit.engine import WebKitSession


class ScriptedDriver:
    """Answers each command from its script, in order: a value, or a W3C error code to raise."""

    def __init__(self, script: dict[str, list[Any]]) -> None:
        self.script = script
        self.asked: list[str] = []
        self.started = 0

    async def command(self, method: str, path: str, body: object = None, timeout_s: float = 30.0) -> Any:
        self.asked.append(f"{method} {path}")
        answer = self.script[f"{method} {path}"].pop(0)
        if isinstance(answer, str) and answer.startswith("error:"):
            raise w3c_error(answer.removeprefix("error:"), "", path.lstrip("/"))
        return answer

    async def start(self, capabilities: dict[str, Any], timeout_s: float = 60.0) -> dict[str, Any]:
        self.started += 1
        return {}


def session_on(driver: ScriptedDriver) -> WebKitSession:
    session = WebKitSession(driver, "w1", {})  # type: ignore[arg-type]  # the scripted driver stands in

    async def navigate(url: str) -> None:
        driver.asked.append(f"navigate {url}")

    session.navigate = navigate  # type: ignore[method-assign,assignment]
    return session


@pytest.fixture(autouse=True)
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(webkit, "NAVIGATION_POLL_S", 0.001)


async def test_a_new_window_asked_while_the_driver_ends_the_session_starts_a_new_session() -> None:
    driver = ScriptedDriver({
        "POST /window/new": ["error:unknown error", "error:unknown error", "error:invalid session id"],
        "GET /window": ["w2"],
    })  # fmt: skip
    assert await session_on(driver)._open_home() == "w2"
    assert driver.started == 1
    assert driver.asked.count("POST /window/new") == 3 and "POST /window" not in driver.asked


async def test_a_new_window_in_a_live_session_is_switched_to() -> None:
    driver = ScriptedDriver({"POST /window/new": [{"handle": "w2"}], "POST /window": [None], "GET /window": ["w2"]})
    assert await session_on(driver)._open_home() == "w2"
    assert driver.started == 0
    assert driver.asked == ["POST /window/new", "POST /window", "navigate about:blank", "GET /window"]


async def test_the_ending_is_waited_for_only_so_long(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(webkit, "ENDING_S", 0.05)
    driver = ScriptedDriver({"POST /window/new": ["error:unknown error"] * 10_000})
    with pytest.raises(HangarError) as refused:
        await session_on(driver)._open_home()
    assert refused.value.detail_code == "unknown_error" and driver.started == 0


async def test_another_error_is_not_taken_for_the_ending() -> None:
    driver = ScriptedDriver({"POST /window/new": ["error:no such window", {"handle": "never asked"}]})
    with pytest.raises(HangarError) as refused:
        await session_on(driver)._open_home()
    assert refused.value.detail_code == "no_such_window" and driver.asked == ["POST /window/new"]


async def test_the_window_list_of_an_ended_session_is_empty() -> None:
    driver = ScriptedDriver({"GET /window/handles": ["error:unknown error", "error:invalid session id"]})
    session = session_on(driver)
    await session._discover_pages()
    assert session._ended and driver.asked == ["GET /window/handles"] * 2
