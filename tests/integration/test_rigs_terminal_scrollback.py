"""A person's terminal outlives its lane: a lane that drops (a reload, a network cut) leaves the shell running, and
the person's next lane gets its recent output first, then the same shell; nothing of it reaches another person's
terminal, a terminal of another rig, or a lane of another credential of the same person (an application's grant);
the replay is bounded in bytes; a terminal nobody shows is closed after the keep time, and one whose person lost
access (removed, or demoted below member, with or without an event) is closed at once on every rig, shown or not."""

from __future__ import annotations

import asyncio
import re
from datetime import timedelta
from pathlib import Path

import pytest
import websockets

from hangar.core.clock import FakeClock
from hangar.core.principal import Role
from hangar.identity import IdentityService
from hangar.identity.models import DeviceScope
from hangar.rigs.live.terminals import Scrollback
from tests.integration.rigs_env import RigsEnv, rigs_server
from tests.support.rpc import RpcClient

pytestmark = pytest.mark.packs("terminal")

GUARD_S = 30.0  # a bound against hangs only


async def lane(env: RigsEnv, rig: str, token: str | None = None) -> websockets.ClientConnection:
    """A terminal lane of the person behind ``token`` (the owner by default)."""
    token = token or env.srv.owner_token
    async with RpcClient(env.srv.ws_url, token) as c:
        minted = await c.call("rig.terminalUrl", workspace_id=env.ws, rigId=rig)
    return await websockets.connect(env.ws_origin + minted["path"], additional_headers=auth(token))


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def read_until(term: websockets.ClientConnection, marker: bytes) -> bytes:
    seen = b""
    while marker not in seen:
        frame = await asyncio.wait_for(term.recv(), GUARD_S)
        seen += frame if isinstance(frame, bytes) else frame.encode()
    return seen


async def printed(env: RigsEnv, rig: str, command: bytes, marker: bytes, token: str | None = None) -> None:
    """Open a lane, run ``command`` in its shell until ``marker`` shows, and close the lane."""
    async with await lane(env, rig, token) as term:
        await term.send(command + b"\n")
        await read_until(term, marker)


async def first_output(term: websockets.ClientConnection, marker: bytes) -> bytes:
    """What the lane sends from its start until ``marker`` appears (typed after the lane opened)."""
    await term.send(b"echo " + marker[:4] + b"''" + marker[4:] + b"\n")  # the typed line does not hold the marker
    return await read_until(term, marker)


async def test_a_reconnected_terminal_shows_its_recent_output_and_the_same_shell(tmp_path: Path) -> None:
    async with rigs_server(tmp_path) as env:
        rig = await env.open()
        await printed(env, rig, b"export KEPT_MARK=still-mine; echo before-$((20+22))", b"before-42")
        # A new lane of the same person: the recent output first, then the same shell.
        async with await lane(env, rig) as term:
            seen = await first_output(term, b"after-reconnect")
            assert b"before-42" in seen.split(b"after-reconnect")[0]
            await term.send(b"echo mark-$KEPT_MARK\n")
            await read_until(term, b"mark-still-mine")
        log = await env.manager.store.actions(env.ws, rig)
        assert [e.details.get("kept", False) for e in log if e.verb == "terminal.open"] == [False, True]

        # Another person's terminal on the same rig is a shell of their own, and shows nothing of this one.
        member = await env.srv.new_user_token(env.ws, "member", name="other")
        async with await lane(env, rig, member) as theirs:
            seen = await first_output(theirs, b"their-own")
            assert b"before-42" not in seen and b"mark-still-mine" not in seen
            await theirs.send(b"echo mark-[$KEPT_MARK]\n")
            await read_until(theirs, b"mark-[]")
        # Nor does the owner's terminal of another rig.
        other = await env.open(await env.new_space())
        async with await lane(env, other) as elsewhere:
            seen = await first_output(elsewhere, b"other-rig")
            assert b"before-42" not in seen and b"mark-still-mine" not in seen


async def test_lanes_of_one_person_opened_at_once_share_one_shell(tmp_path: Path) -> None:
    async with rigs_server(tmp_path) as env:
        rig = await env.open()
        first, second = await asyncio.gather(lane(env, rig), lane(env, rig))
        async with first, second:
            await first.send(b"export SHARED_MARK=one-shell\n")
            await second.send(b"echo shared-$SHARED_MARK\n")
            await read_until(second, b"shared-one-shell")
            await read_until(first, b"shared-one-shell")  # both show what the one shell prints
        live = env.manager.live(env.ws, rig)
        assert live.terminals.people() == {env.srv.owner_id}
        log = await env.manager.store.actions(env.ws, rig)
        assert sorted(e.details.get("kept", False) for e in log if e.verb == "terminal.open") == [False, True]


