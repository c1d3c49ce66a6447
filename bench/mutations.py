"""The mutations ``bench/mutate.py`` puts into the code, one at a time: each a file, an exact snippet found once in
it, its replacement (the bug), and the tests that must catch it.

Two kinds, counted apart: a **guard** removed outright (a check of access, a lifetime, a limit, a refusal) and a
**subtle** bug (a boundary, an off-by-one, a race, rare input). ``item`` is the entry of issue 31 a mutation stands
for (``31.1`` to ``31.14``; ``31.t`` a test that could not fail), or ``hole`` for the same kind of gap found beside
one. ``also`` names the test files that were already about the same code, so that measuring the suite of an older
revision (``--rev``) gives it every chance. ``tests/unit/test_mutations.py`` checks the list is well formed: every
snippet is found exactly once and every test named exists.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["guard", "subtle"]
KINDS: dict[str, str] = {"guard": "Guard removals", "subtle": "Subtle bugs"}


@dataclass(frozen=True)
class Mutation:
    id: str
    kind: Kind
    item: str
    what: str  # the bug, in one sentence
    file: str
    find: str
    replace: str
    tests: tuple[str, ...]
    # Test files that were already about this (``--rev`` runs them too when measuring an older suite).
    also: tuple[str, ...] = ()


OAUTH = "tests/integration/test_oauth_edges.py"
MCP = "tests/integration/test_mcp_follows.py"
HOST = "tests/integration/test_trusted_host_exec.py"
LANES = "tests/integration/test_rigs_browser_lanes.py"
GRANTS = "tests/integration/test_rigs_clipboard_grants.py"
REPLIES = "tests/unit/chat/replies/test_replies.py"
BRIDGE = "tests/integration/test_chat_bridge_rules.py"
REDUCERS = "tests/unit/pipelines/test_helpers.py"
LIMITS = "tests/unit/httpkit/test_ratelimit.py"

# What the suite already had about each area (``also``).
MCP_OLD = ("tests/integration/test_mcp_product.py", "tests/integration/test_mcp_session_caps.py")
OAUTH_OLD = ("tests/integration/test_oauth_server.py",)
LIMITS_OLD = ("tests/integration/test_oauth_server.py", "tests/integration/test_signin_limits.py")
HOST_OLD = ("tests/integration/test_confined_user_code.py", "tests/integration/test_agents_command.py")
CLIPBOARD_OLD = ("tests/integration/test_web_clipboard_access.py", "tests/integration/test_rigs_browser_lanes.py")
AUTHORITY_OLD = ("tests/integration/test_many_processes.py", "tests/integration/test_roles_and_guardrails.py")
PIPELINES_OLD = ("tests/unit/pipelines/test_algo.py", "tests/unit/pipelines/test_engine.py")

MUTATIONS: list[Mutation] = [
    # -- guards removed outright ---------------------------------------------------------------------------------
    Mutation(
        "mcp-notify-recheck",
        "guard",
        "31.1",
        "a member removed from a workspace keeps receiving /mcp resource updates (no access check per event)",
        "src/hangar/rpc/dispatcher.py",
        "                if not first:\n                    await gate.admit()\n",
        "                if not first:\n                    pass\n",
        (
            "tests/integration/test_mcp_product.py::test_a_removed_member_hears_of_nothing_posted_after_the_removal",
            "tests/integration/test_watches_end.py::test_nothing_posted_after_a_removal_is_acknowledged_reaches_the_removed_guest",
            f"{MCP}::test_a_removed_members_listen_stream_ends_and_hears_nothing_more",
        ),
        also=MCP_OLD,
    ),
    Mutation(
        "oauth-code-expiry",
        "guard",
        "31.2",
        "an authorization code past its lifetime is accepted",
        "src/hangar/oauth/grants.py",
        '        if row.expires_at <= now:\n            raise _invalid_grant("the authorization code has expired")\n',
        "",
        (f"{OAUTH}::test_an_authorization_code_lives_two_minutes",),
        also=OAUTH_OLD,
    ),
    Mutation(
        "oauth-refresh-expiry",
        "guard",
        "31.3",
        "a refresh token past its lifetime is accepted",
        "src/hangar/oauth/grants.py",
        "        if row.expires_at <= now:\n"
        '            raise _invalid_grant("the refresh token has expired; sign in again")\n',
        "",
        (f"{OAUTH}::test_a_refresh_token_lives_thirty_days",),
        also=OAUTH_OLD,
    ),
    Mutation(
        "oauth-pair-limit",
        "guard",
        "31.4",
        "/auth/oauth/pair without its limit of failed attempts",
        "src/hangar/oauth/part.py",
        'failures_limited("pair", a.page_route(a.pair))',
        "a.page_route(a.pair)",
        (f"{OAUTH}::test_wrong_pairing_codes_on_the_consent_page_are_limited_and_refill_per_minute",),
        also=LIMITS_OLD,
    ),
    Mutation(
        "oauth-register-limit",
        "guard",
        "hole",
        "/auth/oauth/register without its limit of registrations per address",
        "src/hangar/oauth/part.py",
        'rate_limited("register", e.register)',
        "e.register",
        (f"{OAUTH}::test_registrations_are_limited_per_address",),
        also=LIMITS_OLD,
    ),
    Mutation(
        "oauth-authorize-limit",
        "guard",
        "hole",
        "/auth/oauth/authorize without its limit of sign-ins started and never finished",
        "src/hangar/oauth/part.py",
        'rate_limited("signin-start", a.page_route(a.authorize))',
        "a.page_route(a.authorize)",
        (f"{OAUTH}::test_authorizations_started_and_never_finished_are_limited",),
        also=LIMITS_OLD,
    ),
    Mutation(
        "oauth-decide-limit",
        "guard",
        "hole",
        "/auth/oauth/decide without its limit of failed attempts",
        "src/hangar/oauth/part.py",
        'failures_limited("signin", a.page_route(a.decide), completes="signin-start")',
        "a.page_route(a.decide)",
        (f"{OAUTH}::test_failed_decisions_and_sso_returns_are_limited",),
        also=LIMITS_OLD,
    ),
    Mutation(
        "oauth-sso-return-limit",
        "guard",
        "hole",
        "the OAuth sign-in's SSO return without its limit of failed attempts",
        "src/hangar/oauth/part.py",
        'failures_limited("signin", a.page_route(a.sso_return))',
        "a.page_route(a.sso_return)",
        (f"{OAUTH}::test_failed_decisions_and_sso_returns_are_limited",),
        also=LIMITS_OLD,
    ),
    Mutation(
        "oidc-callback-limit",
        "guard",
        "hole",
        "/oidc/callback without its limit of failed sign-ins",
        "src/hangar/sso/oidc/routes.py",
        'failures_limited("signin", _guarded(_callback), completes="signin-start")',
        "_guarded(_callback)",
        ("tests/integration/test_signin_limits.py::test_failed_oidc_callbacks_are_limited_per_address",),
    ),
    Mutation(
        "host-exec-env",
        "guard",
        "31.5",
        "under trusted host execution, user code receives the server's whole environment",
        "src/hangar/core/confine.py",
        "        env = {k: os.environ[k] for k in HOST_ENV_KEPT if k in os.environ}\n",
        "        env = dict(os.environ)\n",
        (f"{HOST}::test_code_run_on_the_host_gets_a_minimal_environment_not_the_servers",),
        also=HOST_OLD,
    ),
    Mutation(
        "host-exec-off",
        "guard",
        "31.6",
        "`hangar admin trusted-host-exec off` leaves trusted host execution on",
        "src/hangar/core/confine.py",
        "        return (await self._read(SETTING_TRUSTED_HOST_EXEC)) is True\n",
        "        return (await self._read(SETTING_TRUSTED_HOST_EXEC)) is not None\n",
        (f"{HOST}::test_turning_trusted_host_execution_off_refuses_user_code_again",),
        also=HOST_OLD,
    ),
    Mutation(
        "clipboard-revoke-others",
        "guard",
        "31.7",
        "anyone can revoke another person's clipboard grants",
        "src/hangar/rigs/ops/clipboard.py",
        "    if user_id != ctx.principal.user_id and not ctx.principal.is_server_owner:\n"
        '        raise Forbidden("only the server owner revokes another person\'s clipboard grants")\n',
        "",
        (f"{GRANTS}::test_only_the_server_owner_revokes_another_persons_grants",),
        also=CLIPBOARD_OLD,
    ),
    Mutation(
        "clipboard-list-everyone",
        "guard",
        "hole",
        "anyone can list everyone's clipboard grants",
        "src/hangar/rigs/ops/clipboard.py",
        "    if args.everyone and not ctx.principal.is_server_owner:\n"
        '        raise Forbidden("only the server owner lists everyone\'s clipboard grants")\n',
        "",
        (f"{GRANTS}::test_only_the_server_owner_lists_everyones_grants",),
        also=CLIPBOARD_OLD,
    ),
    Mutation(
        "liveview-input-control",
        "guard",
        "31.8",
        "a watcher's live-view input is applied while another person holds control",
        "src/hangar/rigs/lanes/viewinput.py",
        "        if self.live.controller != principal.user_id:\n",
        "        if self.live.controller is None:\n",
        (f"{LANES}::test_a_watchers_input_is_ignored_while_another_person_holds_control",),
    ),
    Mutation(
        "liveview-input-credential",
        "guard",
        "hole",
        "live-view input through a read-only credential is applied while its person holds control",
        "src/hangar/rigs/lanes/viewinput.py",
        '        await authorize_change(self.access, "watch", "input on the live view")\n',
        "",
        (f"{LANES}::test_a_read_only_credential_never_drives_the_live_view",),
    ),
    Mutation(
        "egress-tls-name",
        "guard",
        "31.t",
        "the egress gate forwards a TLS connection whatever name it asks for",
        "src/hangar/rigs/egress/gate.py",
        "        if name is None or not self.allowed(name):\n",
        "        if name is None:\n",
        ("tests/unit/rigs/egress/test_gate.py::test_tls_passes_allowed_sni_and_drops_others",),
    ),
    Mutation(
        "cgroups-v2-pids",
        "guard",
        "31.t",
        "a cgroup v2 host without the pids controller is taken as able to run rigs",
        "src/hangar/rigs/backends/enclosure/cgroups.py",
        '        missing = {"memory", "cpu", "pids"} - have\n',
        '        missing = {"memory", "cpu"} - have\n',
        ("tests/unit/rigs/backends/test_probe.py::test_cgroups_are_detected_with_every_controller_rigs_need",),
    ),
    Mutation(
        "browser-engine-lost",
        "guard",
        "31.t",
        "a browser engine drops out of the registry (its tests used to skip)",
        "src/hangar/rigs/engines/registry.py",
        "    webkit.RECIPE.engine: webkit.RECIPE,  # engine-c\n",
        "",
        ("tests/integration/test_rigs_browser.py::test_each_engine_gets_its_own_rig",),
    ),
    # -- subtle bugs -----------------------------------------------------------------------------------------------
    Mutation(
        "mcp-follow-cap",
        "subtle",
        "31.9",
        "a session can follow 33 resources though the cap is 32",
        "src/hangar/rpc/mcp/subscriptions.py",
        "sum(k[0] == session_id for k in self.following) >= MAX_SUBSCRIPTIONS:",
        "sum(k[0] == session_id for k in self.following) > MAX_SUBSCRIPTIONS:",
        (f"{MCP}::test_a_session_follows_at_most_32_resources",),
        also=MCP_OLD,
    ),
    Mutation(
        "mcp-listen-cap",
        "subtle",
        "hole",
        "a listen stream can follow 33 resources though the cap is 32",
        "src/hangar/rpc/mcp/subscriptions.py",
        "        if len(uris) > MAX_SUBSCRIPTIONS:\n",
        "        if len(uris) > MAX_SUBSCRIPTIONS + 1:\n",
        (f"{MCP}::test_a_listen_stream_follows_at_most_32_resources",),
        also=MCP_OLD,
    ),
    Mutation(
        "oauth-code-race",
        "subtle",
        "31.10",
        "an authorization code redeemed twice at the same moment yields two token sets",
        "src/hangar/oauth/grants.py",
        "        async with write_transaction(self._db) as conn:\n            found = ",
        "        async with self._db.begin() as conn:\n            found = ",
        (f"{OAUTH}::test_a_code_redeemed_twice_at_once_gives_no_two_token_sets",),
        also=OAUTH_OLD,
    ),
    Mutation(
        "oauth-refresh-race",
        "subtle",
        "hole",
        "a refresh token presented twice at the same moment yields two token sets",
        "src/hangar/oauth/grants.py",
        "        async with write_transaction(self._db) as conn:\n            row = (",
        "        async with self._db.begin() as conn:\n            row = (",
        (f"{OAUTH}::test_a_refresh_token_presented_twice_at_once_gives_no_two_token_sets",),
        also=OAUTH_OLD,
    ),
    Mutation(
        "oauth-code-expiry-boundary",
        "subtle",
        "hole",
        "an authorization code is still accepted at the very moment it expires",
        "src/hangar/oauth/grants.py",
        '        if row.expires_at <= now:\n            raise _invalid_grant("the authorization code has expired")\n',
        '        if row.expires_at < now:\n            raise _invalid_grant("the authorization code has expired")\n',
        (f"{OAUTH}::test_an_authorization_code_lives_two_minutes",),
        also=OAUTH_OLD,
    ),
    Mutation(
        "ratelimit-burst",
        "subtle",
        "31.11",
        "the rate-limit burst allows one attempt more than configured",
        "src/hangar/httpkit/ratelimit.py",
        "        if tokens < 1:\n",
        "        if tokens < 0:\n",
        (
            f"{LIMITS}::test_the_burst_allows_exactly_its_size",
            f"{OAUTH}::test_wrong_pairing_codes_on_the_consent_page_are_limited_and_refill_per_minute",
        ),
        also=LIMITS_OLD,
    ),
    Mutation(
        "ratelimit-refill",
        "subtle",
        "31.11",
        "the rate-limit refill runs 60 times too fast",
        "src/hangar/httpkit/ratelimit.py",
        "tokens + (now - at) * budget.per_minute / 60)",
        "tokens + (now - at) * budget.per_minute)",
        (
            f"{LIMITS}::test_the_bucket_refills_at_its_rate_per_minute",
            f"{OAUTH}::test_wrong_pairing_codes_on_the_consent_page_are_limited_and_refill_per_minute",
        ),
        also=LIMITS_OLD,
    ),
    Mutation(
        "ratelimit-give-back",
        "subtle",
        "hole",
        "a completed sign-in does not give back the start it finishes",
        "src/hangar/oauth/part.py",
        'failures_limited("signin", a.page_route(a.decide), completes="signin-start")',
        'failures_limited("signin", a.page_route(a.decide))',
        (f"{OAUTH}::test_authorizations_started_and_never_finished_are_limited",),
        also=LIMITS_OLD,
    ),
    Mutation(
        "stamped-cache-stale",
        "subtle",
        "31.12",
        "a value loaded while the change counter moved is kept as current (a stale role or credential)",
        "src/hangar/core/stamps.py",
        "        if self._version == version and version >= 0:\n",
        "        if version >= 0:\n",
        (
            "tests/unit/core/test_shared_data_directory.py::test_a_value_loaded_while_the_counter_moved_is_not_kept",
            "tests/integration/test_stale_authority.py::test_a_role_loaded_while_it_changed_is_not_kept",
        ),
        also=AUTHORITY_OLD,
    ),
    Mutation(
        "chat-message-limit",
        "subtle",
        "31.13",
        "a streamed chat message reaches 12,001 characters (the provider's limit is 12,000)",
        "src/hangar/chat/replies.py",
        "        if piece and self._msg_chars + len(piece) > MESSAGE_MAX:\n",
        "        if piece and self._msg_chars + len(piece) > MESSAGE_MAX + 1:\n",
        (
            f"{REPLIES}::test_a_streamed_message_holds_12000_characters_and_never_one_more",
            f"{BRIDGE}::test_a_streamed_message_never_passes_the_providers_limit",
        ),
    ),
    Mutation(
        "chat-markdown-block-limit",
        "subtle",
        "hole",
        "a reply posted whole puts 12,001 characters in one markdown block (the provider's limit is 12,000)",
        "src/hangar/chat/replies.py",
        "            if len(text) <= MARKDOWN_BLOCK_MAX:\n",
        "            if len(text) <= MARKDOWN_BLOCK_MAX + 1:\n",
        (f"{REPLIES}::test_a_reply_posted_whole_keeps_its_markdown_block_within_the_limit",),
    ),
    Mutation(
        "reducer-null-existing",
        "subtle",
        "31.14",
        "append onto a key holding null fails instead of starting the list",
        "src/hangar/pipelines/reducers.py",
        "        if existing is ABSENT or existing is None:\n            return [new]\n",
        "        if existing is ABSENT:\n            return [new]\n",
        (f"{REDUCERS}::test_reducers_treat_a_null_already_there_as_nothing",),
        also=PIPELINES_OLD,
    ),
    Mutation(
        "reducer-null-new",
        "subtle",
        "31.14",
        "mergeLists given null fails with a TypeError instead of naming the reducer and the key",
        "src/hangar/pipelines/reducers.py",
        "        if not isinstance(new, list):\n",
        "        if new is not None and not isinstance(new, list):\n",
        (f"{REDUCERS}::test_a_null_written_through_a_reducer_is_refused_or_kept_as_its_reducer_says",),
        also=PIPELINES_OLD,
    ),
    Mutation(
        "reducer-boolean-sum",
        "subtle",
        "31.14",
        "sum adds booleans as 0 and 1",
        "src/hangar/pipelines/reducers.py",
        "    if isinstance(value, bool) or not isinstance(value, int | float):\n",
        "    if not isinstance(value, int | float):\n",
        (f"{REDUCERS}::test_sum_refuses_booleans_on_either_side",),
        also=PIPELINES_OLD,
    ),
    Mutation(
        "reducer-first-list-write",
        "subtle",
        "31.14",
        "the first append of a list to a key merges it instead of appending it as one item",
        "src/hangar/pipelines/reducers.py",
        "        if existing is ABSENT or existing is None:\n            return [new]\n",
        "        if existing is ABSENT or existing is None:\n"
        "            return new if isinstance(new, list) else [new]\n",
        (f"{REDUCERS}::test_the_first_write_to_a_list_key",),
        also=PIPELINES_OLD,
    ),
    Mutation(
        "store-locked-tick-lost",
        "subtle",
        "31.t",
        "a tick written while another writer holds the lock is dropped instead of waited for",
        "src/hangar/core/sqlite_writer.py",
        "            return await loop.run_in_executor(self._pool, self._slow_call, fn, args)\n",
        "            return None  # type: ignore[return-value]\n",
        ("tests/unit/pipelines/test_store.py::test_tick_waits_for_another_writer_instead_of_failing",),
    ),
    Mutation(
        "store-fast-path-waits",
        "subtle",
        "31.t",
        "a tick that finds the lock taken waits for it on the event loop, stalling everything else",
        "src/hangar/core/sqlite_writer.py",
        "            self._fast = connect(self._path, busy_ms=0)\n",
        "            self._fast = connect(self._path, busy_ms=10_000)\n",
        ("tests/unit/pipelines/test_store.py::test_tick_waits_for_another_writer_instead_of_failing",),
    ),
]
