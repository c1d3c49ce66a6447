"""Event types and server settings exist only where a part declares them (``Part.events``,
``Part.server_settings``): nothing is registered by being used."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hangar.config import Settings
from hangar.core.confine import SETTING_TRUSTED_HOST_EXEC
from hangar.core.context import AppContext
from hangar.core.event_types import DomainEvent
from hangar.errors import InvalidArgs
from hangar.identity import IdentityService
from hangar.identity.part import IDENTITY_PART
from hangar.rigs.lifecycle.budget import MEMORY_BUDGET_SETTING
from hangar.rigs.part import make_rigs_part
from hangar.server.context_factory import open_context


class Undeclared(DomainEvent):
    type = "nobody.declaredThis"


@pytest.fixture
async def ctx(tmp_path: Path) -> AsyncIterator[AppContext]:
    async with open_context(Settings(data_dir=tmp_path), parts=[IDENTITY_PART]) as app:
        yield app


async def test_an_event_type_no_part_declares_is_not_recorded(ctx: AppContext) -> None:
    identity = ctx.service(IdentityService)
    owner = await identity.ensure_server_owner()
    from hangar.identity.creation import create_workspace

    ws = await create_workspace(ctx, "W", owner.id, by="test")
    with pytest.raises(ValueError, match=r"'nobody.declaredThis' \(Undeclared\) is not declared by any part"):
        await ctx.bus.publish(Undeclared(workspace_id=ws.id))
    assert [e.type for e in await ctx.bus.replay(ws.id, after_seq=0)] == ["identity.workspaceCreated"]


async def test_server_settings_are_the_declared_keys_validated_on_write(ctx: AppContext) -> None:
    identity = ctx.service(IdentityService)
    # The kernel's switch is declared by the kernel part, which every context opens.
    with pytest.raises(InvalidArgs, match="trustedHostExec must be true or false"):
        await identity.set_setting(SETTING_TRUSTED_HOST_EXEC, "yes")
    await identity.set_setting(SETTING_TRUSTED_HOST_EXEC, True)
    assert await identity.get_setting(SETTING_TRUSTED_HOST_EXEC) is True
    # The rigs part is not part of this context, so its key is nobody's here.
    with pytest.raises(ValueError, match=r"'rigs\.memoryBudgetMb' is not declared by any part"):
        await identity.set_setting(MEMORY_BUDGET_SETTING, 4096)
    assert await identity.get_setting(MEMORY_BUDGET_SETTING) is None


async def test_a_part_declares_its_server_setting(tmp_path: Path) -> None:
    rigs = make_rigs_part()
    assert [s.key for s in rigs.server_settings] == [
        MEMORY_BUDGET_SETTING,
        "rigs.hostsFirst",
        "rigs.packRefreshHours",
        "rigs.mobile.device",
        "rigs.mobile.avd",
    ]
    spec = rigs.server_settings[0]
    assert spec.validate(4096) == 4096
    for bad in (True, 100, "4096"):
        with pytest.raises(InvalidArgs, match="memoryBudgetMb must be a whole number"):
            spec.validate(bad)
