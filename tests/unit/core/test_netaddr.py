"""Client addresses as limits count them: IPv4 as itself, IPv6 by its /64, IPv4-mapped IPv6 as the IPv4."""

from __future__ import annotations

from hangar.core.netaddr import address_key, in_networks, networks


def test_an_ipv6_address_counts_under_its_64() -> None:
    assert address_key("2001:db8:1:2::1") == address_key("2001:db8:1:2:ffff:ffff:ffff:ffff") == "2001:db8:1:2::/64"
    assert address_key("2001:db8:1:3::1") != address_key("2001:db8:1:2::1")
    assert address_key("[2001:db8:1:2::9]") == "2001:db8:1:2::/64"


def test_ipv4_counts_as_itself_mapped_or_not() -> None:
    assert address_key("203.0.113.7") == "203.0.113.7"
    assert address_key("::ffff:203.0.113.7") == "203.0.113.7"
    assert address_key("testclient") == "testclient"  # not an address: its own key


def test_networks_hold_addresses() -> None:
    trusted = networks(["10.0.0.0/8", "127.0.0.1/32", "fd00::/64"])
    assert in_networks("10.2.3.4", trusted) and in_networks("127.0.0.1", trusted) and in_networks("fd00::5", trusted)
    assert not in_networks("127.0.0.2", trusted) and not in_networks("fd00:0:0:1::5", trusted)
    assert not in_networks("nonsense", trusted)
