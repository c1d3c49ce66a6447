"""``hangar serve``'s log: Hangar's lines from ``$HANGAR_LOG_LEVEL`` up (info by default), one handler however often
it is set up, and a level it does not know refused naming the ones it does."""

from __future__ import annotations

import logging

import pytest

from hangar.server.logs import configure_server_log, log_level


def test_the_level_is_info_unless_named_and_an_unknown_one_is_refused() -> None:
    assert log_level(None) == logging.INFO
    assert log_level(" Warning ") == logging.WARNING
    assert log_level("debug") == logging.DEBUG
    with pytest.raises(ValueError, match="HANGAR_LOG_LEVEL must be one of debug, info, warning, error, not 'loud'"):
        log_level("loud")


def test_hangar_lines_reach_stderr_once_with_a_utc_time(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    logger = logging.getLogger("hangar")
    before_level, before_handlers = logger.level, list(logger.handlers)
    monkeypatch.setenv("HANGAR_LOG_LEVEL", "info")
    try:
        configure_server_log()
        configure_server_log()  # a second call adds no second handler
        logging.getLogger("hangar.rigs.confinement.waits").info("agentRun:r1 waits: starting the enclosure")
        logging.getLogger("hangar.rigs.confinement.waits").debug("not at this level")
        lines = capsys.readouterr().err.splitlines()
        assert len(lines) == 1
        stamp, level, name, said = lines[0].split(" ", 3)
        assert stamp.endswith("Z") and "T" in stamp
        assert (level, name, said) == (
            "INFO",
            "hangar.rigs.confinement.waits:",
            "agentRun:r1 waits: starting the enclosure",
        )
    finally:
        logger.handlers[:] = before_handlers
        logger.setLevel(before_level)
