"""Where a repo's clone and its later fetches may go, decided by who registered it, and how host git is held to it.

Host git runs as the server: from this machine's place in the network (its loopback, its own addresses, the
private network, the cloud's metadata service), with the server user's SSH identity (keys, agent) and its git and
curl configuration (credential helpers, ``.netrc``, URL rewrites). A repo the server owner registered uses all of
that, as any git of the owner's would. A workspace admin's uses none of it unless the owner says so:

- a repository on this disk (a path, ``file://``): only under a folder ``localRepoRoots`` names
  (``hangar admin local-repo-roots``);
- ``ssh://`` and ``user@host:path``: only to a host ``trustedRepoHosts`` names (``hangar admin trusted-repo-hosts``),
  the owner lending the server's SSH identity to that host;
- ``https://`` and ``http://``: the host is resolved here and every answer checked against the kernel's address
  rules (``hangar.core.addresses``: never loopback, this host's own addresses, link-local and metadata; private
  networks only for a host ``trustedRepoHosts`` names); git connects to exactly the addresses checked
  (``http.curloptResolve``), follows no redirect (nor a dumb server's alternates) and reads none of the server
  user's configuration, credentials or proxies;
- ``git://``: the server owner's only. Git cannot be told which address to connect to for it (no equivalent of
  ``curloptResolve``), so a name that answers differently at connect time would get past the check; the protocol
  is neither authenticated nor encrypted, and the public forges no longer serve it;
- a remote helper (``<transport>::<address>``: ``ext::`` runs a command, ``fd::``...): nobody's.

The rules are applied when a repo is registered and again before every fetch of its recorded origin (each
checkout's refresh, a pull request's head): DNS and the settings may have changed since.
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from hangar.core.addresses import AddressRefused, is_valid_name, normalize_host, permitted, resolve
from hangar.core.context import AppContext
from hangar.core.settings import SettingSpec
from hangar.errors import Forbidden, InvalidArgs
from hangar.identity import IdentityService
from hangar.workspace.git import Reach

SETTING_LOCAL_REPO_ROOTS = "localRepoRoots"
LOCAL_REPO_ROOTS_FIX = "hangar admin local-repo-roots <folder>..."
MAX_LOCAL_REPO_ROOTS = 32
SETTING_TRUSTED_REPO_HOSTS = "trustedRepoHosts"
TRUSTED_REPO_HOSTS_FIX = "hangar admin trusted-repo-hosts <host>..."
MAX_TRUSTED_REPO_HOSTS = 32
RESOLVE_LIMIT_S = 30.0  # a resolver that does not answer fails the clone like a host that does not resolve

URL_FORMS = "https://, http://, ssh://, git://, file:// or user@host:path"
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
_HELPER = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*::")  # git's <transport>::<address>, checked before anything else
_SCP = re.compile(r"^([\w.-]+)@([\w.-]+):(\S+)$", re.ASCII)
# The authority of a URL, strictly: what git's parser, curl's and ours all read alike (no backslash, no second
# "@", no percent sign or non-ASCII letter in the host), so the host checked is the host connected to.
_AUTHORITY = re.compile(
    r"^(?:(?P<user>[\w.~+-]+)@)?(?P<host>[A-Za-z0-9_.-]+|\[[0-9A-Fa-f:.]+\])(?::(?P<port>\d{1,5}))?$", re.ASCII
)
_PORTS = {"https": 443, "http": 80, "ssh": 22, "git": 9418}
_OWNERS_TRANSPORTS = ("file", "git", "http", "https", "ssh")  # what git itself allows by default, less ext::


def _allow(*transports: str) -> tuple[str, ...]:
    return tuple(arg for t in transports for arg in ("-c", f"protocol.{t}.allow=always"))


@dataclass(frozen=True)
class Source:
    """A clone URL taken apart: its transport, and the host and port it connects to (the path for ``file``)."""

    transport: str
    host: str = ""
    port: int = 0
    path: str = ""


def parse_url(url: str, field: str = "url") -> Source:
    """A clone URL's transport and host, or ``InvalidArgs`` naming ``field``."""
    if _HELPER.match(url):
        raise InvalidArgs(
            f"{field}: {url!r} names a git remote helper (<transport>::<address>, such as ext:: or fd::), which "
            f"would run a program on this server; give a clone URL ({URL_FORMS})",
            field=field,
        )
    if "\\" in url or not url.isprintable() or any(c.isspace() for c in url):
        raise InvalidArgs(f"{field}: {url!r} is not a clone URL ({URL_FORMS})", field=field)
    scheme = _SCHEME.match(url)
    if scheme is None:
        scp = _SCP.match(url)
        if scp is None:
            raise InvalidArgs(f"url {url!r} is not a clone URL ({URL_FORMS})", field=field)
        return _remote("ssh", scp.group(1), scp.group(2), None, url, field)
    transport = scheme.group(1).lower()
    if transport == "file":
        return Source("file", path=unquote(urlsplit(url).path))
    if transport not in _PORTS:
        raise InvalidArgs(f"url {url!r} is not a clone URL ({URL_FORMS})", field=field)
    authority = url[scheme.end() :].split("/", 1)[0]
    parts = _AUTHORITY.match(authority)
    if parts is None:
        raise InvalidArgs(
            f"{field}: the host of {url!r} must be a host name, an IP address or an IPv6 address in brackets, "
            "with an optional port",
            field=field,
        )
    return _remote(transport, parts["user"], parts["host"], parts["port"], url, field)


