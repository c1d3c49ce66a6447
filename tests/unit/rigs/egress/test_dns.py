from __future__ import annotations

import socket
import struct

from hangar.rigs.egress import dns


def query(name: str, qtype: int = dns.QTYPE_A, qid: int = 0x1234) -> bytes:
    labels = b"".join(bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\x00"
    return struct.pack("!HHHHHH", qid, 0x0100, 1, 0, 0, 0) + labels + struct.pack("!HH", qtype, 1)


def allow(name: str) -> bool:
    return name == "pypi.org" or name.endswith(".github.com")


def test_allowed_name_answers_the_gate_address() -> None:
    reply, question = dns.respond(query("PyPI.org"), allow, "198.18.0.1")
    assert question is not None and question.name == "pypi.org"
    assert reply is not None
    qid, flags, qd, an = struct.unpack("!HHHH", reply[:8])
    assert (qid, flags & 0xF, qd, an) == (0x1234, 0, 1, 1)
    assert flags & 0x8000  # a response
    assert reply[-4:] == socket.inet_aton("198.18.0.1")


def test_unlisted_name_is_nxdomain_without_records() -> None:
    reply, _ = dns.respond(query("exfil-secret-data.attacker.example"), allow, "198.18.0.1")
    assert reply is not None
    flags, an = struct.unpack("!H", reply[2:4])[0], struct.unpack("!H", reply[6:8])[0]
    assert flags & 0xF == dns.RCODE_NXDOMAIN and an == 0


def test_aaaa_for_an_allowed_name_is_empty() -> None:
    reply, _ = dns.respond(query("api.github.com", dns.QTYPE_AAAA), allow, "198.18.0.1")
    assert reply is not None
    flags, an = struct.unpack("!H", reply[2:4])[0], struct.unpack("!H", reply[6:8])[0]
    assert flags & 0xF == 0 and an == 0


def test_garbage_gets_formerr_or_silence() -> None:
    assert dns.respond(b"\x00\x01", allow, "198.18.0.1") == (None, None)
    reply, question = dns.respond(b"\xab\xcd" + b"\x00" * 10, allow, "198.18.0.1")
    assert question is None and reply is not None
    assert struct.unpack("!H", reply[2:4])[0] & 0xF == dns.RCODE_FORMERR
    truncated = query("pypi.org")[:-3]
    assert dns.parse_query(truncated) is None


def test_responses_are_not_parsed_as_queries() -> None:
    packet = bytearray(query("pypi.org"))
    packet[2] |= 0x80
    assert dns.parse_query(bytes(packet)) is None
