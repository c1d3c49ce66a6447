"""Serving the SAML routes from the real server in tests: the server's own parts, plus (until the SSO part is
in the server's parts list) a part composed from the SSO package's public pieces."""

from __future__ import annotations

from typing import Any

import httpx
import lxml.html

from hangar.core.context import AppContext
from hangar.core.part import Part
from hangar.server.parts import all_parts
from hangar.sso import config as sso_config
from hangar.sso.config import SamlConnection, SsoConfigStore
from hangar.sso.handoff import handoff_routes
from hangar.sso.saml.routes import SAML_ROUTES


async def _start(ctx: AppContext) -> None:
    store = SsoConfigStore(ctx.dbs.server, ctx.secrets, ctx.clock)
    await store.load()
    ctx.provide(store)


def saml_parts() -> list[Part]:
    parts = all_parts()
    served = {getattr(r, "path", None) for p in parts for r in p.routes}
    if "/saml/acs" in served:
        return parts
    return [
        *parts,
        Part(
            name="sso-saml-test",
            routes=[*SAML_ROUTES, *handoff_routes()],
            migrations=[sso_config.MIGRATIONS],
            start=_start,
        ),
    ]


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


async def post_form(client: httpx.AsyncClient, url: str, fields: dict[str, str], **headers: str) -> httpx.Response:
    return await client.post(url, data=fields, headers=headers)
