"""What an agent can call during a run, and the checks on what it hands back.

- ``builtin``: the tools the server runs for the run itself (``post_message``, ``list_files``, ``read_file``,
  ``submit_output``), confined to the run's space.
- ``catalogue``: which of the product's own ops an agent may call (``productTools``, the defaults) and the
  principal it calls them as.
- ``product``: one ``openai`` run's product tools: the declarations offered to the model and their calls through
  the one dispatcher.
- ``mcp_grant``: a command agent's way to the same ops: the MCP endpoint and a credential for one run.
- ``output_schema``: the JSON Schema subset a dispatcher gives for ``submit_output``, and its checks.
"""
