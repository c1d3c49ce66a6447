"""Property-based conformance: schemathesis generates requests from /openapi.json and checks every response
against it (status codes, content types, headers, bodies, no server errors), operation by operation."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings

from tests.integration.site_env import RunningSite, serve_site

EXAMPLES_PER_OPERATION = 15


@pytest.fixture(scope="module")
def site() -> Iterator[RunningSite]:
    with serve_site() as running:
        yield running


def test_openapi_conformance(site: RunningSite) -> None:
    schema = schemathesis.openapi.from_url(site.url + "/openapi.json")
    checked = []
    for result in schema.get_all_operations():
        operation = result.ok()

        @given(case=operation.as_strategy())
        @settings(
            max_examples=EXAMPLES_PER_OPERATION,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def run(case: schemathesis.Case) -> None:
            case.call_and_validate()

        run()
        checked.append(operation.label)
    assert "POST /mcp" in checked and "GET /manual/{section}/{page}" in checked
    declared = httpx.get(site.url + "/openapi.json").json()["paths"]
    # schemathesis leaves out the operation serving the schema it was loaded from; test_site_pages covers it.
    expected = {f"{m.upper()} {p}" for p, ops in declared.items() for m in ops} - {"GET /openapi.json"}
    assert sorted(checked) == sorted(expected)
