"""**Open a desktop**'s "Runs in" choice end to end: Debian's Chromium, driven by Playwright, shows the space page
of a real server (real build of ``web/``). The enclosure is the default; choosing a full VM shows the server owner
the images imported for that backend (and only those), and anyone else that the server boots the newest image.
Opening a full VM under KVM where KVM is unusable (the server's probe finds the tiny guest hanging) is refused,
and the server's message, with the probe's reason, is shown inline; nothing opens. No VM boots here. axe finds no
serious or critical violation, light and dark, desktop and phone width; no console errors."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from hangar.rigs.lifecycle.manager import RigManager
from tests.integration.test_rigs_kvm_probe import fake_qemu
from tests.support.chromium import CHROMIUM
from tests.support.desktopimage import plant_image
from tests.support.rpc import RpcClient
from tests.support.server import running_server
from tests.support.webclient import DESKTOP, accessible_everywhere, chromium, open_signed_in

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Makefile APT_PACKAGES)")

REFUSAL = "fullvm-kvm cannot run on this host: a tiny guest did not finish booting under KVM within 0.5 s"


async def test_a_full_vm_is_chosen_when_opening_a_desktop_and_a_kvm_refusal_is_shown_inline(
    tmp_path: Path, dist: Path
) -> None:
    hung = fake_qemu(tmp_path, "exec sleep 3600")  # a KVM guest that never runs an instruction: QEMU never exits
    # A short data directory, as for every rig test (a rig's unix sockets live under it).
    with tempfile.TemporaryDirectory(prefix="hw-", dir="/tmp") as short:
        async with running_server(Path(short), web_dist=dist) as srv, chromium() as browser:
            ws = await srv.new_workspace()
            async with RpcClient(srv.ws_url, srv.owner_token) as owner:
                space = (await owner.call("spaces.create", workspace_id=ws, title="vm"))["id"]
                for image_id, accelerator in (("img-kvm", "fullvm-kvm"), ("img-tcg", "fullvm-tcg")):
                    plant_image(srv.ctx.datadir.root / "rigs", image_id, accelerator)
                probe = srv.ctx.service(RigManager).kvm  # the server's one probe, not yet run: it runs the stand-in
                probe.qemu, probe.deadline_s, probe.device = hung, 0.5, "/dev/null"
                url = f"{srv.url}/workspaces/{ws}/spaces/{space}"

                # The server owner: the enclosure by default, then the KVM images alone, one picked.
                page, console = await open_signed_in(browser, url, srv.owner_token, viewport=DESKTOP)
                runs_in = page.get_by_label("Runs in", exact=True)
                await runs_in.wait_for()
                assert await runs_in.input_value() == "enclosure"
                assert await page.get_by_label("Image", exact=True).count() == 0
                await runs_in.select_option(label="Full VM (KVM)")
                image = page.get_by_label("Image", exact=True)
                await image.wait_for()
                options = await image.locator("option").all_inner_texts()
                assert options[0] == "The newest imported" and len(options) == 2, options
                assert "img-kvm" in options[1] and "img-tcg" not in " ".join(options)
                await image.select_option(value="img-kvm")
                await page.get_by_role("button", name="Open a desktop").click()
                alert = page.get_by_role("alert").filter(has_text=REFUSAL)
                await alert.wait_for()
                assert "fullvm-tcg" in await alert.inner_text()  # the way out is named
                await accessible_everywhere(page)
                assert console.errors == [], console.errors
                assert await owner.call("rig_list", workspace_id=ws) == []

                # The emulated VM lists its own images only.
                await runs_in.select_option(label="Full VM (emulated, slow)")
                options = await page.get_by_label("Image", exact=True).locator("option").all_inner_texts()
                assert len(options) == 2 and "img-tcg" in options[1], options

                # A member may open rigs but not list images: no list, the server's choice said, the same refusal.
                member = await srv.new_user_token(ws, "member", name="Uma")
                page, console = await open_signed_in(browser, url, member, viewport=DESKTOP)
                runs_in = page.get_by_label("Runs in", exact=True)
                await runs_in.select_option(label="Full VM (KVM)")
                await page.get_by_text(
                    "The server boots the newest image the server owner imported for Full VM (KVM)."
                ).wait_for()
                assert await page.get_by_label("Image", exact=True).count() == 0
                await page.get_by_role("button", name="Open a desktop").click()
                await page.get_by_role("alert").filter(has_text=REFUSAL).wait_for()
                await accessible_everywhere(page)
                assert console.errors == [], console.errors
                assert await owner.call("rig_list", workspace_id=ws) == []
