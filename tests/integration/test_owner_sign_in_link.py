"""The server owner's one-time sign-in link, against real servers: the first start of a data directory prints one,
``hangar admin sign-in-link`` prints another beside a running server (another process on the shared data
directory, honoured at once), and every command the server prints runs as printed from the checkout, in a shell
that has no ``hangar`` on its PATH. A link's code works once, within its lifetime (both sides of the line, on the
injectable clock), is refused after with a sentence that says to print a new one, and is never a credential
itself."""

from __future__ import annotations

import os
import re
import subprocess
from datetime import timedelta
from pathlib import Path

import httpx

from hangar.core.clock import FakeClock
from hangar.httpkit.ratelimit import BUDGETS
from hangar.identity import IdentityService, Pairing
from hangar.identity.pairing import SIGN_IN_LINK_LIFETIME
from hangar.identity.part import IDENTITY_PART
from hangar.oversight import OVERSIGHT_PART
from hangar.sso.part import SSO_PART
from tests.support.processes import CHECKOUT, HANGAR, hangar_env, serve_from_checkout
from tests.support.server import RunningServer, running_server

PARTS = [OVERSIGHT_PART, IDENTITY_PART, SSO_PART]
PAIR = BUDGETS["pair"]
LINK = re.compile(r"^(http://127\.0\.0\.1:\d+)/#signin=([2-9A-HJ-NP-Z]{24})$")
# A shell as a new user has it: the system's commands, and no virtual environment on the PATH.
PLAIN_SHELL = {k: v for k, v in os.environ.items() if not k.startswith(("HANGAR_", "VIRTUAL_ENV"))} | {
    "PATH": "/usr/local/bin:/usr/bin:/bin"
}


async def pair(srv: RunningServer, code: str) -> httpx.Response:
    async with httpx.AsyncClient() as http:
        return await http.post(f"{srv.url}/auth/pair", json={"code": code, "deviceName": "Browser"})


async def is_owner(url: str, token: str) -> bool:
    async with httpx.AsyncClient() as http:
        me = await http.get(f"{url}/auth/me", headers={"Authorization": f"Bearer {token}"})
    return me.status_code == 200 and me.json()["isServerOwner"] is True


def refused_as_a_link(reply: httpx.Response) -> bool:
    message = reply.json()["error"]["message"]
    return (
        reply.status_code == 400
        and "sign-in link was used already or has expired" in message
        and "print a new one" in message
        and "hangar admin sign-in-link" in message
    )


async def test_a_link_code_works_once_and_only_within_its_lifetime(tmp_path: Path) -> None:
    clock = FakeClock()
    async with running_server(tmp_path, parts=PARTS, clock=clock) as srv:
        pairing = srv.ctx.service(Pairing)
        early, at_limit, twice = [await pairing.mint_sign_in_code(srv.owner_id) for _ in range(3)]
        assert timedelta(minutes=15) == SIGN_IN_LINK_LIFETIME
        assert LINK.match(f"http://127.0.0.1:1/#signin={early}")  # never a credential: no hgr_ token in a link

        first = await pair(srv, twice)
        assert first.status_code == 200 and await is_owner(srv.url, first.json()["token"])
        assert refused_as_a_link(await pair(srv, twice))  # used

        clock.advance(SIGN_IN_LINK_LIFETIME.total_seconds() - 1)
        inside = await pair(srv, early)
        assert inside.status_code == 200 and await is_owner(srv.url, inside.json()["token"])
        clock.advance(1)
        assert refused_as_a_link(await pair(srv, at_limit))  # at its lifetime: expired

        # A code of a link's shape that was never printed gets the same sentence: the refusal is no oracle. A typed
        # code keeps its own.
        assert refused_as_a_link(await pair(srv, "23456789ABCDEFGHJKMNPQRS"))
        typed = await pair(srv, "23456789AB")
        assert typed.status_code == 400 and "pairing code is unknown, used or expired" in typed.text


