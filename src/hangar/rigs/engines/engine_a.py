"""Engine A: Debian's Chromium, headless, driven over the DevTools protocol (``cdp_session.CdpSession``).

Chromium runs with ``--headless=new`` (the full browser without a display; the headless-only build compiles audio
out and is not used), ``--no-sandbox`` because the enclosure's seccomp filter refuses the user namespaces
Chromium's own sandbox needs (the enclosure is the sandbox), and an explicit ``--user-data-dir`` because
Chromium 136+ ignores ``--remote-debugging-port`` with the default profile. The network-quiet flags keep a closed
rig's egress log free of Google services Chromium would otherwise call at start.

A dev-domain CA is trusted through the NSS database Chromium reads: from M146 on that is
``$HOME/.local/share/pki/nssdb`` (Chromium's docs/linux/cert_management.md), created empty when absent
(checked with Chromium 156: a CA added there is trusted for a loopback HTTPS page, ``tests/conformance``).
"""

from __future__ import annotations

from hangar.rigs.engines.cdp_session import CdpSession
from hangar.rigs.engines.launch import Endpoint, EngineProcess, EngineRecipe, LaunchContext, LaunchPlan
from hangar.rigs.engines.session import EngineSession


def chromium_argv(ctx: LaunchContext) -> tuple[str, ...]:
    return (
        "chromium",
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--remote-debugging-address=127.0.0.1",
        f"--remote-debugging-port={ctx.port}",
        f"--user-data-dir={ctx.home}/.chromium",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-features=Translate,MediaRouter,OptimizationHints",
        "--password-store=basic",  # no keyring daemon in a rig
        f"--window-size={ctx.width},{ctx.height}",
        ctx.home_url,
    )


# Chromium reads the legacy ``~/.pki/nssdb`` instead when it exists, so the CA goes there too in that case only.
_TRUST_SCRIPT = """set -e
ca=$1 home=$2
for dir in "$home/.local/share/pki/nssdb" "$home/.pki/nssdb"; do
  if [ "$dir" = "$home/.pki/nssdb" ] && [ ! -d "$dir" ]; then continue; fi
  mkdir -p "$dir"
  [ -f "$dir/cert9.db" ] || certutil -N -d "sql:$dir" --empty-password
  certutil -A -d "sql:$dir" -t C,, -n hangar-dev -i "$ca"
done
"""


def _trust_ca(ctx: LaunchContext, ca_file: str) -> tuple[EngineProcess, ...]:
    return (EngineProcess("trust-ca", ("sh", "-c", _TRUST_SCRIPT, "trust-ca", ca_file, ctx.home)),)


def plan(ctx: LaunchContext) -> LaunchPlan:
    setup = _trust_ca(ctx, ctx.ca_file) if ctx.ca_file else ()
    return LaunchPlan(files={}, setup=setup, processes=(EngineProcess("chromium", chromium_argv(ctx)),))


async def connect(endpoint: Endpoint, ctx: LaunchContext) -> EngineSession:
    return await CdpSession.open(endpoint, (ctx.width, ctx.height))


RECIPE = EngineRecipe(engine="engine-a", relay=True, plan=plan, connect=connect, boot_timeout_s=60.0)
