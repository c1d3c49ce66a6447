"""The chat bridge: people reach a workspace's agents from a chat provider (Slack, wire value ``chatprovider``).

What it offers: the server composes ``hangar.chat.part.CHAT_PART``, which is ``make_chat_part(slack_connections)``;
``make_chat_part(None)`` stores credentials and links but dials nothing (its status says "no transport"). Once
started the part provides ``ChatService`` (``hangar.chat.service``; ``app.service(ChatService)``): credentials in,
connection status out, the per-workspace connections, link codes, member links and space links. The rest of the
product reaches the bridge through its ``chat.*`` ops, its domain events (``chat.userLinked``,
``chat.userUnlinked``) and the deep-link route. No other part imports it (it stands above them all), so this
module imports nothing and importing a submodule never drags the bridge in.

Inside:

- ``part``: the part (tables, ops, events, the deep-link route, start and stop) and ``make_chat_part``.
- ``service``: ``ChatService`` and ``ConnectionStatus``.
- ``descriptor``: the provider descriptor (credential fields, prefixes and refusals, capabilities, scopes, events).
- ``credentials``: the credential and setup files beside the workspace database, and the legacy migration.
- ``connections``: the registry of live connections, at most one per workspace and provider.
- ``link_codes``: the one-time link codes, hashed in the workspace's database (any server process redeems them).
- ``links``: member links by code or verified email, membership checked on every use.
- ``space_links``: a channel thread or a bot DM to one ``chatprovider`` space, and the space's name.
- ``profile``: the bot profile, its limits and normalization, the app manifest and the setup link.
- ``apps``: creating the app and reading or editing its profile through the manifest API (refresh token rotation).
- ``bridge``: one workspace's bridge: events in, reply cards, mirroring and narration out, cards left by a restart.
- ``commands``: the slash command's parsing and its help text.
- ``cards``: the grouped reply card (rows and statuses) on the streamed and the posted wire.
- ``replies``: one reply streamed (cadence, limits, roll-over, truncation) and its fallbacks.
- ``narration``: the setup row's provisioning texts and when it may speak.
- ``open_streams``: reply cards still streaming, so a restarted server finishes them.
- ``deeplink``: the ``/open/workspaces/...`` route handing over to the ``hangar://`` app.
- ``ops``, ``results``: the ``chat.*`` ops and what they answer (never a token).
- ``events``, ``tables``: the part's domain events and workspace tables.
- ``errors``, ``inbound``, ``outbound``: a provider's errors, the events a transport hands the bridge, and the
  calls the bridge makes.
- ``providers/slack``: ``api`` (the Web API client), ``ratelimit`` (pacing and 429s), ``connection`` (the Socket
  Mode states and moves), ``events`` (envelopes to inbound events, dedupe), ``live`` (the three as one connection).
"""
