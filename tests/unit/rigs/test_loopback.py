"""Each rig's own loopback address: in 127.128.0.0/9 (never 127.0.0.1 nor the host's 127.0.0.0/16), bindable
without configuration, and claimed host-wide so no two live rigs (of any process) share one."""

from __future__ import annotations

import ipaddress
import socket
import subprocess
import sys

import pytest

from hangar.errors import Unavailable
from hangar.rigs import loopback
from hangar.rigs.loopback import CLAIM_PREFIX, claim, is_rig_address


def test_claims_are_distinct_rig_addresses_that_bind_without_configuration() -> None:
    claims = [claim() for _ in range(20)]
    try:
        addresses = [c.address for c in claims]
        assert len(set(addresses)) == len(addresses)
        for address in addresses:
            ip = ipaddress.IPv4Address(address)
            assert is_rig_address(address) and ip not in ipaddress.IPv4Network("127.0.0.0/16")
            assert address.rsplit(".", 1)[1] not in ("0", "255")
        with socket.socket() as s:  # Linux routes all of 127.0.0.0/8 to lo
            s.bind((addresses[0], 0))
    finally:
        for c in claims:
            c.release()


def test_a_claim_holds_its_address_against_other_processes_until_released(monkeypatch: pytest.MonkeyPatch) -> None:
    held = claim()
    probe = (
        "import socket, sys\n"
        "s = socket.socket(socket.AF_UNIX)\n"
        "try:\n    s.bind('\\0' + sys.argv[1])\nexcept OSError:\n    print('taken')\nelse:\n    print('free')\n"
    )
    name = f"{CLAIM_PREFIX}{held.address}"  # abstract: the probe prefixes the NUL byte

    def another_process_sees() -> str:
        return subprocess.run([sys.executable, "-c", probe, name], capture_output=True, text=True, check=True).stdout

    assert another_process_sees().strip() == "taken"
    # the same address cannot be claimed twice: a clash draws again, and only clashes leave none
    monkeypatch.setattr(loopback, "_candidate", lambda: held.address)
    with pytest.raises(Unavailable) as err:
        claim()
    assert "no loopback address" in err.value.message
    held.release()
    held.release()  # safe twice
    assert another_process_sees().strip() == "free"
    again = claim()
    assert again.address == held.address
    again.release()


def test_only_the_rig_block_is_a_rig_address() -> None:
    assert is_rig_address("127.128.0.1") and is_rig_address("127.255.255.254")
    for other in ("127.0.0.1", "127.0.1.1", "127.127.255.255", "0.0.0.0", "10.0.0.1", "::1", "rig", ""):
        assert not is_rig_address(other)