async def test_the_replay_is_bounded_and_starts_at_a_line(tmp_path: Path) -> None:
    async with rigs_server(tmp_path, terminal_scrollback_bytes=4096) as env:
        rig = await env.open()
        async with await lane(env, rig) as term:
            # 400 numbered lines of 20 bytes: 8,000 bytes, twice the bound.
            lines = b"for i in $(seq 1000 1399); do printf 'line-%s-padding..\\n' $i; done"
            await term.send(lines + b"; echo done-$((1+1))\n")
            await read_until(term, b"done-2")
        async with await lane(env, rig) as term:
            replay = await asyncio.wait_for(term.recv(), GUARD_S)
            assert isinstance(replay, bytes)
            assert len(replay) <= 4096
            assert replay.startswith(b"line-") and b"line-1399-padding" in replay and b"done-2" in replay
            assert b"line-1000-" not in replay


def test_the_scrollback_keeps_its_bound_exactly() -> None:
    at_limit = Scrollback(64)
    at_limit.add(b"a" * 30 + b"\n" + b"b" * 33)  # 64 bytes: all of it
    assert at_limit.replay() == b"a" * 30 + b"\n" + b"b" * 33
    past = Scrollback(64)
    past.add(b"x" + b"a" * 30 + b"\n" + b"b" * 33)  # 65 bytes: the oldest goes, and the replay starts at a line
    assert past.replay() == b"b" * 33
    unbroken = Scrollback(8)
    unbroken.add(b"0123456789")  # no line break to start at: the newest bytes as they are
    assert unbroken.replay() == b"23456789"


async def test_a_terminal_nobody_shows_is_closed_after_the_keep_time(tmp_path: Path) -> None:
    clock = FakeClock()
    async with rigs_server(tmp_path, clock=clock, terminal_keep_seconds=300) as env:
        rig = await env.open()
        await printed(env, rig, b"export KEPT_MARK=kept; echo first-$((2*3))", b"first-6")
        live = env.manager.live(env.ws, rig)
        for _ in range(400):  # the server notices the closed socket on its own time
            if live.lanes == 0:
                break
            await asyncio.sleep(0.025)
        clock.advance(299)
        await env.manager.sweep()
        assert env.srv.owner_id in live.terminals.people()  # within the keep time: still there
        clock.advance(1)
        await env.manager.sweep()
        assert env.srv.owner_id not in live.terminals.people()
        async with await lane(env, rig) as term:
            seen = await first_output(term, b"fresh-shell")
            assert b"first-6" not in seen  # a new shell, with nothing of the old one
            await term.send(b"echo mark-[$KEPT_MARK]\n")
            await read_until(term, b"mark-[]")


async def test_a_shell_that_exits_is_not_kept(tmp_path: Path) -> None:
    async with rigs_server(tmp_path) as env:
        rig = await env.open()
        async with await lane(env, rig) as term:
            await term.send(b"echo gone-$((3*3)); exit\n")
            await read_until(term, b"gone-9")
            await asyncio.wait_for(term.wait_closed(), GUARD_S)
        async with await lane(env, rig) as term:
            seen = await first_output(term, b"new-one")
            assert b"gone-9" not in seen


async def test_a_person_who_lost_access_loses_the_kept_terminal(tmp_path: Path) -> None:
    async with rigs_server(tmp_path) as env:
        rig = await env.open()
        member = await env.srv.new_user_token(env.ws, "member", name="leaver")
        async with RpcClient(env.srv.ws_url, member) as m:
            me = (await m.call("users.me"))["id"]
        async with await lane(env, rig, member) as term:
            await term.send(b"echo secret-$((4*4))\n")
            await read_until(term, b"secret-16")
            await env.call("members.remove", user_id=me)
            await asyncio.wait_for(term.wait_closed(), GUARD_S)
            assert term.close_code == 4403
        live = env.manager.live(env.ws, rig)
        for _ in range(400):
            if me not in live.terminals.people():
                break
            await asyncio.sleep(0.025)
        assert me not in live.terminals.people()


async def shell_pid(env: RigsEnv, rig: str, token: str) -> int:
    """Open a lane of ``token``'s person, learn its shell's process id, and close the lane (the shell is kept)."""
    async with await lane(env, rig, token) as term:
        await term.send(b"echo pid-$$-e''nd\n")  # the typed line does not end as the answer does
        found = re.search(rb"pid-(\d+)-end", await read_until(term, b"-end\r\n"))
        assert found is not None
    return int(found.group(1))


async def runs(env: RigsEnv, rig: str, pid: int) -> bool:
    """Whether the process ``pid`` still runs in the rig (asked from inside it, not from the server's records)."""
    ran = await env.exec(rig, f"kill -0 {pid} 2>/dev/null && echo running || echo ended")
    return "running" in str(ran["stdout"])


