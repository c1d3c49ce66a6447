"""The nftables ruleset loaded into a rig's network namespace: every packet leaving goes to the gate or dies.

The namespace has only loopback, with default routes pointing at it (so connects to any address reach the
output hook instead of failing early). NAT in the output hook redirects: DNS (any server, port 53) to the gate's
resolver; TCP 80/443 to the gate's one address (what its resolver hands out) to the HTTP and TLS checkers;
every other TCP connection and UDP datagram, IPv4 or IPv6, to deny listeners that log and drop them. A filter
chain drops whatever else (ICMP, other protocols) and counts it. The rig user has no capabilities in the
namespace (it belongs to the host's user namespace), so it cannot change these rules or open raw sockets.

The server door (``server_door_rules``) is a table of its own, loaded only while a command agent with an MCP
grant runs in the rig and deleted after: it sends the gate's address on the door port to the gate's door
listener. Its chain runs before the main one (lower priority number), and the first NAT a connection gets is
the one it keeps, so the catch-all redirect to the deny listener never sees those connections.
"""

from __future__ import annotations

from dataclasses import dataclass

GATE_ADDRESS = "198.18.0.1"  # benchmarking range (RFC 2544): never a real destination


@dataclass(frozen=True)
class GatePorts:
    dns: int = 53
    http: int = 980
    tls: int = 981
    deny_tcp: int = 982
    deny_udp: int = 983
    server_door: int = 984  # the way to the server's MCP endpoint, open only while an agent holds a grant

    def all(self) -> frozenset[int]:
        return frozenset((self.dns, self.http, self.tls, self.deny_tcp, self.deny_udp, self.server_door))


DEFAULT_PORTS = GatePorts()


def ruleset(ports: GatePorts = DEFAULT_PORTS, gate_address: str = GATE_ADDRESS) -> str:
    return f"""
table ip hangar_egress {{
  chain nat_out {{
    type nat hook output priority -100; policy accept;
    ip daddr 127.0.0.0/8 return
    meta l4proto {{ tcp, udp }} th dport 53 redirect to :{ports.dns}
    ip daddr {gate_address} tcp dport 80 redirect to :{ports.http}
    ip daddr {gate_address} tcp dport 443 redirect to :{ports.tls}
    meta l4proto tcp redirect to :{ports.deny_tcp}
    meta l4proto udp redirect to :{ports.deny_udp}
  }}
}}
table ip6 hangar_egress6 {{
  chain nat_out {{
    type nat hook output priority -100; policy accept;
    ip6 daddr ::1 return
    meta l4proto tcp redirect to :{ports.deny_tcp}
    meta l4proto udp redirect to :{ports.deny_udp}
  }}
}}
table inet hangar_filter {{
  counter dropped {{ }}
  chain out {{
    type filter hook output priority 0; policy drop;
    ct status dnat accept
    oif "lo" ip daddr 127.0.0.0/8 accept
    oif "lo" ip6 daddr ::1 accept
    counter name "dropped" drop
  }}
}}
"""


SERVER_DOOR_TABLE = "hangar_server_door"


def server_door_rules(ports: GatePorts = DEFAULT_PORTS, gate_address: str = GATE_ADDRESS) -> str:
    """The rules that open the server door: ``<gate address>:<door port>`` to the door listener."""
    return f"""
table ip {SERVER_DOOR_TABLE} {{
  chain nat_out {{
    type nat hook output priority -110; policy accept;
    ip daddr {gate_address} tcp dport {ports.server_door} redirect to :{ports.server_door}
  }}
}}
"""


def server_door_removal() -> str:
    return f"delete table ip {SERVER_DOOR_TABLE}\n"
