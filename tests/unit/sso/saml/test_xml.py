"""The hardened parser as a second line: even past the DOCTYPE refusal it expands no entity and fetches nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from lxml import etree

from hangar.sso.errors import SsoError
from hangar.sso.saml.xml import _parser, parse_untrusted, text_of
from tests.unit.sso.saml.attacks import BILLION_LAUGHS


def test_parser_reads_no_external_entity_or_dtd(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET")
    dtd = tmp_path / "r.dtd"
    dtd.write_text(f'<!ENTITY leak SYSTEM "file://{secret}">')
    docs = [
        f'<!DOCTYPE r [<!ENTITY x SYSTEM "file://{secret}">]><r>&x;</r>'.encode(),
        f'<!DOCTYPE r SYSTEM "file://{dtd}"><r>&leak;</r>'.encode(),
        f'<!DOCTYPE r [<!ENTITY % p SYSTEM "file://{dtd}"> %p;]><r>&leak;</r>'.encode(),
    ]
    # Control: a permissive parser does read the file, so this test can tell the difference.
    permissive = etree.XMLParser(load_dtd=True, resolve_entities=True, no_network=False)
    assert b"TOP-SECRET" in etree.tostring(etree.fromstring(docs[0], permissive))
    for doc in docs:
        try:
            root = etree.fromstring(doc, _parser())
        except etree.XMLSyntaxError:
            continue
        assert b"TOP-SECRET" not in etree.tostring(root)


def test_parser_expands_no_internal_entity() -> None:
    root = etree.fromstring(BILLION_LAUGHS + b"<r>&lol4;</r>", _parser())
    assert root.text is None and [type(c) for c in root] == [etree._Entity]
    assert len(etree.tostring(root)) < 64


@pytest.mark.parametrize("doc", [BILLION_LAUGHS + b"<r>&lol4;</r>", b'<!DOCTYPE r SYSTEM "x.dtd"><r/>'])
def test_parse_untrusted_refuses_any_doctype(doc: bytes) -> None:
    with pytest.raises(SsoError) as caught:
        parse_untrusted(doc)
    assert caught.value.sso_code == "malformed"


def test_comments_join_the_text_around_them_and_mixed_content_is_refused() -> None:
    root = parse_untrusted(b"<r><a>user@corp.test<!-- x -->.evil.test</a><b>x<i/>y</b></r>")
    assert text_of(root[0], "a") == "user@corp.test.evil.test"
    with pytest.raises(SsoError) as caught:
        text_of(root[1], "b")
    assert caught.value.sso_code == "malformed"
