from __future__ import annotations

import pytest

from hangar.cli.website import reference_sources
from hangar.site import reference


def test_a_broken_part_makes_its_section_say_so() -> None:
    def broken() -> list[object]:
        raise ImportError("a part failed to import")

    sources = reference.Sources(parts=broken)  # type: ignore[arg-type]
    for key in ("rpc-ops", "server-routes", "domain-events"):
        text = reference.generate(key, sources)
        assert "could not generate it (ImportError)" in text


def test_unknown_section_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="unknown generated section"):
        reference.generate("nope", reference.Sources())


def test_generated_sections_cover_every_op_and_body() -> None:
    from hangar.pipelines import spec_of_body
    from hangar.rpc.registry import spec_of
    from hangar.server.parts import all_parts, step_bodies

    sources = reference_sources()
    ops = reference.rpc_ops(sources)
    for part in all_parts():
        for fn in part.ops:
            assert f"`{spec_of(fn).name}`" in ops
    steps = reference.pipeline_steps(sources)
    for body in step_bodies(all_parts()):
        assert f"### `{spec_of_body(body).key}`" in steps
    cli = reference.cli(sources)
    for command in ("hangar serve", "hangar site", "hangar admin owner-token", "hangar pipeline run"):
        assert f"### `{command}`" in cli


def test_ops_show_their_result_shape() -> None:
    ops = reference.rpc_ops(reference_sources())
    row = next(line for line in ops.splitlines() if line.startswith("| `server.info` |"))
    assert "`pairingEnabled`: boolean" in row and "`publicUrl`: string or null" in row
    row = next(line for line in ops.splitlines() if line.startswith("| `worktrees.list` |"))
    assert "`worktrees`: list of {" in row and "`path?`: string or null" in row and "`createdAt`: timestamp" in row


def test_watches_and_domain_events_show_each_event_shape() -> None:
    sources = reference_sources()
    ops = reference.rpc_ops(sources)
    row = next(line for line in ops.splitlines() if line.startswith("| `rig.watch` |"))
    assert "`execResult` {`exitCode`: integer, `timedOut`: boolean" in row and "`egressGranted` {`hosts`" in row
    row = next(line for line in ops.splitlines() if line.startswith("| `spaces.watch` |"))
    assert "`type` one of `agents.reasoningFinished`" in row and "`workspace.messagePosted`" in row
    events = reference.domain_events(sources)
    row = next(line for line in events.splitlines() if line.startswith("| `identity.memberRoleChanged` |"))
    assert "`userId`: string, `oldRole`: string, `newRole`: string" in row
