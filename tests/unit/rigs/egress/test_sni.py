from __future__ import annotations

import ssl

import pytest

from hangar.rigs.egress import sni


def client_hello(server_name: str | None) -> bytes:
    """A real ClientHello, produced by the ssl module through memory BIOs."""
    context = ssl.create_default_context()
    context.check_hostname = server_name is not None
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_hostname=server_name)
    with pytest.raises(ssl.SSLWantReadError):
        tls.do_handshake()
    return outgoing.read()


def test_reads_the_server_name() -> None:
    record = client_hello("files.pythonhosted.org")
    assert sni.record_length(record[:5]) == len(record)
    assert sni.server_name(record) == "files.pythonhosted.org"


def test_no_sni_gives_none() -> None:
    assert sni.server_name(client_hello(None)) is None


def test_non_tls_and_truncated_input_are_refused() -> None:
    with pytest.raises(sni.NotTls):
        sni.record_length(b"GET / HTTP/1.1\r\n")
    record = client_hello("pypi.org")
    with pytest.raises(sni.NotTls):
        sni.server_name(record[:60])
