"""The kernel's pieces for settings that name hosts and for callers whose naming opens this host too: host list
entries (with or without a port) checked and compared, loopback and this host's own addresses reached only with
``local`` and never at the server's own ports, and the ports the server's configuration names."""

from __future__ import annotations

import ipaddress

import pytest

from hangar.config import Settings
from hangar.core.addresses import (
    AddressRefused,
    host_entry,
    host_list,
    listed_host,
    permitted,
    refusal,
    server_ports,
    this_host,
)
from hangar.errors import InvalidArgs


@pytest.mark.parametrize(
    ("entry", "with_ports", "without"),
    [
        ("Ollama.LAN.", ("ollama.lan", None), ("ollama.lan", None)),
        ("127.0.0.1:11434", ("127.0.0.1", 11434), None),
        ("[::1]:11434", ("::1", 11434), None),
        ("[::1]", ("::1", None), ("::1", None)),
        ("::FFFF:a00:1", ("::ffff:a00:1", None), ("::ffff:a00:1", None)),
        ("gpu.lan:65535", ("gpu.lan", 65535), None),
        ("gpu.lan:1", ("gpu.lan", 1), None),
        ("gpu.lan:0", None, None),
        ("gpu.lan:65536", None, None),
        ("gpu.lan:", None, None),
        ("[gpu.lan]:80", None, None),
        ("a b", None, None),
        ("*.lan", None, None),
        ("http://gpu.lan", None, None),
    ],
)
def test_host_entries(entry: str, with_ports: tuple[str, int | None] | None, without: object) -> None:
    assert host_entry(entry, ports=True) == with_ports
    assert host_entry(entry, ports=False) == without


def test_a_host_list_at_its_limit_and_one_past() -> None:
    check = host_list("hosts", 3, ports=True)
    assert check(["A.lan", "a.lan", "[::1]:8000"]) == ["a.lan", "[::1]:8000"]
    assert check(["a.lan", "10.0.0.1:80", "[::1]:8000"]) == ["a.lan", "10.0.0.1:80", "[::1]:8000"]
    with pytest.raises(InvalidArgs) as err:
        check(["a.lan", "b.lan", "c.lan", "d.lan"])
    assert err.value.field == "hosts"
    assert (
        err.value.message == "hosts must be a list of at most 3 host names or IP addresses, each with an optional :port"
    )


def test_a_listed_host_at_its_port_or_at_any() -> None:
    entries = ["127.0.0.1:11434", "gpu.lan"]
    assert listed_host(entries, "127.0.0.1", 11434, ports=True)
    assert not listed_host(entries, "127.0.0.1", 11435, ports=True)
    assert listed_host(entries, "GPU.lan.", 1, ports=True)
    assert not listed_host(entries, "127.0.0.1", 11434)  # a list without ports has no such entry


def test_local_opens_loopback_and_this_hosts_addresses_only() -> None:
    for answer in ("127.0.0.1", "::1", "::ffff:127.0.0.1"):
        address = ipaddress.ip_address(answer)
        assert refusal(address, named=True) == "a loopback address"
        assert refusal(address, named=True, local=True) is None
        assert this_host(address) == "a loopback address"
    for answer, why in (("169.254.169.254", "the cloud metadata service"), ("fe80::1", "a link-local address"),
                        ("0.0.0.0", "an unspecified address"), ("::7f00:1", "a reserved address")):  # fmt: skip
        assert refusal(ipaddress.ip_address(answer), named=True, local=True) == why
        assert this_host(ipaddress.ip_address(answer)) is None
    assert this_host(ipaddress.ip_address("140.82.112.3")) is None


def test_this_hosts_own_address_with_local(monkeypatch: pytest.MonkeyPatch) -> None:
    own = ipaddress.ip_address("10.1.2.3")
    monkeypatch.setattr("hangar.core.addresses.is_host_own", lambda a: a == own)
    assert refusal(own, named=True) == "an address of this host"
    assert refusal(own, named=True, local=True) is None
    assert this_host(own) == "an address of this host"


def test_local_when_named_never_at_the_servers_own_ports() -> None:
    rules = {"who": "X", "namer": "Y", "local": True, "own_ports": frozenset({8420})}
    assert permitted("localhost", ["127.0.0.1", "::1"], named=True, port=11434, **rules) == ["127.0.0.1", "::1"]
    with pytest.raises(AddressRefused) as err:
        permitted("localhost", ["127.0.0.1"], named=False, port=11434, **rules)
    assert err.value.reason == "localhost resolves to 127.0.0.1, a loopback address, which X reach only when Y"
    with pytest.raises(AddressRefused) as err:
        permitted("127.0.0.1", ["127.0.0.1"], named=True, port=8420, **rules)
    assert (
        err.value.reason
        == "127.0.0.1 is a loopback address at port 8420, where this server listens, which X never reach"
    )
    # Another machine's address at that port is not this server.
    assert permitted("gpu.lan", ["10.0.0.5"], named=True, port=8420, **rules) == ["10.0.0.5"]


def test_the_ports_the_servers_configuration_names() -> None:
    settings = Settings(port=8420, site_port=8421, public_url="https://hangar.example.test:8443",
                        web_client_url="http://127.0.0.1:5173", site_url="https://docs.example.test")  # fmt: skip
    assert server_ports(settings) == {8420, 8421, 8443, 5173}
    assert server_ports(Settings(port=9000, site_port=None)) == {9000}
