"""The chat bridge: people reach a workspace's agents from a chat provider (Slack, wire value ``chatprovider``).

Inside: ``errors`` (what a provider call can answer), ``inbound`` (the provider-neutral events the transport
hands the bridge), ``outbound`` (the calls the bridge makes to post, stream and title), ``providers/slack``
(the Web API client with rate limits, the Socket Mode connection and its states). The server composes the part.
"""
