"""The product's MCP endpoint at ``/mcp`` (CONTRACTS.md section 8), one module for each thing it holds:

- ``door``: ``McpDoor``, the ASGI endpoint: the SDK's server and session managers composed with the parts below,
  and the gate that authenticates every request and routes it;
- ``deferred``: ``DeferredDoor``, what the server mounts: it builds and starts the door (loading the SDK) on the
  first request, so a start that sees no MCP client never loads it;
- ``wire``: what the door writes itself (paths, CORS, the 401, plain JSON answers, the protected-resource
  metadata);
- ``request``: what the gate leaves on a request and how the SDK's handlers read it back (the caller, the session);
- ``limits``: the caps on sessions per credential, user and workspace, and when the endpoint is under pressure;
- ``sessions``: those caps counted, the sessions the SDK opens under them, idle ones expired sooner under pressure;
- ``exchange``: the hot path for plain tool calls, answered in one exchange beside the SDK's transports and request
  kernel (with its types);
- ``ops``: running an op as the caller through the dispatcher, the one way every handler reaches an op;
- ``backchannel``: what a running op says to the client (progress, ask-first questions);
- ``tools``: the tool catalogue generated from the op registry (also read by agents and the website);
- ``tool_calls``: ``tools/list`` and ``tools/call``;
- ``resources``: records readable by URI template, and reading them;
- ``subscriptions``: following resources (``resources/subscribe``, and ``subscriptions/listen`` via ``listen``).

Importers name the module they need; this package imports nothing, so reading the tool catalogue does not load
the SDK's server.
"""
