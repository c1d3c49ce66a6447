"""Sign-ins over HTTP from one address: distinct people signing in with SAML and with OpenID Connect against
``hangar serve`` in its own process, and whether any is refused.

Each SAML person makes the SP-initiated round trip a browser makes: ``GET /saml/login`` (302 to the identity
provider), then the identity provider's signed answer to that very request (the test kit's IdP, signing here)
posted to ``/saml/acs`` (303 with the credential). Each OIDC person goes from ``/oidc/login`` through the test
provider's pages (the certified ``oidc-provider`` package) back to ``/oidc/callback``. Every person is new to the
server (provisioned on the way). The runs, side by side, each on a fresh server:

1. **proxy**: every request comes from one address, a reverse proxy the server is told about
   (``--trusted-proxy 127.0.0.1``), with ``X-Forwarded-For`` naming each person's own address;
2. **NAT**: the same people from one address and no proxy configured (an office behind one NAT);
3. **OIDC**: the proxy run's people, signing in with OpenID Connect;
4. **guesser**: one address posting responses that answer no request of the server, until refused;
5. the same guesser naming another client in ``X-Forwarded-For`` with every attempt, no proxy configured.

Each run prints people signed in, refused (429), sign-ins per second over the server's two requests (what the
identity provider does between them, signing or its pages, is outside the timings), each of the two requests'
own rate, and the p50/p95 of one person's two requests. ``--src DIR`` runs the server from another checkout's
``src`` (the code before a change) for comparison; a server without ``--trusted-proxy`` gets none (it then
honoured ``X-Forwarded-For`` from any loopback client).

Run: .venv/bin/python bench/bench_signin.py [--people 1000] [--workers 8] [--src path/to/src]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.peers.oidc_provider import drive_to_callback, oidc_provider  # noqa: E402
from tests.support.rpc import RpcClient  # noqa: E402
from tests.unit.sso.saml.kit import b64, idp_metadata_xml, keypair, signed_response  # noqa: E402
from tests.unit.sso.saml.serving import answer_form, request_id_of  # noqa: E402

from hangar.core.clock import SystemClock  # noqa: E402

ENTRY = "from hangar.cli import main; main()"
PUBLIC_URL = "http://127.0.0.1:8420"
# People whose sign-ins are started before their answers are posted: under the 200 sign-ins a client address may
# leave unfinished (an office behind one NAT is one address), as browsers finishing each sign-in would.
BATCH = 100  # the origin the kit's identity provider addresses its answers to


def hangar(*args: str) -> list[str]:
    return [sys.executable, "-c", ENTRY, *args]


def env_for(src: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HANGAR_")}
    if src is not None:
        env["PYTHONPATH"] = src
    return env


@contextmanager
def serve(src: str | None, *extra: str) -> Iterator[tuple[str, str]]:
    """``hangar serve`` on a fresh data directory: its URL and an owner credential."""
    with tempfile.TemporaryDirectory() as data_dir:
        env = env_for(src)
        token = subprocess.run(
            hangar("admin", "owner-token", "--data-dir", data_dir),
            env=env, check=True, capture_output=True, text=True,
        ).stdout.strip()  # fmt: skip
        args = ["serve", "--no-site", "--port", "0", "--data-dir", data_dir, "--public-url", PUBLIC_URL, *extra]
        # The server's log (each refusal is a warning) is not the figures: it goes nowhere.
        proc = subprocess.Popen(hangar(*args), env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                if line.startswith("server: "):
                    yield line.split(": ", 1)[1].strip(), token
                    break
            else:
                raise RuntimeError("the server did not start")
        finally:
            proc.terminate()
            proc.wait(30)


def knows_trusted_proxies(src: str | None) -> bool:
    helped = subprocess.run(hangar("serve", "--help"), env=env_for(src), capture_output=True, text=True)
    return "--trusted-proxy" in helped.stdout


async def enable_saml(url: str, token: str) -> None:
    async with RpcClient(url.replace("http://", "ws://") + "/rpc", token) as rpc:
        await rpc.call("sso.saveConfig", kind="saml", config={"enabled": True, "idpMetadataXml": idp_metadata_xml()})


@dataclass
class Run:
    name: str
    signed_in: int = 0
    refused: int = 0
    other: int = 0
    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)
    phases: str = ""

    def report(self) -> None:
        lat = sorted(self.latencies) or [0.0]
        p50 = statistics.median(lat) * 1000
        p95 = lat[max(int(len(lat) * 0.95) - 1, 0)] * 1000
        rate = self.signed_in / self.seconds if self.seconds else 0.0
        print(
            f"{self.name:<38} signed in {self.signed_in:>5}   refused {self.refused:>5}   other {self.other:>3}   "
            f"{rate:6.1f} sign-ins/s   p50 {p50:6.1f} ms   p95 {p95:6.1f} ms"
            + (f"   ({self.phases})" if self.phases else "")
        )


def person_address(n: int) -> dict[str, str]:
    """The ``X-Forwarded-For`` a proxy adds for person ``n``: each person their own address."""
    return {"x-forwarded-for": f"10.{n // 65536}.{n // 256 % 256}.{n % 256}"}


def tally(
    run: Run, starts: dict[int, httpx.Response], ends: dict[int, httpx.Response], ok: Callable[[httpx.Response], bool]
) -> None:
    """Count each person's sign-in (its first request in ``starts``, its last in ``ends``) into ``run``."""
    for n, started in sorted(starts.items()):
        done = ends.get(n)
        if done is not None and ok(done):
            run.signed_in += 1
            run.latencies.append(started.elapsed.total_seconds() + done.elapsed.total_seconds())
        elif started.status_code == 429 or (done is not None and done.status_code == 429):
            run.refused += 1
        else:
            run.other += 1


