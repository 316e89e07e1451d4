"""``instantstart-mcp``: the MCP server of InstantStart (stdio by default, streamable HTTP with ``--http``).

Every tool is a client of the InstantStart HTTP API, built from the OpenAPI document the client package ships
(:mod:`mcp_proxy.tools`, :mod:`mcp_proxy.document`; the composite ones in :mod:`mcp_proxy.composite`); the agent
skills ship as MCP prompts and resources and as markdown under ``mcp_proxy/skills/`` (see :mod:`mcp_proxy.skills`).

Settings: ``--api-url`` or ``INSTANTSTART_API_URL``; the signing region from ``--region`` or
``AWS_REGION`` (else the execute-api host name or the AWS profile); AWS credentials from the botocore
chain. Read-only unless ``--allow-write`` or ``INSTANTSTART_ALLOW_WRITE=true``.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.prompts.base import Prompt, UserMessage
from mcp.server.mcpserver.resources import TextResource
from pydantic import Field

from instantstart_client import __version__
from instantstart_client.api import API_URL_ENV, InstantStartClient
from mcp_proxy.composite import CompositeTools, Sleep
from mcp_proxy.skills import Skill, load_skills
from mcp_proxy.tools import (
    ALLOW_WRITE_ENV,
    CALL_BUDGET_SECONDS,
    InstantStartTools,
    env_allows_write,
    write_tools,
)

SERVER_NAME = "instantstart"
SKILL_URI_PREFIX = "skill://instantstart/"
DEFAULT_HTTP_HOST = "127.0.0.1"
DEFAULT_HTTP_PORT = 8000

LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]
PromptTag = Annotated[str, Field(description="Cluster tag, e.g. demo.")]
OptionalPromptTag = Annotated[
    str | None, Field(description="Cluster tag for the new cluster (optional; default: ask the user or generate one).")
]


def _instructions(rules: Skill, allow_write: bool) -> str:
    writes = write_tools()
    mode = (
        "Write tools are enabled."
        if allow_write
        else f"This server is read-only: its {len(writes)} write tools ({', '.join(writes)}) "
        f"are refused until it is started with --allow-write or {ALLOW_WRITE_ENV}=true."
    )
    return f"{rules.body}\n## Mode\n\n{mode}\n"


def _skill_prompts(skills: dict[str, Skill]) -> list[Prompt]:
    """The skills as MCP prompts: the rules, and each workflow prefixed by the rules."""
    rules = skills["workflow-rules.md"].body

    def instantstart_workflow_rules() -> list[UserMessage]:
        """The workflow rules for operating HyperPod clusters with the InstantStart tools."""
        return [UserMessage(rules)]

    def create_hyperpod_cluster(clusterTag: OptionalPromptTag = None) -> list[UserMessage]:
        """Create a new HyperPod cluster end to end: inspect, ask decision-grade questions, create, poll to READY."""
        ask = (
            f"The user wants a new HyperPod cluster tagged '{clusterTag}'."
            if clusterTag
            else ("The user wants a new HyperPod cluster; ask for a tag or offer to generate one.")
        )
        return [UserMessage(f"{rules}\n{skills['create-cluster.md'].body}\n{ask}\n")]

    def retry_failed_stage(clusterTag: PromptTag) -> list[UserMessage]:
        """Recover a cluster whose creation failed: explain the failed stage's error and retry it."""
        return [
            UserMessage(f"{rules}\n{skills['retry-failed-stage.md'].body}\nThe cluster to recover is '{clusterTag}'.\n")
        ]

    def delete_cluster(clusterTag: PromptTag) -> list[UserMessage]:
        """Delete a cluster and its resources after the user confirms by typing its tag."""
        return [
            UserMessage(
                f"{rules}\n{skills['delete-cluster.md'].body}\nThe user asked to delete cluster '{clusterTag}'; "
                "get their typed confirmation first.\n"
            )
        ]

    def troubleshoot_node(clusterTag: PromptTag) -> list[UserMessage]:
        """Diagnose an unhealthy node and choose between waiting, reboot, replace, delete or a deep health check."""
        return [
            UserMessage(
                f"{rules}\n{skills['node-troubleshooting.md'].body}\nThe user reports a node problem on cluster "
                f"'{clusterTag}'.\n"
            )
        ]

    return [
        Prompt.from_function(instantstart_workflow_rules, title="InstantStart workflow rules"),
        Prompt.from_function(create_hyperpod_cluster, title="Create a HyperPod cluster"),
        Prompt.from_function(retry_failed_stage, title="Retry a failed stage"),
        Prompt.from_function(delete_cluster, title="Delete a cluster"),
        Prompt.from_function(troubleshoot_node, title="Troubleshoot a node"),
    ]


