"""The SAML service provider as the server runs it: the saved SAML connection turned into verifier settings,
and the pending-request and seen-assertion stores (in the server database) shared by ``/saml/login`` and
``/saml/acs``.

Settings are derived per request from the record saved last (so a save applies at once); the parsed IdP
metadata is cached by the exact XML text, so a new record's metadata is parsed once.
"""

from __future__ import annotations

import threading
from datetime import timedelta

from hangar.core.clock import Clock
from hangar.core.context import AppContext
from hangar.sso.config import SamlConnection
from hangar.sso.endpoints import ACS_PATH, LOGIN_PATH, METADATA_PATH, acs_url
from hangar.sso.errors import SsoError
from hangar.sso.saml.metadata import IdpMetadata, parse_idp_metadata, sp_metadata_xml
from hangar.sso.saml.pending import PendingRequests, SeenAssertions
from hangar.sso.saml.request import AuthnRequest, build_authn_request, new_request_id
from hangar.sso.saml.verify import CheckedResponse, ResponseVerifier, SamlIdentity, SpSettings, use_up
from hangar.sso.state import StateDb, state_db

__all__ = ["ACS_PATH", "LOGIN_PATH", "METADATA_PATH", "SamlService", "acs_url", "saml_service"]


class SamlService:
    def __init__(self, clock: Clock, db: StateDb) -> None:
        self.clock = clock
        self.db = db
        self.pending = PendingRequests(clock, db)
        self.seen = SeenAssertions(clock, db)
        self._lock = threading.Lock()
        self._metadata: tuple[str, IdpMetadata] | None = None

    def idp_metadata(self, conn: SamlConnection) -> IdpMetadata:
        xml = conn.idpMetadataXml or ""
        if not xml.strip():
            raise SsoError("invalid", "the SAML connection has no identity provider metadata")
        with self._lock:
            cached = self._metadata
        if cached is not None and cached[0] == xml:
            return cached[1]
        parsed = parse_idp_metadata(xml)
        with self._lock:
            self._metadata = (xml, parsed)
        return parsed

    def settings(self, conn: SamlConnection, origin: str) -> SpSettings:
        return SpSettings(
            sp_entity_id=conn.sp_entity_id(origin),
            acs_url=acs_url(origin),
            idp=self.idp_metadata(conn),
            clock_skew=timedelta(seconds=conn.clockSkewSeconds),
            allow_idp_initiated=conn.allowIdpInitiated,
            want_response_signed=conn.wantResponseSigned,
            email_attribute=conn.emailAttribute,
            display_name_attribute=conn.displayNameAttribute,
            groups_attribute=conn.groupsAttribute,
        )

    def start_login(
        self,
        conn: SamlConnection,
        origin: str,
        *,
        relay: str | None,
        client_origin: str | None,
        continuation: str | None = None,
        client_state: str | None = None,
    ) -> AuthnRequest:
        """Build the AuthnRequest and remember it as pending (with what the login asked for).

        Writes to the server database: call it off the event loop (as ``verify``)."""
        request = self.new_request(conn, origin)
        self.pending.add(
            request.id, relay=relay, client_origin=client_origin, continuation=continuation, client_state=client_state
        )
        return request

    def new_request(self, conn: SamlConnection, origin: str) -> AuthnRequest:
        """The AuthnRequest of a new login, not yet remembered (``pending.add`` does that)."""
        settings = self.settings(conn, origin)
        rid = new_request_id()
        # RelayState carries the request id so an IdP that echoes it lets us cross-check; trust comes from
        # the signed InResponseTo, never from RelayState.
        return build_authn_request(
            sp_entity_id=settings.sp_entity_id,
            acs_url=settings.acs_url,
            idp_sso_url=settings.idp.sso_url,
            now=self.clock.now(),
            relay_state=rid,
            request_id=rid,
        )

    def verify(self, conn: SamlConnection, origin: str, saml_response: str | bytes) -> SamlIdentity:
        """``check`` then ``use_up``."""
        return self.use_up(self.check(conn, origin, saml_response))

    def check(self, conn: SamlConnection, origin: str, saml_response: str | bytes) -> CheckedResponse:
        """Every check of the response that only reads (the signatures are CPU work: off the event loop)."""
        verifier = ResponseVerifier(self.settings(conn, origin), self.clock, self.pending, self.seen)
        return verifier.check_post(saml_response)

    def use_up(self, checked: CheckedResponse) -> SamlIdentity:
        """Use up the request a checked response answers and remember its assertion, in one write transaction
        (off the event loop: it may wait for another process's writer)."""
        return use_up(checked, self.pending, self.seen)

    def sp_metadata(self, conn: SamlConnection, origin: str) -> bytes:
        return sp_metadata_xml(conn.sp_entity_id(origin), acs_url(origin))


def saml_service(ctx: AppContext) -> SamlService:
    """The server's one ``SamlService``, created on first use (the SSO part may also provide it at start)."""
    existing = ctx.maybe_service(SamlService)
    if existing is not None:
        return existing
    try:
        return ctx.provide(SamlService(ctx.clock, state_db(ctx.dbs)))
    except ValueError:
        # Two requests raced to create it; the first one won.
        return ctx.service(SamlService)
