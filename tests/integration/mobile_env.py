"""A real server whose phone rigs drive the test phone (``tests.peers.adb_device``) through Debian's adb.

Each environment runs its own adb server (a free port in ``ANDROID_ADB_SERVER_PORT``, adb's own variable, which
the server passes on to adb) and kills it at the end, so tests never share or leave one. No enclosure boots: the
rigs part runs with its usual backends, and only the mobile surface is used.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from hangar.identity import IdentityService
from tests.integration.rigs_env import RigsEnv, rigs_parts
from tests.peers.adb_device import FakePhone
from tests.support.ports import free_port
from tests.support.rpc import RpcClient, RpcError
from tests.support.server import running_server


@dataclass
class PhoneEnv(RigsEnv):
    phone: FakePhone

    @property
    def apks(self) -> Path:
        return self.srv.data_dir / "rigs" / "apks"

    async def setting(self, key: str, value: Any) -> None:
        await self.srv.ctx.service(IdentityService).set_setting(key, value)

    async def open_phone(self, space: str | None = None) -> str:
        return await self.ready(await self.call("rig.open", space_id=space or self.space, surface="mobile"))

    async def act(self, rig: str, **action: Any) -> Any:
        return await self.call("mobile_use", rigId=rig, action=action)

    async def fails(self, op: str, **args: Any) -> RpcError:
        with pytest.raises(RpcError) as e:
            await self.call(op, **args)
        return e.value


@contextlib.contextmanager
def own_adb_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    adb = shutil.which("adb")
    if adb is None:
        pytest.skip("Debian's adb is not installed (make apt-deps)")
    port = str(free_port())
    monkeypatch.setenv("ANDROID_ADB_SERVER_PORT", port)
    try:
        yield port
    finally:
        env = {**os.environ, "ANDROID_ADB_SERVER_PORT": port}
        subprocess.run([adb, "kill-server"], env=env, capture_output=True, timeout=30, check=False)


@contextlib.asynccontextmanager
async def phone_server(
    monkeypatch: pytest.MonkeyPatch, *, configure: bool = True, **settings: Any
) -> AsyncIterator[PhoneEnv]:
    """The server with the test phone named in ``rigs.mobile.device`` (unless ``configure`` is false); ``settings``
    are the server's (``web_dist`` for browser tests)."""
    phone = FakePhone()
    await phone.start()
    try:
        with own_adb_server(monkeypatch), tempfile.TemporaryDirectory(prefix="hm-", dir="/tmp") as short:
            async with running_server(Path(short), parts=rigs_parts(), **settings) as srv:
                ws = await srv.new_workspace()
                async with RpcClient(srv.ws_url, srv.owner_token) as client:
                    space = (await client.call("spaces.create", workspace_id=ws, title="phone tests"))["id"]
                    env = PhoneEnv(srv, ws, space, client, phone)
                    if configure:
                        await env.setting("rigs.mobile.device", phone.serial)
                    yield env
    finally:
        await phone.stop()
