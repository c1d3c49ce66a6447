"""Helpers for driving the SAML routes of the real server in tests."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import lxml.html
from lxml import etree

from hangar.core.context import AppContext
from hangar.sso.config import SamlConnection, SsoConfigStore
from hangar.sso.saml import inflate_bounded
from tests.unit.sso.saml.kit import Spec, b64, signed_response


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


def request_id_of(login: httpx.Response) -> str:
    """The ID of the ``AuthnRequest`` a ``/saml/login`` redirect carries."""
    assert login.status_code == 302, login.text[:300]
    params = parse_qs(urlsplit(login.headers["location"]).query)
    request = etree.fromstring(inflate_bounded(params["SAMLRequest"][0]))
    return str(request.get("ID"))


async def sign_in_person(
    client: httpx.AsyncClient, base: str, person: str, *, now: datetime, headers: dict[str, str] | None = None
) -> tuple[httpx.Response, httpx.Response | None]:
    """One person's SP-initiated SAML sign-in as their browser makes it: ``/saml/login``, then the kit's identity
    provider's signed answer to that very request posted to ``/saml/acs`` (the server's public URL must be the kit's
    origin). Answers the two replies (the second None when the login was refused)."""
    login = await client.get(f"{base}/saml/login?relay=desktop", headers=headers)
    if login.status_code != 302:
        return login, None
    form = answer_form(request_id_of(login), person, now)
    done = await client.post(f"{base}/saml/acs", data=form, headers={"Accept": "application/json", **(headers or {})})
    return login, done


def answer_form(rid: str, person: str, now: datetime) -> dict[str, str]:
    """The form the kit's identity provider posts back for ``person``, answering the request ``rid``."""
    spec = Spec(
        now=now,
        response_id=f"_r{rid}",
        assertion_id=f"_a{rid}",
        in_response_to=rid,
        scd_in_response_to=rid,
        name_id=f"{person}@example.test",
        attributes={"email": (f"{person}@example.test",), "displayName": (person,)},
    )
    return {"SAMLResponse": b64(signed_response(spec)), "RelayState": rid}
