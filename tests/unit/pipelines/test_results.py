"""The pipelines ops declare their results; the watch's first reply is the run or the run list."""

from __future__ import annotations

import pytest

from hangar.pipelines.ops import PIPELINE_OPS
from hangar.pipelines.results import RunList, RunWatchReply
from hangar.rpc.registry import spec_of


@pytest.mark.parametrize("fn", PIPELINE_OPS, ids=lambda fn: spec_of(fn).name)
def test_every_op_declares_its_result(fn: object) -> None:
    spec = spec_of(fn)
    assert spec.result is not None and spec.result_schema is not None


def test_watch_first_reply_is_the_run_list_or_the_run() -> None:
    spec = spec_of(next(fn for fn in PIPELINE_OPS if spec_of(fn).name == "pipelines.runs.watch"))
    assert spec.result_to_wire(RunWatchReply(RunList(runs=[]))) == {"runs": []}
    schema = spec.result_schema
    assert schema is not None
    refs = {alt["$ref"].rsplit("/", 1)[-1] for alt in schema["anyOf"]}
    assert refs == {"RunDetail", "RunList"}
