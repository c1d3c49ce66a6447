"""SAML ACS verifications per second for a signed response, side by side with pysaml2's service provider
verifying the very same responses (pysaml2 checks signatures with the xmlsec1 program).

Three figures:
1. our ``ResponseVerifier`` in this process (assertion signed; and response + assertion signed);
2. ``POST /saml/acs`` over HTTP against ``hangar serve`` in its own process, end to end (verify, login outcome,
   device credential, 303) for a returning user, 8 concurrent clients;
3. pysaml2's ``Saml2Client.parse_authn_request_response`` on the same responses, in this process.

Every response is distinct (its own IDs), so the replay cache never short-cuts a verification.

Run: .venv/bin/python bench/bench_sso_saml.py [--count 1500]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hangar.core.clock import SystemClock  # noqa: E402
from hangar.sso.saml import PendingRequests, ResponseVerifier, SeenAssertions, SpSettings  # noqa: E402
from hangar.sso.saml import parse_idp_metadata, sp_metadata_xml  # noqa: E402
from tests.support.rpc import RpcClient  # noqa: E402
from tests.unit.sso.saml.kit import IDP, Spec, b64, idp_metadata_xml, keypair, signed_response  # noqa: E402

BIN = Path(sys.executable).parent / "hangar"


def responses(count: int, origin: str, *, sign_response: bool, one_user: bool = False) -> list[str]:
    """``count`` distinct unsolicited responses, validly signed, addressed to ``origin``'s ACS (for one
    returning user when ``one_user``, else each for a new user)."""
    now = SystemClock().now()
    out = []
    for i in range(count):
        spec = Spec(
            now=now,
            response_id=f"_r{i:06d}{'s' if sign_response else ''}",
            assertion_id=f"_a{i:06d}{'s' if sign_response else ''}",
            in_response_to=None,
            scd_in_response_to=None,
            destination=f"{origin}/saml/acs",
            recipient=f"{origin}/saml/acs",
            audience=f"{origin}/saml",
            name_id=f"user{0 if one_user else i}@example.test",
            attributes={"email": (f"user{0 if one_user else i}@example.test",), "displayName": ("A User",)},
            not_on_or_after=now + timedelta(minutes=30),
            scd_not_on_or_after=now + timedelta(minutes=30),
        )
        out.append(b64(signed_response(spec, sign_response=sign_response)))
    return out


def bench_ours(batch: list[str], origin: str, *, want_response_signed: bool) -> float:
    clock = SystemClock()
    settings = SpSettings(
        sp_entity_id=f"{origin}/saml",
        acs_url=f"{origin}/saml/acs",
        idp=parse_idp_metadata(idp_metadata_xml()),
        allow_idp_initiated=True,
        want_response_signed=want_response_signed,
    )
    verifier = ResponseVerifier(settings, clock, PendingRequests(clock), SeenAssertions(clock))
    start = time.perf_counter()
    for value in batch:
        verifier.verify_post(value)
    return len(batch) / (time.perf_counter() - start)


def bench_pysaml2(batch: list[str], origin: str, workdir: Path) -> float | None:
    if shutil.which("xmlsec1") is None:
        print("pysaml2 peer skipped: xmlsec1 is not installed")
        return None
    from saml2 import BINDING_HTTP_POST
    from saml2.client import Saml2Client
    from saml2.config import SPConfig

    (workdir / "idp.xml").write_text(idp_metadata_xml())
    conf = SPConfig()
    conf.load(
        {
            "entityid": f"{origin}/saml",
            "service": {
                "sp": {
                    "endpoints": {"assertion_consumer_service": [(f"{origin}/saml/acs", BINDING_HTTP_POST)]},
                    "allow_unsolicited": True,
                    "want_assertions_signed": True,
                    "want_response_signed": False,
                }
            },
            "metadata": {"local": [str(workdir / "idp.xml")]},
            "xmlsec_binary": shutil.which("xmlsec1"),
        }
    )
    client = Saml2Client(conf)
    start = time.perf_counter()
    for value in batch:
        parsed = client.parse_authn_request_response(value, BINDING_HTTP_POST)
        assert parsed.name_id is not None and parsed.issuer() == IDP
    return len(batch) / (time.perf_counter() - start)


def start_server(data_dir: str) -> tuple[subprocess.Popen[str], str, str]:
    token = subprocess.run(
        [str(BIN), "admin", "owner-token", "--data-dir", data_dir], check=True, capture_output=True, text=True
    ).stdout.strip()
    proc = subprocess.Popen(
        [str(BIN), "serve", "--no-site", "--port", "0", "--data-dir", data_dir], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("server: "):
            return proc, line.split(": ", 1)[1].strip(), token
    raise RuntimeError("server did not start")


async def bench_http(count: int, workers: int = 8) -> float:
    with tempfile.TemporaryDirectory() as data_dir:
        proc, origin, token = start_server(data_dir)
        try:
            ws = origin.replace("http://", "ws://") + "/rpc"
            async with RpcClient(ws, token) as rpc:
                config = {"enabled": True, "idpMetadataXml": idp_metadata_xml(), "allowIdpInitiated": True}
                await rpc.call("sso.saveConfig", kind="saml", config=config)
            batch = responses(count, origin, sign_response=False, one_user=True)
            queue = list(reversed(batch))
            async with httpx.AsyncClient(timeout=30) as client:

                async def worker() -> None:
                    while queue:
                        value = queue.pop()
                        answer = await client.post(f"{origin}/saml/acs", data={"SAMLResponse": value})
                        assert answer.status_code == 303, answer.text[:300]

                start = time.perf_counter()
                await asyncio.gather(*(worker() for _ in range(workers)))
                return count / (time.perf_counter() - start)
        finally:
            proc.terminate()
            proc.wait(10)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=1500)
    parser.add_argument("--peer-count", type=int, default=200)
    args = parser.parse_args()
    origin = "http://127.0.0.1:8420"
    keypair()  # make the test IdP key outside the timings
    print(f"cores: {os.cpu_count()}; responses per run: {args.count} (pysaml2: {args.peer_count})")
    plain = responses(args.count, origin, sign_response=False)
    ours = bench_ours(plain, origin, want_response_signed=False)
    print(f"ours, in process, assertion signed:            {ours:8.0f} verifications/s")
    both = responses(args.count, origin, sign_response=True)
    ours_both = bench_ours(both, origin, want_response_signed=True)
    print(f"ours, in process, response + assertion signed: {ours_both:8.0f} verifications/s")
    with tempfile.TemporaryDirectory() as tmp:
        peer = bench_pysaml2(plain[: args.peer_count], origin, Path(tmp))
    if peer is not None:
        print(f"pysaml2 SP (xmlsec1), assertion signed:        {peer:8.0f} verifications/s")
        print(f"ratio ours / pysaml2:                          {ours / peer:8.1f}x")
    http = asyncio.run(bench_http(min(args.count, 600)))
    print(f"ours, POST /saml/acs over HTTP, end to end:    {http:8.0f} sign-ins/s (returning user, 8 clients)")
    target = 1000
    print(f"target {target}/s for a signed response: {'met' if ours >= target else 'NOT met'} ({ours:.0f}/s)")


if __name__ == "__main__":
    main()
