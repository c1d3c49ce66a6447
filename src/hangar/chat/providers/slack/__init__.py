"""Slack, wire value ``chatprovider``: ``api`` (the Web API as ``ChatOutbound`` and the look-ups), ``ratelimit``
(tier pacing and 429s on the injected clock), ``connection`` (the Socket Mode supervisor and its states),
``events`` (envelopes to the bridge's inbound events)."""