def _remote(transport: str, user: str | None, host: str, port: str | None, url: str, field: str) -> Source:
    # A host or user that starts with "-" would be read by ssh as an option.
    if host.startswith("-") or (user or "").startswith("-"):
        raise InvalidArgs(f"{field}: the host and user of {url!r} must not start with '-'", field=field)
    number = int(port) if port else _PORTS[transport]
    if not 0 < number < 65536:
        raise InvalidArgs(f"{field}: the port of {url!r} must be from 1 to 65535", field=field)
    return Source(transport, host.strip("[]"), number)  # as written: curl matches the pinned address on it


def _host_key(host: str) -> str:
    """A host as ``trustedRepoHosts`` holds it and as it is compared: a lower-case name without a final dot, or an
    address in its canonical form."""
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return normalize_host(host)


def _literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _check_roots(value: Any) -> list[str]:
    if (
        not isinstance(value, list)
        or len(value) > MAX_LOCAL_REPO_ROOTS
        or not all(isinstance(v, str) and v.startswith("/") and "\0" not in v and len(v) <= 4096 for v in value)
    ):
        raise InvalidArgs(
            f"{SETTING_LOCAL_REPO_ROOTS} must be a list of at most {MAX_LOCAL_REPO_ROOTS} absolute folder paths",
            field=SETTING_LOCAL_REPO_ROOTS,
        )
    return [os.path.normpath(v) for v in value]


def _check_hosts(value: Any) -> list[str]:
    wrong = InvalidArgs(
        f"{SETTING_TRUSTED_REPO_HOSTS} must be a list of at most {MAX_TRUSTED_REPO_HOSTS} host names or IP addresses",
        field=SETTING_TRUSTED_REPO_HOSTS,
    )
    if not isinstance(value, list) or len(value) > MAX_TRUSTED_REPO_HOSTS or not all(isinstance(v, str) for v in value):
        raise wrong
    hosts = [_host_key(v) for v in value]
    if not all(_literal(h) or is_valid_name(h) for h in hosts):
        raise wrong
    return list(dict.fromkeys(hosts))


LOCAL_REPO_ROOTS_SPEC = SettingSpec(
    SETTING_LOCAL_REPO_ROOTS,
    "Folders whose git repositories workspace admins may register by path or file:// URL (the server owner may "
    "register any).",
    _check_roots,
)
TRUSTED_REPO_HOSTS_SPEC = SettingSpec(
    SETTING_TRUSTED_REPO_HOSTS,
    "Hosts whose repositories workspace admins may register over ssh (with this server's SSH identity) and reach at "
    "private network addresses (the server owner may register any).",
    _check_hosts,
)


async def _setting(app: AppContext, key: str) -> list[str]:
    """A list setting as stored, read on every call: the command line may change it while the server runs."""
    value = await app.service(IdentityService).get_setting(key)
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


async def local_repo_roots(app: AppContext) -> list[Path]:
    """The folders of ``localRepoRoots`` (symlinks resolved)."""
    roots = [r for r in await _setting(app, SETTING_LOCAL_REPO_ROOTS) if r.startswith("/")]
    return [Path(p) for p in await asyncio.to_thread(lambda: [os.path.realpath(r) for r in roots])]


async def trusted_repo_hosts(app: AppContext) -> frozenset[str]:
    return frozenset(_host_key(h) for h in await _setting(app, SETTING_TRUSTED_REPO_HOSTS))