async def each(workers: int, items: list[int], step: Callable[[int], Awaitable[None]]) -> float:
    """``step`` for every item, ``workers`` at a time: the seconds it took."""
    queue = list(items)

    async def worker() -> None:
        while queue:
            await step(queue.pop())

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(workers)))
    return time.perf_counter() - start


async def people(url: str, count: int, workers: int, *, forwarded: bool, name: str) -> Run:
    """``count`` new people signing in, their two requests timed apart from the identity provider's signing.

    A browser's sign-in is ``/saml/login``, then the identity provider's signed answer posted to ``/saml/acs``.
    The kit's identity provider signs with signxml, some 60 ms a response on this class of machine: done between
    the two requests it would cap the figure at the client's own signing, on the cores the server needs. So every
    person's ``/saml/login`` is made first, their answers are signed in a process pool outside the timings (the
    requests stay pending on the server meanwhile, well within their ten minutes), then every answer is posted, a
    ``BATCH`` of people at a time.
    Sign-ins a second are the people signed in over the time of both timed phases."""
    run = Run(name)
    now = SystemClock().now()

    def forwarded_for(n: int) -> dict[str, str] | None:
        return person_address(n) if forwarded else None

    logins: dict[int, httpx.Response] = {}

    async def login(n: int) -> None:
        logins[n] = await http.get(f"{url}/saml/login?relay=desktop", headers=forwarded_for(n))

    answers: dict[int, httpx.Response] = {}
    forms: dict[int, dict[str, str]] = {}

    async def answer(n: int) -> None:
        headers = {"Accept": "application/json", **(forwarded_for(n) or {})}
        answers[n] = await http.post(f"{url}/saml/acs", data=forms[n], headers=headers)

    login_s = acs_s = 0.0
    async with httpx.AsyncClient(timeout=60, limits=httpx.Limits(max_connections=workers)) as http:
        for first in range(0, count, BATCH):
            batch = list(range(first, min(first + BATCH, count)))
            login_s += await each(workers, batch, login)
            pending = [n for n in batch if logins[n].status_code == 302]
            # Forked workers share the kit's key made in this process (the identity provider the server trusts).
            with ProcessPoolExecutor(os.cpu_count(), mp_context=multiprocessing.get_context("fork")) as pool:
                signed = pool.map(answer_form, [request_id_of(logins[n]) for n in pending],
                                  [f"person{n}" for n in pending], [now] * len(pending), chunksize=8)  # fmt: skip
                forms.update(zip(pending, signed, strict=True))
            acs_s += await each(workers, pending, answer)
    answered = sum(1 for r in answers.values() if r.status_code != 429)
    tally(run, logins, answers, lambda done: done.status_code == 303)
    run.seconds = login_s + acs_s
    run.phases = f"/saml/login {count / login_s:,.0f}/s, /saml/acs {answered / acs_s:,.0f}/s"
    return run