def build_server(
    *,
    api_url: str | None = None,
    region: str | None = None,
    allow_write: bool | None = None,
    client: InstantStartClient | None = None,
    sleep: Sleep | None = None,
    log_level: LogLevel = "WARNING",
    call_budget: float = CALL_BUDGET_SECONDS,
) -> MCPServer[Any]:
    """The InstantStart MCP server.

    Args:
        api_url: base URL of the HTTP API (default ``$INSTANTSTART_API_URL``).
        region: signing region (default ``$AWS_REGION``, the execute-api host, or the AWS profile).
        allow_write: enable the write tools; None reads ``$INSTANTSTART_ALLOW_WRITE``.
        client: an API client to use instead of building one from ``api_url``/``region`` (tests).
        sleep: the awaitable sleep of ``wait_seconds`` (default: real time).
        log_level: the SDK's log level (logs go to stderr).
        call_budget: seconds the API requests of one tool call may take in all (attempts, backoff waits
            and pages share it; default :data:`mcp_proxy.tools.CALL_BUDGET_SECONDS`, 50).

    Returns:
        The server, ready for ``run()`` or an in-process client.
    """
    writes = env_allows_write(os.environ) if allow_write is None else allow_write

    def make_client() -> InstantStartClient:
        return client if client is not None else InstantStartClient(api_url=api_url, region=region)

    tools = InstantStartTools(make_client, allow_write=writes, call_budget=call_budget)
    skills = {skill.file: skill for skill in load_skills()}
    server: MCPServer[Any] = MCPServer(
        SERVER_NAME,
        title="InstantStart: SageMaker HyperPod on EKS",
        description="Create, inspect, retry and delete SageMaker HyperPod clusters through the InstantStart HTTP API.",
        instructions=_instructions(skills["workflow-rules.md"], writes),
        version=__version__,
        tools=[*tools.tools(), *CompositeTools(tools, sleep=sleep).tools()],
        log_level=log_level,
    )
    for prompt in _skill_prompts(skills):
        server.add_prompt(prompt)
    for skill in skills.values():
        server.add_resource(
            TextResource(
                uri=SKILL_URI_PREFIX + skill.file.removesuffix(".md"),
                name=skill.name,
                description=skill.description,
                mime_type="text/markdown",
                text=skill.body,
            )
        )
    return server


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="instantstart-mcp",
        description="MCP server of InstantStart: tools over the InstantStart HTTP API (SigV4-signed with your "
        "AWS credentials) and the agent skills as prompts. Speaks stdio unless --http is given.",
    )
    parser.add_argument("--http", action="store_true", help="serve streamable HTTP (at /mcp) instead of stdio")
    parser.add_argument("--host", default=DEFAULT_HTTP_HOST, help=f"HTTP bind address (default {DEFAULT_HTTP_HOST})")
    parser.add_argument(
        "--port", type=int, default=DEFAULT_HTTP_PORT, help=f"HTTP port with --http (default {DEFAULT_HTTP_PORT})"
    )
    parser.add_argument("--api-url", default=None, help=f"base URL of the InstantStart API (default ${API_URL_ENV})")
    parser.add_argument("--region", default=None, help="region to sign requests for (default $AWS_REGION)")
    parser.add_argument(
        "--allow-write",
        action="store_true",
        default=None,
        help=f"enable the {len(write_tools())} write tools (or set {ALLOW_WRITE_ENV}=true); read-only by default",
    )
    parser.add_argument(
        "--log-level",
        default="WARNING",
        choices=["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"],
        help="log level on stderr (default WARNING)",
    )
    parser.add_argument("--version", action="version", version=f"instantstart-mcp {__version__}")
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the ``instantstart-mcp`` console script."""
    args = _parser().parse_args(argv)
    if not (args.api_url or os.environ.get(API_URL_ENV)):
        print(
            f"instantstart-mcp: no API URL (--api-url or {API_URL_ENV}); tools will answer with an error until "
            "one is configured",
            file=sys.stderr,
        )
    server = build_server(
        api_url=args.api_url, region=args.region, allow_write=args.allow_write, log_level=args.log_level
    )
    logging.getLogger(__name__).info("instantstart-mcp %s starting", __version__)
    if args.http:
        server.run("streamable-http", host=args.host, port=args.port)
    else:
        server.run("stdio")


if __name__ == "__main__":
    main()
