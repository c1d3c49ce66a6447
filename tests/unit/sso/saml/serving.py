"""Helpers for driving the SAML routes of the real server in tests."""

from __future__ import annotations

from typing import Any

import lxml.html

from hangar.core.context import AppContext
from hangar.sso.config import SamlConnection, SsoConfigStore


async def enable_saml(ctx: AppContext, metadata_xml: str, **fields: Any) -> SamlConnection:
    store = ctx.service(SsoConfigStore)
    record = await store.save("saml", {"enabled": True, "idpMetadataXml": metadata_xml, **fields})
    assert isinstance(record, SamlConnection)
    return record


def read_post_form(page: str) -> tuple[str, dict[str, str]]:
    """The action and fields of the auto-posting form an IdP sends the browser."""
    doc = lxml.html.fromstring(page)
    form = doc.forms[0]
    return str(form.action), {str(k): str(v) for k, v in form.form_values()}