async def oidc_people(url: str, token: str, count: int, workers: int, *, name: str) -> Run:
    """``count`` new people signing in with OpenID Connect against the test provider (the certified
    ``oidc-provider`` package on Node), each behind the proxy with their own address, in batches as for SAML.

    Timed: ``/oidc/login`` (302 to the provider) and ``/oidc/callback`` (the server redeems the code at the
    provider's token endpoint, checks the ID token against the provider's keys, provisions the person and hands
    the credential over). Not timed: the person's pages at the provider (its login and consent forms), which are
    the provider's work and which each person's browser goes through between the two."""
    run = Run(name)
    accounts = {
        f"person{n}": {"email": f"person{n}@example.test", "email_verified": True, "name": f"Person {n}"}
        for n in range(count)
    }
    callback = f"{PUBLIC_URL}/oidc/callback"
    async with oidc_provider(redirect_uris=[callback], accounts=accounts) as peer:
        async with RpcClient(url.replace("http://", "ws://") + "/rpc", token) as rpc:
            config = {"enabled": True, "issuer": peer.issuer, "clientId": peer.client_id}
            await rpc.call("sso.saveConfig", kind="oidc", config=config)
        starts: dict[int, httpx.Response] = {}
        ends: dict[int, httpx.Response] = {}
        returns: dict[int, str] = {}
        # Each person's own browser: the server's state cookie and the provider's session are theirs.
        browsers: dict[int, httpx.AsyncClient] = {}

        async def start(n: int) -> None:
            starts[n] = await browsers[n].get(f"{url}/oidc/login?relay=desktop", headers=person_address(n))

        async def at_provider(n: int) -> None:
            where = await drive_to_callback(browsers[n], starts[n], callback, login=f"person{n}")
            returns[n] = url + where.removeprefix(PUBLIC_URL)

        async def come_back(n: int) -> None:
            ends[n] = await browsers[n].get(returns[n], headers=person_address(n))

        login_s = callback_s = 0.0
        for first in range(0, count, BATCH):
            batch = list(range(first, min(first + BATCH, count)))
            browsers.update({n: httpx.AsyncClient(timeout=60, headers={"accept": "text/html"}) for n in batch})
            try:
                login_s += await each(workers, batch, start)
                await each(workers, [n for n in batch if starts[n].status_code == 302], at_provider)
                callback_s += await each(workers, [n for n in batch if n in returns], come_back)
            finally:
                await asyncio.gather(*(b.aclose() for b in browsers.values()))
                browsers.clear()
    tally(run, starts, ends, lambda done: done.status_code == 303 and "#token=" in done.headers.get("location", ""))
    run.seconds = login_s + callback_s
    run.phases = f"/oidc/login {count / login_s:,.0f}/s, /oidc/callback {len(ends) / callback_s:,.0f}/s"
    return run


async def guesser(url: str, attempts: int, *, rotate: bool = False) -> Run:
    """Failed attempts from one address; ``rotate``: each naming another client in ``X-Forwarded-For``."""
    run = Run("guesser: one address, rotating XFF" if rotate else "guesser: one address, failing")
    bogus = {"SAMLResponse": b64(signed_response())}  # answers no request of this server
    async with httpx.AsyncClient(timeout=60) as http:
        start = time.perf_counter()
        for n in range(attempts):
            headers = {"Accept": "application/json"}
            if rotate:
                headers["x-forwarded-for"] = f"198.51.100.{n % 250}"
            t0 = time.perf_counter()
            answer = await http.post(f"{url}/saml/acs", data=bogus, headers=headers)
            run.latencies.append(time.perf_counter() - t0)
            if answer.status_code == 429:
                run.refused += 1
            else:
                run.other += 1
        run.seconds = time.perf_counter() - start
    return run


async def main(count: int, workers: int, src: str | None) -> None:
    keypair()  # make the kit's key outside the timings
    proxy_flag = ["--trusted-proxy", "127.0.0.1"] if knows_trusted_proxies(src) else []
    print(f"cores: {os.cpu_count()}; people per run: {count}; concurrent browsers: {workers}; server: {src or 'this'}")
    with serve(src, *proxy_flag) as (url, token):
        await enable_saml(url, token)
        (await people(url, count, workers, forwarded=True, name="proxy: X-Forwarded-For per person")).report()
    with serve(src) as (url, token):
        await enable_saml(url, token)
        (await people(url, count, workers, forwarded=False, name="NAT: one address, no proxy")).report()
    with serve(src, *proxy_flag) as (url, token):
        (await oidc_people(url, token, count, workers, name="OIDC, proxy: X-Forwarded-For per person")).report()
    with serve(src) as (url, token):
        await enable_saml(url, token)
        (await guesser(url, 100)).report()
    with serve(src) as (url, token):
        await enable_saml(url, token)
        (await guesser(url, 100, rotate=True)).report()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--people", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--src", default=None, help="run the server from this checkout's src directory")
    parsed = parser.parse_args()
    asyncio.run(main(parsed.people, parsed.workers, parsed.src))
