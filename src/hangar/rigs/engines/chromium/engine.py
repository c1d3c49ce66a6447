"""Engine A: Debian's Chromium, headless, driven over the DevTools protocol (``session.CdpSession``).

Chromium runs with ``--headless=new`` (the full browser without a display; the headless-only build compiles audio
out and is not used), ``--no-sandbox`` because the enclosure's seccomp filter refuses the user namespaces
Chromium's own sandbox needs (the enclosure is the sandbox), and an explicit ``--user-data-dir`` because
Chromium 136+ ignores ``--remote-debugging-port`` with the default profile.

The network-quiet flags keep a rig's egress log free of the Google services Chromium calls on its own. Each was
found in Chromium's net log (``--log-net-log``) of a rig idle for a minute after one navigation to a page with a
form, and checked gone from the gate's refusals (with Chromium 150, and again with 156):

- ``--disable-background-networking``, ``--disable-component-update``, ``--disable-sync``: the documented ones;
- ``AutofillServerCommunication``: form-type queries to content-autofill.googleapis.com on every page with a form;
- ``PreconnectToSearch``: a preconnect to the default search engine (www.google.com) every few seconds;
- ``AimEnabled``: the AI-mode eligibility request to www.google.com at start;
- ``NetworkTimeServiceQuerying``: the secure-time request to clients2.google.com;
- the GCM endpoints: nothing in a fresh profile can be switched off to stop its device check-in to
  android.clients.google.com, so its check-in, registration and connection endpoints point at port 9 of the
  engine's own loopback, where nothing listens (a rig user cannot bind below 1024): refused there at once,
  with no lookup and nothing leaving the rig;
- the sign-in and component-update servers, the same way (both new in Chromium 156): the account reconcilor
  posts ``ListAccounts`` to accounts.google.com from start, retrying, and neither ``--allow-browser-signin=false``
  nor the account-preview or AI-mode eligibility features stop it, so ``--gaia-url`` names the dead port (the
  browser's own sign-in is never wanted in a rig);
  an on-demand component install (app id ``ceofaddefefcbblgcgnibnonglccbfja``) asks update.googleapis.com
  despite ``--disable-component-update``, so ``--component-updater=url-source=`` names the dead port too;
- the spell checker: typing into a field makes it fetch its dictionary (redirector.gvt1.com/edgedl/chrome/dict/...),
  and no switch stops it, so the profile starts with spell checking off and no dictionary (``PREFERENCES``, the
  profile's ``Default/Preferences``; checked in the net log with Chromium 156: ``enable_spellchecking`` alone, or an
  empty dictionary list alone, still fetches).

A dev-domain CA is trusted through the NSS database Chromium reads: from M146 on that is
``$HOME/.local/share/pki/nssdb`` (Chromium's docs/linux/cert_management.md), created empty when absent
(checked with Chromium 156: a CA added there is trusted for a loopback HTTPS page, ``tests/conformance``).
"""

from __future__ import annotations

import json

from hangar.rigs.engines.chromium.session import CdpSession
from hangar.rigs.engines.launch import Endpoint, EngineProcess, EngineRecipe, LaunchContext, LaunchPlan
from hangar.rigs.engines.session import EngineSession

QUIET_FEATURES = (
    "Translate",
    "MediaRouter",
    "OptimizationHints",
    "AutofillServerCommunication",
    "PreconnectToSearch",
    "AimEnabled",
    "NetworkTimeServiceQuerying",
)
_NOWHERE = "127.0.0.1:9"  # the engine's own loopback, a port the rig user cannot listen on
DEAD_ENDPOINTS = (  # services with no off switch, sent where nothing answers
    ("gcm-checkin-url", f"http://{_NOWHERE}/checkin"),
    ("gcm-registration-url", f"http://{_NOWHERE}/register"),
    ("gcm-mcs-endpoint", f"https://{_NOWHERE}"),
    ("gaia-url", f"http://{_NOWHERE}"),
)
# The component updater takes its server as an option of one switch rather than a switch of its own.
COMPONENT_UPDATER = f"url-source=http://{_NOWHERE}/"
PROFILE = ".chromium"  # under the engine's home
PREFERENCES = {
    "browser": {"enable_spellchecking": False},
    "spellcheck": {"dictionaries": [], "dictionary": "", "use_spelling_service": False},
}


def chromium_argv(ctx: LaunchContext) -> tuple[str, ...]:
    return (
        "chromium",
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--remote-debugging-address=127.0.0.1",
        f"--remote-debugging-port={ctx.port}",
        f"--user-data-dir={ctx.home}/{PROFILE}",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--disable-features={','.join(QUIET_FEATURES)}",
        *(f"--{switch}={url}" for switch, url in DEAD_ENDPOINTS),
        f"--component-updater={COMPONENT_UPDATER}",
        "--password-store=basic",  # no keyring daemon in a rig
        f"--window-size={ctx.width},{ctx.height}",
        ctx.home_url,
    )


# Chromium reads the legacy ``~/.pki/nssdb`` instead when it exists, so the CA goes there too in that case only.
# ``certutil -A`` creates a missing database itself (without a password, as Chromium's own would be), so a boot
# runs one certutil, not two: this step runs before the engine starts and is on every browser rig's boot path.
_TRUST_SCRIPT = """set -e
ca=$1 home=$2
for dir in "$home/.local/share/pki/nssdb" "$home/.pki/nssdb"; do
  if [ "$dir" = "$home/.pki/nssdb" ] && [ ! -d "$dir" ]; then continue; fi
  mkdir -p "$dir"
  certutil -A -d "sql:$dir" -t C,, -n hangar-dev -i "$ca"
done
"""


def _trust_ca(ctx: LaunchContext, ca_file: str) -> tuple[EngineProcess, ...]:
    return (EngineProcess("trust-ca", ("sh", "-c", _TRUST_SCRIPT, "trust-ca", ca_file, ctx.home)),)


def plan(ctx: LaunchContext) -> LaunchPlan:
    setup = _trust_ca(ctx, ctx.ca_file) if ctx.ca_file else ()
    files = {f"{PROFILE}/Default/Preferences": json.dumps(PREFERENCES).encode()}
    return LaunchPlan(files=files, setup=setup, processes=(EngineProcess("chromium", chromium_argv(ctx)),))


async def connect(endpoint: Endpoint, ctx: LaunchContext) -> EngineSession:
    return await CdpSession.open(endpoint, (ctx.width, ctx.height), ctx.home_url)


RECIPE = EngineRecipe(engine="engine-a", relay=True, plan=plan, connect=connect, boot_timeout_s=60.0)
