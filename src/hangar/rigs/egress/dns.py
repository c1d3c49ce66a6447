"""The gate's DNS answers: allow-listed names resolve to the gate's one address; the rig's local names (its
space's dev domains, served by lanes on its own loopback) resolve to ``127.0.0.1``; everything else NXDOMAIN.

No query ever goes upstream: the gate resolves real names itself only when a permitted connection leaves, so
a rig cannot exfiltrate data through lookups of names it invents. AAAA questions for allowed names get an empty
answer (the rig has no IPv6 egress), so clients fall back to IPv4.

The wire format is dnslib's, both ways. Only the header and the first question are read: an answer needs no
more, and sections left unread are parser surface a hostile rig cannot reach. On top of dnslib's own checks a
question is refused unless its name is written out in full (nothing precedes it but the header, so a
compression pointer there is never legitimate), every label fits in 63 bytes and the name in 255, and no label
holds a dot (dnslib's text form would run it into the next labels: the label ``evil.com`` under ``pypi.org``
would read as ``evil.com.pypi.org``). dnslib itself refuses labels that are not UTF-8; no resolver sends either
for a host name.

Why not ``DNSRecord.parse``: measured with dnslib 0.9.26, a name behind a few thousand backward compression
pointers in the additional section makes it raise ``RecursionError`` (not its ``DNSError``); the unit tests
keep that packet.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from dnslib import QTYPE, RCODE, RR, A, DNSError, DNSHeader, DNSQuestion, DNSRecord
from dnslib.label import DNSBuffer

QTYPE_A: int = QTYPE.A
QTYPE_AAAA: int = QTYPE.AAAA
CLASS_IN = 1
RCODE_FORMERR: int = RCODE.FORMERR
RCODE_NXDOMAIN: int = RCODE.NXDOMAIN
RCODE_NOTIMP: int = RCODE.NOTIMP
TTL = 30
HEADER_BYTES = 12
MAX_LABEL_BYTES = 63
MAX_NAME_BYTES = 255
LOOPBACK = "127.0.0.1"


@dataclass(frozen=True)
class Question:
    name: str  # lower case, no trailing dot; dnslib writes bytes outside printable ASCII as \DDD
    header: DNSHeader
    question: DNSQuestion

    @property
    def qtype(self) -> int:
        return int(self.question.qtype)

    @property
    def qclass(self) -> int:
        return int(self.question.qclass)


def _header(buffer: DNSBuffer) -> DNSHeader | None:
    try:
        return DNSHeader.parse(buffer)
    except DNSError:
        return None


def parse_query(data: bytes) -> Question | None:
    """The first question of a query, or None when it is not a well-formed standard query."""
    buffer = DNSBuffer(data)
    header = _header(buffer)
    if header is None or header.qr or header.q < 1:
        return None
    try:
        question = DNSQuestion.parse(buffer)
    except DNSError:
        return None
    labels: tuple[bytes, ...] = question.qname.label
    name_bytes = sum(1 + len(label) for label in labels) + 1
    if buffer.offset != HEADER_BYTES + name_bytes + 4:
        return None  # a compression pointer shortened the name
    if name_bytes > MAX_NAME_BYTES or any(len(label) > MAX_LABEL_BYTES or b"." in label for label in labels):
        return None
    return Question(str(question.qname).removesuffix(".").lower(), header, question)


def answer(question: Question, address: str | None, *, rcode: int = 0) -> bytes:
    """A response: an A record with ``address`` (None for no records) or an error ``rcode``.

    The question is echoed as asked (case included, for resolvers that randomise it); opcode and RD are
    copied, AA and RA set."""
    asked = question.header
    header = DNSHeader(id=asked.id, qr=1, opcode=asked.opcode, rd=asked.rd, aa=1, ra=1, rcode=rcode)
    reply = DNSRecord(header, q=question.question)
    if address is not None and rcode == 0:
        reply.add_answer(RR(question.question.qname, QTYPE_A, CLASS_IN, TTL, A(address)))
    return bytes(reply.pack())


def respond(
    data: bytes,
    allowed: Callable[[str], bool],
    gate_address: str,
    *,
    local: Callable[[str], bool] | None = None,
) -> tuple[bytes | None, Question | None]:
    """The reply to one query datagram (None to stay silent on garbage) and the parsed question. ``local`` names
    resolve to the rig's own loopback, ahead of the allowlist."""
    question = parse_query(data)
    if question is None:
        header = _header(DNSBuffer(data))
        if header is None:
            return None, None
        return bytes(DNSRecord(DNSHeader(id=header.id, qr=1, rcode=RCODE_FORMERR, rd=0)).pack()), None
    if question.header.opcode:
        return answer(question, None, rcode=RCODE_NOTIMP), question
    if local is not None and local(question.name):
        address = LOOPBACK
    elif allowed(question.name):
        address = gate_address
    else:
        return answer(question, None, rcode=RCODE_NXDOMAIN), question
    if question.qtype == QTYPE_A and question.qclass == CLASS_IN:
        return answer(question, address), question
    return answer(question, None), question
