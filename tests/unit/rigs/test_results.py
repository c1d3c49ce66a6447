"""The rig ops declare their results; port rows keep their wire form."""

from __future__ import annotations

import pytest

from hangar.rigs.live.ports import Forward, PortForwards
from hangar.rigs.loopback import claim, is_rig_address
from hangar.rigs.ops import RIG_OPS
from hangar.rigs.results import DisplaySize, RigPorts
from hangar.rpc.registry import spec_of


@pytest.mark.parametrize("fn", RIG_OPS, ids=lambda fn: spec_of(fn).name)
def test_every_op_declares_its_result(fn: object) -> None:
    spec = spec_of(fn)
    assert spec.result is not None and spec.result_schema is not None


def test_port_rows_list_forwarded_ports_then_the_rest() -> None:
    ports = PortForwards(limit=1)
    ports._claim = claim()  # what the first forward claims
    address = ports.address
    assert address is not None and is_rig_address(address)
    ports.forwards[8080] = Forward(8080, 18080, 28080)
    ports.overflow.add(3000)
    spec = spec_of(next(fn for fn in RIG_OPS if spec_of(fn).name == "rig.ports"))
    try:
        assert spec.result_to_wire(RigPorts(rig_id="r1", limit=ports.limit, ports=ports.rows())) == {
            "rigId": "r1",
            "limit": 1,
            "ports": [
                {"guestPort": 8080, "forwarded": True, "hostAddress": address, "hostPort": 18080, "lanPort": 28080},
                {"guestPort": 3000, "forwarded": False, "hostAddress": None, "hostPort": None, "lanPort": None},
            ],
        }
    finally:
        ports._claim.release()


def test_rig_rows_carry_the_display_as_width_and_height() -> None:
    assert DisplaySize.parse("1280x800") == DisplaySize(width=1280, height=800)
    assert DisplaySize.parse(None) is None and DisplaySize.parse("") is None
    assert DisplaySize(width=1280, height=800).model_dump(by_alias=True) == {"width": 1280, "height": 800}
