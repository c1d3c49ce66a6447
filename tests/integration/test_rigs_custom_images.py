"""Custom terminal images: refused at the field, checked again at boot, never pretended."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from hangar.core.settings import WorkspaceSettings
from hangar.rigs.images.settings import EXEC_IMAGE_KEY
from tests.integration.rigs_env import rigs_server
from tests.support.rpc import RpcError

pytestmark = pytest.mark.packs("terminal")


@pytest.mark.parametrize(
    "value",
    ["/var/lib/images/ubuntu", "./ubuntu.tar", "ubuntu.tar.gz", "--privileged", "-v", "docker-archive:x.tar", 42],
)
async def test_the_field_refuses_what_is_not_a_registry_reference(tmp_path: Path, value: object) -> None:
    async with rigs_server(tmp_path) as env:
        with pytest.raises(RpcError) as info:
            await env.call("settings.set", key=EXEC_IMAGE_KEY, value=value)
        assert info.value.code == "invalid_args" and EXEC_IMAGE_KEY in info.value.message
        assert (await env.call("settings.get"))[EXEC_IMAGE_KEY]["value"] is None


async def test_a_member_cannot_set_images(tmp_path: Path) -> None:
    async with rigs_server(tmp_path) as env:
        from tests.support.rpc import RpcClient

        token = await env.srv.new_user_token(env.ws, "member", name="m")
        async with RpcClient(env.srv.ws_url, token) as member:
            with pytest.raises(RpcError) as info:
                await member.call("settings.set", workspace_id=env.ws, key=EXEC_IMAGE_KEY, value="ubuntu:24.04")
        assert info.value.code == "forbidden"


async def test_an_invalid_stored_value_is_ignored_loudly_and_the_default_boots(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with rigs_server(tmp_path) as env:
        # A value stored before today's rules (written around the validator, as an old row would be).
        store = env.srv.ctx.service(WorkspaceSettings)
        await store.write_unchecked(env.ws, EXEC_IMAGE_KEY, "--entrypoint=/bin/sh", by="legacy")
        with caplog.at_level(logging.ERROR, logger="hangar.rigs.images.settings"):
            rig = await env.open()
        assert any("IGNORING invalid" in r.getMessage() for r in caplog.records)
        assert (await env.exec(rig, "echo booted"))["stdout"] == "booted\n"
        log = await env.call("rig.actionLog", rigId=rig)
        notices = [row for row in log if row["verb"] == "imageNotice"]
        assert notices and "ignored the invalid" in str(notices[0])


async def test_a_valid_image_is_stored_and_the_enclosure_says_it_boots_its_own_pack(tmp_path: Path) -> None:
    async with rigs_server(tmp_path) as env:
        saved = await env.call("settings.set", key=EXEC_IMAGE_KEY, value="ghcr.io/acme/devbox:1.2")
        assert saved == {"key": EXEC_IMAGE_KEY, "value": "ghcr.io/acme/devbox:1.2"}
        rig = await env.open()
        log = await env.call("rig.actionLog", rigId=rig)
        notice = next(row for row in log if row["verb"] == "imageNotice")
        assert "microvm backend, which is planned" in str(notice)
        await env.call("settings.set", key=EXEC_IMAGE_KEY, value=None)
        assert (await env.call("settings.get"))[EXEC_IMAGE_KEY]["value"] is None
