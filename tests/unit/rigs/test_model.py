"""The limits table and the surface/engine rules of the spec, row by row."""

from __future__ import annotations

import pytest

from hangar.errors import InvalidArgs
from hangar.rigs.model import (
    DEFAULT_MEMORY_BUDGET_MB,
    LIMITS,
    CloseReason,
    Display,
    Phase,
    Surface,
    limits_for,
    parse_surface,
    resolve_engine,
)


def test_limits_table_matches_the_spec() -> None:
    t = LIMITS[Surface.terminal]
    assert (t.memory_mb, t.vcpus, t.ttl_s, t.idle_window_s, t.boot_display) == (512, 2, 8 * 3600, 45 * 60, None)
    b = LIMITS[Surface.browser]
    assert (b.memory_mb, b.vcpus, b.ttl_s, b.idle_window_s, b.boot_display) == (
        2048,
        2,
        2 * 3600,
        15 * 60,
        Display(1280, 800),
    )
    c = LIMITS[Surface.computer]
    assert (c.memory_mb, c.vcpus, c.ttl_s, c.idle_window_s, str(c.boot_display)) == (
        4096,
        4,
        7200,
        900,
        "1280x800",
    )
    m = LIMITS[Surface.mobile]
    assert (m.memory_mb, m.vcpus, m.ttl_s, m.idle_window_s, str(m.boot_display)) == (4096, 4, 7200, 900, "1080x1920")
    assert t.reap_after_s == 2 * 45 * 60
    assert DEFAULT_MEMORY_BUDGET_MB == 12 * 1024


@pytest.mark.parametrize(("engine", "mb"), [("engine-a", 2048), ("engine-b", 2560), ("engine-c", 2560)])
def test_browser_memory_depends_on_engine(engine: str, mb: int) -> None:
    assert limits_for(Surface.browser, engine).memory_mb == mb


def test_phase_and_reason_wire_names() -> None:
    assert [p.value for p in Phase] == ["provisioning", "ready", "parked", "closing", "closed", "failed"]
    assert [r.value for r in CloseReason] == [
        "requested",
        "idleTimeout",
        "ttlExpired",
        "conversationEnded",
        "workspaceGone",
        "serverShutdown",
        "backendFailure",
    ]


def test_unknown_surface_is_refused_naming_the_field() -> None:
    with pytest.raises(InvalidArgs) as e:
        parse_surface("desktop")
    assert e.value.field == "surface"
    assert "terminal" in e.value.message


def test_engines_only_where_a_surface_has_them() -> None:
    assert resolve_engine(Surface.browser, None) == "engine-a"
    assert resolve_engine(Surface.browser, "engine-c") == "engine-c"
    assert resolve_engine(Surface.terminal, None) is None
    with pytest.raises(InvalidArgs) as e:
        resolve_engine(Surface.browser, "engine-z")
    assert e.value.field == "engine" and "engine-z" in e.value.message
    with pytest.raises(InvalidArgs) as e:
        resolve_engine(Surface.terminal, "engine-a")
    assert e.value.field == "engine"