async def may_read(app: AppContext, local: Path, field: str, by_owner: bool, subject: str | None = None) -> Path:
    """Where a local repository really is (symlinks resolved), when its registrant may have the server read it.
    ``subject`` names a recorded origin being fetched again; without it, ``field`` is what is being registered."""
    if "\0" in str(local) or not local.is_absolute():
        raise InvalidArgs(f"{field} must name an absolute path on this server", field=field)
    real = Path(await asyncio.to_thread(os.path.realpath, local))
    if by_owner:
        return real
    roots = await local_repo_roots(app)
    if any(real.is_relative_to(root) for root in roots):
        return real
    where = f"under {', '.join(str(r) for r in roots)}" if roots else "under a folder the server owner names"
    if subject is not None:
        raise Forbidden(
            f"{field}: {subject} is a repository on this server's disk, read with the server's rights, so only the "
            f"server owner's repos are fetched from there, or a workspace admin's {where} ({LOCAL_REPO_ROOTS_FIX})"
        )
    raise Forbidden(
        f"{field}: a repository on this server's disk is read with the server's rights, so only the server "
        f"owner registers one by {field}, or a workspace admin one {where} ({LOCAL_REPO_ROOTS_FIX}); "
        "register it by its clone URL instead"
    )


LOCAL = Reach(_allow("file"), server_identity=True)  # a repository on this disk, once its path passed ``may_read``


async def reach(
    app: AppContext, kind: str, source: str, *, by_owner: bool, field: str, origin_of: str | None = None
) -> Reach:
    """How host git may reach ``source`` (a ``path`` or a ``url``, as ``kind`` says) for a repo the server owner
    registered (``by_owner``) or a workspace admin did: being registered, or (``origin_of``: its name) fetched
    again from its recorded origin. ``Forbidden`` naming ``field`` when the rules refuse it, ``InvalidArgs`` when
    its host does not resolve."""
    subject = source if origin_of is None else f"the origin of repo {origin_of} ({source})"
    if kind == "path":
        await may_read(app, Path(source), field, by_owner, None if origin_of is None else subject)
        return LOCAL
    where = parse_url(source, field)
    if where.transport == "file":
        await may_read(app, Path(where.path), field, by_owner, None if origin_of is None else subject)
        return LOCAL
    if by_owner:
        return Reach(_allow(*_OWNERS_TRANSPORTS), server_identity=True)
    trusted = _host_key(where.host) in await trusted_repo_hosts(app)
    if where.transport == "git":
        raise Forbidden(
            f"{field}: {subject} uses git://, which only the server owner registers: git cannot be held to an "
            "address checked here for it, and the protocol is neither authenticated nor encrypted; register its "
            "https:// URL instead"
        )
    if where.transport == "ssh":
        if not trusted:
            raise Forbidden(
                f"{field}: {subject} would be fetched with this server's own SSH identity (its keys and agent), so "
                "only the server owner registers an ssh URL, or a workspace admin one to a host the server owner "
                f"names ({TRUSTED_REPO_HOSTS_FIX}); register its https:// URL instead"
            )
        # Checked, not pinned: ssh verifies the named host's key, which a machine a changed record points at
        # does not hold.
        await _addresses(where, named=True, field=field, subject=subject)
        return Reach(_allow("ssh"), server_identity=True)
    addresses = await _addresses(where, named=trusted, field=field, subject=subject)
    pinned = ",".join(f"[{a}]" if ":" in a else a for a in addresses)
    return Reach(
        (
            *_allow("http", "https"),
            # A redirect (or a dumb server's alternates) would send git to a host nobody checked.
            "-c", "http.followRedirects=false",
            *(() if _literal(where.host) else ("-c", f"http.curloptResolve={where.host}:{where.port}:{pinned}")),
        )
    )  # fmt: skip


async def _addresses(where: Source, *, named: bool, field: str, subject: str) -> list[str]:
    """The addresses of ``where.host`` a workspace admin's clone may connect to (every answer checked)."""
    if _literal(where.host):
        answers = [where.host]
    else:
        try:
            answers = await asyncio.wait_for(resolve(where.host, where.port), RESOLVE_LIMIT_S)
        except (OSError, TimeoutError) as exc:
            said = str(exc) or "no answer in time"
            raise InvalidArgs(
                f"{field}: {subject}: the host {where.host} does not resolve ({said})", field=field
            ) from None
    try:
        return permitted(
            where.host,
            answers,
            named=named,
            who="a workspace admin's clones",
            namer=f"the server owner names the host ({TRUSTED_REPO_HOSTS_FIX})",
        )
    except AddressRefused as exc:
        raise Forbidden(f"{field}: {subject} is not reached from this server: {exc.reason}") from None
