"""The gate's DNS answers: allow-listed names resolve to the gate's one address; everything else NXDOMAIN.

No query ever goes upstream: the gate resolves real names itself only when a permitted connection leaves, so
a rig cannot exfiltrate data through lookups of names it invents. AAAA questions for allowed names get an empty
answer (the rig has no IPv6 egress), so clients fall back to IPv4.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Callable
from dataclasses import dataclass

QTYPE_A = 1
QTYPE_AAAA = 28
RCODE_FORMERR = 1
RCODE_NXDOMAIN = 3
RCODE_NOTIMP = 4
TTL = 30


@dataclass(frozen=True)
class Question:
    qid: int
    flags: int
    name: str
    qtype: int
    qclass: int
    raw: bytes  # the question section as received, echoed back


def parse_query(data: bytes) -> Question | None:
    """The first question of a query, or None when it is not a well-formed standard query."""
    if len(data) < 12:
        return None
    qid, flags, qdcount = struct.unpack("!HHH", data[:6])
    if flags & 0x8000 or qdcount < 1:
        return None
    pos, labels = 12, []
    while True:
        if pos >= len(data):
            return None
        length = data[pos]
        if length == 0:
            pos += 1
            break
        if length > 63 or pos + 1 + length > len(data):
            return None  # compression pointers never appear in a question we accept
        labels.append(data[pos + 1 : pos + 1 + length].decode("ascii", "replace").lower())
        pos += 1 + length
    if pos + 4 > len(data):
        return None
    qtype, qclass = struct.unpack("!HH", data[pos : pos + 4])
    return Question(qid, flags, ".".join(labels), qtype, qclass, data[12 : pos + 4])


def answer(question: Question, address: str | None, *, rcode: int = 0) -> bytes:
    """A response: an A record with ``address`` (None for no records) or an error ``rcode``."""
    flags = 0x8000 | (question.flags & 0x7900) | 0x0400 | 0x0080 | rcode  # QR, opcode+RD, AA, RA
    records = b""
    if address is not None and rcode == 0:
        rdata = socket.inet_aton(address)
        records = struct.pack("!HHHIH", 0xC00C, QTYPE_A, 1, TTL, len(rdata)) + rdata
    header = struct.pack("!HHHHHH", question.qid, flags, 1, 1 if records else 0, 0, 0)
    return header + question.raw + records


def respond(data: bytes, allowed: Callable[[str], bool], gate_address: str) -> tuple[bytes | None, Question | None]:
    """The reply to one query datagram (None to stay silent on garbage) and the parsed question."""
    question = parse_query(data)
    if question is None:
        if len(data) >= 12:
            qid = struct.unpack("!H", data[:2])[0]
            return struct.pack("!HHHHHH", qid, 0x8000 | RCODE_FORMERR, 0, 0, 0, 0), None
        return None, None
    if (question.flags >> 11) & 0xF:
        return answer(question, None, rcode=RCODE_NOTIMP), question
    if not allowed(question.name):
        return answer(question, None, rcode=RCODE_NXDOMAIN), question
    if question.qtype == QTYPE_A and question.qclass == 1:
        return answer(question, gate_address), question
    return answer(question, None), question