async def test_the_link_is_the_operators_door_even_where_pairing_is_off(tmp_path: Path) -> None:
    """A server that lets people in only through SSO still lets its operator in: the link is minted only from the
    data directory, like an owner credential. Typed codes stay refused."""
    async with running_server(tmp_path, parts=PARTS) as srv:
        identity = srv.ctx.service(IdentityService)
        pairing = srv.ctx.service(Pairing)
        device_code = await pairing.mint_device_code(srv.owner_id)
        link_code = await pairing.mint_sign_in_code(srv.owner_id)
        await identity.set_pairing_enabled(False)
        refused = await pair(srv, device_code)
        assert refused.status_code == 403 and refused.json()["error"]["code"] == "pairing_disabled"
        taken = await pair(srv, link_code)
        assert taken.status_code == 200 and await is_owner(srv.url, taken.json()["token"])


async def test_guessing_link_codes_is_attempt_limited(tmp_path: Path) -> None:
    """Failed link codes count in the ``pair`` bucket like typed ones: its burst refused as wrong, then refused as
    too many (the bucket refills 20 a minute, so a few more guesses are sent than the burst)."""
    async with running_server(tmp_path, parts=PARTS) as srv:
        guesses = [f"{n:04d}".translate(str.maketrans("01", "AB")) + "C" * 20 for n in range(PAIR.burst + 5)]
        replies = [await pair(srv, guess) for guess in guesses]
        assert all(refused_as_a_link(r) for r in replies[: PAIR.burst])
        assert any(r.status_code == 429 and "retry-after" in r.headers for r in replies[PAIR.burst :])


def run_as_printed(command: str) -> str:
    """``command`` run by a shell exactly as printed, from the checkout, with no ``hangar`` on the PATH."""
    done = subprocess.run(command, shell=True, cwd=CHECKOUT, env=PLAIN_SHELL, capture_output=True, text=True)
    assert done.returncode == 0, (command, done.stderr)
    return done.stdout.strip()


def link_of(lines: dict[str, str]) -> str | None:
    found = [v for k, v in lines.items() if k.startswith("sign-in link")]
    return found[0] if found else None


async def test_the_first_start_prints_a_link_and_commands_that_run_as_printed(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with serve_from_checkout(data, until="owner credential") as lines:
        server = lines["server"]
        link = link_of(lines)
        assert link is not None, lines
        match = LINK.match(link)
        assert match and match.group(1) == server  # at the server's address, the code in the fragment

        # The printed commands, run as printed by a shell that has no `hangar` on its PATH.
        assert lines["new sign-in link"].startswith(".venv/bin/hangar admin sign-in-link --data-dir ")
        assert subprocess.run("hangar --help", shell=True, env=PLAIN_SHELL, capture_output=True).returncode == 127
        token = run_as_printed(lines["owner credential (for scripts)"])
        assert await is_owner(server, token)

        # A new link from the command line, in another process while the server runs: honoured at once.
        printed = run_as_printed(lines["new sign-in link"])
        again = LINK.match(printed)
        assert again and again.group(1) == server and printed != link
        async with httpx.AsyncClient() as http:
            for code in (match.group(2), again.group(2)):
                paired = await http.post(f"{server}/auth/pair", json={"code": code, "deviceName": "Browser"})
                assert paired.status_code == 200 and await is_owner(server, paired.json()["token"])

    # The owner has signed in: later starts print no link, and still say how to get one.
    with serve_from_checkout(data, until="owner credential") as lines:
        assert link_of(lines) is None and "new sign-in link" in lines


def test_the_sign_in_link_command_names_a_bad_url(tmp_path: Path) -> None:
    done = subprocess.run(
        [HANGAR, "admin", "sign-in-link", "--url", "example.test"],
        env=hangar_env(tmp_path),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and "--url" in done.stderr and "http://" in done.stderr
    named = subprocess.run(
        [HANGAR, "admin", "sign-in-link", "--url", "https://hangar.example.test/"],
        env=hangar_env(tmp_path), capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert re.fullmatch(r"https://hangar\.example\.test/#signin=[2-9A-HJ-NP-Z]{24}\n", named.stdout)