async def ends(env: RigsEnv, rig: str, pid: int) -> bool:
    """Whether ``pid`` ends soon (a closed PTY hangs its shell up; the rig's kernel takes a moment)."""
    for _ in range(100):
        if not await runs(env, rig, pid):
            return True
        await asyncio.sleep(0.1)
    return False


async def user_of(env: RigsEnv, token: str) -> str:
    async with RpcClient(env.srv.ws_url, token) as c:
        return str((await c.call("users.me"))["id"])


async def test_removing_a_person_ends_their_kept_shells_on_every_rig_at_once(tmp_path: Path) -> None:
    async with rigs_server(tmp_path) as env:
        first, second = await env.open(), await env.open(await env.new_space())
        member = await env.srv.new_user_token(env.ws, "member", name="leaver")
        me = await user_of(env, member)
        pids = {rig: await shell_pid(env, rig, member) for rig in (first, second)}
        assert all([await runs(env, rig, pid) for rig, pid in pids.items()])  # kept while nobody shows them
        await env.call("members.remove", user_id=me)
        await env.srv.ctx.bus.drain()  # the removal is an event: no sweep needed
        for rig, pid in pids.items():
            assert await ends(env, rig, pid), f"the removed person's shell on {rig} still runs"
        # The rigs themselves were opened by someone else and stay.
        assert {(await env.status(r))["status"] for r in pids} == {"ready"}


async def test_demoting_a_person_below_member_ends_their_kept_shell(tmp_path: Path) -> None:
    async with rigs_server(tmp_path) as env:
        rig = await env.open()
        member = await env.srv.new_user_token(env.ws, "member", name="demoted")
        me = await user_of(env, member)
        pid = await shell_pid(env, rig, member)
        await env.call("members.setRole", user_id=me, role="admin")  # still member or above: the shell stays
        await env.call("members.setRole", user_id=me, role="member")
        await env.srv.ctx.bus.drain()
        assert await runs(env, rig, pid)
        await env.call("members.setRole", user_id=me, role="guest")  # below member: a guest has no terminal
        await env.srv.ctx.bus.drain()
        assert await ends(env, rig, pid)


async def test_the_sweep_ends_kept_shells_of_people_who_lost_access_without_an_event(tmp_path: Path) -> None:
    async with rigs_server(tmp_path) as env:
        rig = await env.open()
        identity = env.srv.ctx.service(IdentityService)
        stays, demoted, removed = [
            await env.srv.new_user_token(env.ws, "member", name=n) for n in ("stays", "demoted", "removed")
        ]
        pids = {token: await shell_pid(env, rig, token) for token in (stays, demoted, removed)}
        # Straight to the store, as another process or a repair would: no event for this server to hear.
        await identity.set_role(env.ws, await user_of(env, demoted), Role.guest)
        await identity.remove_member(env.ws, await user_of(env, removed))
        assert await runs(env, rig, pids[demoted]) and await runs(env, rig, pids[removed])
        await env.manager.sweep()
        assert await ends(env, rig, pids[demoted]) and await ends(env, rig, pids[removed])
        assert await runs(env, rig, pids[stays])  # a member's kept shell is left alone


async def test_another_credential_of_the_same_person_gets_a_shell_of_its_own(tmp_path: Path) -> None:
    async with rigs_server(tmp_path) as env:
        rig = await env.open()
        await printed(
            env, rig, b"export KEPT_MARK=from-my-device; echo typed-on-device-$((6*7))", b"typed-on-device-42"
        )
        # An application the person granted (an OAuth client's credential, not read-only): the same person, another
        # credential. It gets a shell of its own, with none of what the person typed on their device.
        identity = env.srv.ctx.service(IdentityService)
        grant = DeviceScope(
            workspace_id=env.ws, client_id="an-app", expires_at=env.srv.ctx.clock.now() + timedelta(hours=1)
        )
        app_token = await identity.issue_device(env.srv.owner_id, "an app", scope=grant)
        assert (await identity.authenticate(app_token)).delegated
        async with await lane(env, rig, app_token) as theirs:
            seen = await first_output(theirs, b"app-lane")
            assert b"typed-on-device-42" not in seen and b"from-my-device" not in seen
            await theirs.send(b"echo mark-[$KEPT_MARK]; export KEPT_MARK=from-the-app\n")
            await read_until(theirs, b"mark-[]")
        # The person's own device still attaches to its own shell, untouched by the application.
        async with await lane(env, rig) as mine:
            seen = await first_output(mine, b"mine-again")
            assert b"typed-on-device-42" in seen and b"app-lane" not in seen
            await mine.send(b"echo mark-[$KEPT_MARK]\n")
            await read_until(mine, b"mark-[from-my-device]")
