"""The InstantStart MCP server (``instantstart-mcp``): MCP tools over the InstantStart HTTP API and the
agent skills (workflow rules) as prompts, resources and packaged markdown.

- :mod:`mcp_proxy.server`: ``build_server()`` and the console script (stdio, or streamable HTTP).
- :mod:`mcp_proxy.document`: the tool definitions read from the OpenAPI document the client package ships
  (parameters, result schemas, annotations from each operation's ``x-instantstart`` extension).
- :mod:`mcp_proxy.tools`: the generated tools, one per API operation, calling it by id; the guard rails.
- :mod:`mcp_proxy.composite`: the few tools that are not one API call (``wait_seconds``, ``cluster_list_all``).
- :mod:`mcp_proxy.skills`: the skill markdown files and their loader.
"""
