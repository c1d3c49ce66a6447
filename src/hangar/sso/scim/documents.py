"""The SCIM discovery documents (RFC 7643 §5–7): what we support, our resource types, our schemas."""

from __future__ import annotations

from typing import Any

from hangar.sso.scim.schema import ENTERPRISE_URN, GROUP_URN, USER_URN, schema_documents

SPC_URN = "urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig"
RESOURCE_TYPE_URN = "urn:ietf:params:scim:schemas:core:2.0:ResourceType"


def service_provider_config(base_url: str, max_results: int) -> dict[str, Any]:
    return {
        "schemas": [SPC_URN],
        "patch": {"supported": True},
        "bulk": {"supported": False, "maxOperations": 0, "maxPayloadSize": 0},
        "filter": {"supported": True, "maxResults": max_results},
        "changePassword": {"supported": False},
        "sort": {"supported": False},
        "etag": {"supported": False},
        "authenticationSchemes": [
            {
                "type": "oauthbearertoken",
                "name": "Bearer token",
                "description": "The SCIM token the server owner generates with sso.scimRegenerateToken",
                "primary": True,
            }
        ],
        "meta": {"resourceType": "ServiceProviderConfig", "location": f"{base_url}/ServiceProviderConfig"},
    }


def resource_types(base_url: str) -> list[dict[str, Any]]:
    return [
        {
            "schemas": [RESOURCE_TYPE_URN],
            "id": "User",
            "name": "User",
            "endpoint": "/Users",
            "description": "A person who can sign in to this server",
            "schema": USER_URN,
            "schemaExtensions": [{"schema": ENTERPRISE_URN, "required": False}],
            "meta": {"resourceType": "ResourceType", "location": f"{base_url}/ResourceTypes/User"},
        },
        {
            "schemas": [RESOURCE_TYPE_URN],
            "id": "Group",
            "name": "Group",
            "endpoint": "/Groups",
            "description": "A workspace and its members (read-only)",
            "schema": GROUP_URN,
            "meta": {"resourceType": "ResourceType", "location": f"{base_url}/ResourceTypes/Group"},
        },
    ]


def schemas(base_url: str) -> list[dict[str, Any]]:
    out = []
    for urn, doc in schema_documents().items():
        shown = dict(doc)
        if urn == USER_URN:
            # Passwords never reach us: sign-in goes through the identity provider.
            shown["attributes"] = [a for a in doc["attributes"] if a["name"] != "password"]
        shown["meta"] = {"resourceType": "Schema", "location": f"{base_url}/Schemas/{urn}"}
        out.append(shown)
    return out
