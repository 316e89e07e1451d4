"""The InstantStart MCP server (``instantstart-mcp``): MCP tools over the InstantStart HTTP API and the
agent skills (workflow rules) as prompts, resources and packaged markdown.

- :mod:`mcp_proxy.server`: ``build_server()`` and the console script (stdio, or streamable HTTP).
- :mod:`mcp_proxy.tools`: the tools, one per API operation, plus ``wait_seconds``; the guard rails.
- :mod:`mcp_proxy.schemas`: parameter and result schemas derived from the API's pydantic models.
- :mod:`mcp_proxy.skills`: the skill markdown files and their loader.
"""
