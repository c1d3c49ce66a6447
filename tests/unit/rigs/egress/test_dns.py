from __future__ import annotations

import random
import socket
import struct

import pytest
from dnslib import DNSRecord

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


def test_local_names_answer_the_rigs_loopback_ahead_of_the_allowlist() -> None:
    def local(name: str) -> bool:
        return name in {"app.test", "pypi.org"}

    reply, question = dns.respond(query("App.Test"), allow, "198.18.0.1", local=local)
    assert question is not None and reply is not None and reply[-4:] == socket.inet_aton("127.0.0.1")
    reply, _ = dns.respond(query("pypi.org"), allow, "198.18.0.1", local=local)
    assert reply is not None and reply[-4:] == socket.inet_aton("127.0.0.1")
    reply, _ = dns.respond(query("app.test", dns.QTYPE_AAAA), allow, "198.18.0.1", local=local)
    assert reply is not None and struct.unpack("!HHHH", reply[:8])[3] == 0  # no AAAA: the lanes' names are IPv4
    reply, _ = dns.respond(query("other.test"), allow, "198.18.0.1", local=local)
    assert reply is not None and struct.unpack("!H", reply[2:4])[0] & 0xF == dns.RCODE_NXDOMAIN


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


def header(qid: int = 0x1234, qdcount: int = 1) -> bytes:
    return struct.pack("!HHHHHH", qid, 0x0100, qdcount, 0, 0, 0)


def formerr(data: bytes) -> bool:
    reply, question = dns.respond(data, allow, "198.18.0.1")
    return question is None and reply is not None and struct.unpack("!H", reply[2:4])[0] & 0xF == dns.RCODE_FORMERR


@pytest.mark.parametrize(
    "data",
    [
        header(qdcount=0),  # no question at all
        header() + b"\xc0\x04" + struct.pack("!HH", 1, 1),  # the name points back into the header
        header() + b"\xc0\x0c" + struct.pack("!HH", 1, 1),  # ... or at itself
        header() + b"\xc0\xff" + struct.pack("!HH", 1, 1),  # ... or forwards
        header() + b"\x40" + b"a" * 64 + b"\x00" + struct.pack("!HH", 1, 1),  # a 64-byte label
        header() + (b"\x3f" + b"a" * 63) * 4 + b"\x00" + struct.pack("!HH", 1, 1),  # a 257-byte name
        header() + b"\x04py\xffi\x03org\x00" + struct.pack("!HH", 1, 1),  # a label that is not UTF-8
        header() + b"\x04pypi\x03org\x00\x00",  # cut inside the type and class
    ],
)
def test_hostile_questions_get_formerr(data: bytes) -> None:
    assert dns.parse_query(data) is None
    assert formerr(data)


def pointer_chain_query(length: int) -> bytes:
    """A query for pypi.org whose additional section holds a name behind ``length`` pointers, each aiming at the
    one before it (kept inside an earlier record's data, so every pointer points backwards as the format asks)."""
    head = struct.pack("!HHHHHH", 0x1234, 0x0100, 1, 0, 0, 2) + query("pypi.org")[12:]
    start = len(head) + 11  # the first record's owner name (1 byte) and fixed fields (10 bytes)
    chain, previous = b"\x00", start
    for _ in range(length):
        chain += struct.pack("!H", 0xC000 | previous)
        previous = start + len(chain) - 2
    first = b"\x00" + struct.pack("!HHIH", 65280, 1, 0, len(chain)) + chain
    second = struct.pack("!H", 0xC000 | previous) + struct.pack("!HHIH", 1, 1, 0, 4) + bytes(4)
    return head + first + second


def test_sections_after_the_question_are_never_parsed() -> None:
    data = pointer_chain_query(5000)
    with pytest.raises(RecursionError):  # why only the header and the question go through dnslib
        DNSRecord.parse(data)
    reply, question = dns.respond(data, allow, "198.18.0.1")
    assert question is not None and question.name == "pypi.org"
    assert reply is not None and reply[-4:] == socket.inet_aton("198.18.0.1")


def test_answer_echoes_the_question_as_asked_and_ignores_edns() -> None:
    opt = b"\x00" + struct.pack("!HHIH", 41, 1232, 0, 0)  # the OPT record dig and glibc add
    data = query("PyPI.Org")[:4] + struct.pack("!HHHH", 1, 0, 0, 1) + query("PyPI.Org")[12:] + opt
    reply, question = dns.respond(data, allow, "198.18.0.1")
    assert question is not None and question.name == "pypi.org" and reply is not None
    parsed = DNSRecord.parse(reply)
    assert str(parsed.q.qname) == "PyPI.Org." and str(parsed.a.rdata) == "198.18.0.1" and parsed.header.rd


def test_labels_holding_a_dot_are_refused() -> None:
    assert formerr(header() + b"\x08evil.com\x04pypi\x03org\x00" + struct.pack("!HH", 1, 1))


def test_other_bytes_are_escaped_in_the_name() -> None:
    question = dns.parse_query(header() + b"\x05ev\til\x04pypi\x03org\x00" + struct.pack("!HH", 1, 1))
    assert question is not None and question.name == "ev\\009il.pypi.org"


def test_random_mutations_never_raise() -> None:
    rng = random.Random(11)
    seed = query("api.github.com")
    for _ in range(3000):
        data = bytearray(seed)
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        data = data[: rng.randrange(len(data) + 1)] + rng.randbytes(rng.randrange(8))
        reply, _ = dns.respond(bytes(data), allow, "198.18.0.1")
        assert reply is None or DNSRecord.parse(reply).header.qr == 1
