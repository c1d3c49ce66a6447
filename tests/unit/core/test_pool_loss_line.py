"""SQLAlchemy's pool reports a connection it could not reset with a traceback; when PostgreSQL went away that is one
line (``hangar.core.dbfailures.PoolLossLine``), and any other failure keeps its traceback."""

from __future__ import annotations

import logging

import psycopg
import pytest

from hangar.core.dbfailures import PoolLossLine
from hangar.core.postgresql import postgresql_engine, postgresql_sync_engine


def _raised(exc: BaseException) -> BaseException:
    try:
        raise exc
    except BaseException as caught:
        return caught


async def test_a_lost_connection_is_one_line_and_another_failure_keeps_its_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    engine = postgresql_engine("postgresql://someone@/nowhere?host=/nonexistent")  # never connects
    try:
        pool_logger = engine.sync_engine.pool.logger
        caplog.set_level(logging.ERROR)
        lost = _raised(psycopg.OperationalError("the connection is lost"))
        pool_logger.error("Exception during reset or similar", exc_info=(type(lost), lost, lost.__traceback__))
        other = _raised(ValueError("a bug"))
        pool_logger.error("Exception during reset or similar", exc_info=(type(other), other, other.__traceback__))
    finally:
        await engine.dispose()
    first, second = caplog.records
    assert first.getMessage() == "Exception during reset or similar: the connection to PostgreSQL was lost"
    assert first.exc_info is None and "Traceback" not in caplog.text.split("\n")[0]
    assert second.exc_info is not None and "ValueError: a bug" in caplog.text


def test_the_filter_is_put_on_each_pool_class_once() -> None:
    engines = [postgresql_sync_engine("postgresql://someone@/nowhere?host=/nonexistent") for _ in range(2)]
    logger = logging.getLogger(engines[0].pool.logger.name)
    assert sum(isinstance(f, PoolLossLine) for f in logger.filters) == 1
    for engine in engines:
        engine.dispose()
