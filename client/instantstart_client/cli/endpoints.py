"""``instantstart endpoints``: managed inference endpoints (the HyperPod inference operator)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from instantstart_client.cli.common import (
    EXIT_OPERATION_FAILED,
    IdempotencyOption,
    JsonOption,
    PollOption,
    TagArgument,
    WaitOption,
    WaitTimeoutOption,
    _echo_json,
    _state,
    handle_errors,
)
from instantstart_client.cli.inference import _model_body, _print_model_answer, _report_accepted
from instantstart_client.progress import DEFAULT_POLL_INTERVAL
from instantstart_client.render import esc

endpoints_app = typer.Typer(
    help="Managed inference endpoints (the HyperPod inference operator, a SageMaker endpoint): create, list, get, "
    "invoke, delete.",
    no_args_is_help=True,
)

EndpointNameArgument = Annotated[str, typer.Argument(help="Endpoint name, e.g. qwen-managed.", show_default=False)]


@endpoints_app.command("create")
@handle_errors
def endpoints_create(
    ctx: typer.Context,
    tag: TagArgument,
    body_file: Annotated[
        Path | None,
        typer.Option("--body", help="A JSON file with the whole request (modelSource, worker, kvCacheSpec, ...)."),
    ] = None,
    name: Annotated[str | None, typer.Option("--name", help="Endpoint name (without --body).")] = None,
    instance_type: Annotated[str | None, typer.Option("--instance-type", help="e.g. ml.g6.4xlarge.")] = None,
    s3_model: Annotated[
        str | None, typer.Option("--s3-model", help="Model prefix in the cluster's bucket, e.g. models/Qwen/Qwen2.5.")
    ] = None,
    image: Annotated[str | None, typer.Option("--image", help="Worker image with a pinned tag or digest.")] = None,
    gpus: Annotated[int | None, typer.Option("--gpus", help="GPUs per worker.")] = None,
    replicas: Annotated[int | None, typer.Option("--replicas", help="Workers.")] = None,
    idempotency_key: IdempotencyOption = None,
    wait: WaitOption = False,
    poll_interval: PollOption = DEFAULT_POLL_INTERVAL,
    wait_timeout: WaitTimeoutOption = None,
    as_json: JsonOption = False,
) -> None:
    """Deploy a model as a managed endpoint: --body FILE, or --name/--instance-type/--s3-model/--image."""
    state = _state(ctx)
    if body_file is not None:
        body: dict[str, Any] = dict(json.loads(body_file.read_text()))
    else:
        missing = [o for o, v in (("--name", name), ("--instance-type", instance_type), ("--image", image)) if not v]
        if missing or not s3_model:
            raise typer.BadParameter(f"give --body FILE, or {', '.join(missing + ['--s3-model'] * (not s3_model))}")
        body = {
            "name": name,
            "instanceType": instance_type,
            "modelSource": {"type": "s3", "modelLocation": s3_model},
            "worker": {"image": image, **({"resources": {"gpus": gpus}} if gpus is not None else {})},
        }
        if replicas is not None:
            body["replicas"] = replicas
    accepted = state.client().create_inference_endpoint(tag, body, idempotency_key=idempotency_key)
    _report_accepted(
        state,
        accepted,
        f"{accepted['kind']} {accepted['namespace']}/{accepted['name']} ({accepted['apiVersion']}) on {tag}",
        f"Follow it with: instantstart endpoints get {tag} {accepted['name']}",
        as_json,
        wait=wait,
        poll_interval=poll_interval,
        timeout=wait_timeout,
    )


@endpoints_app.command("list")
@handle_errors
def endpoints_list(ctx: typer.Context, tag: TagArgument, as_json: JsonOption = False) -> None:
    """The cluster's managed endpoints: kind, state, replicas, SageMaker endpoint."""
    state = _state(ctx)
    found = state.client().list_inference_endpoints(tag)
    if state.wants_json(as_json):
        _echo_json(found)
        return
    if not found["endpoints"]:
        state.console.print("no managed inference endpoints")
        return
    table = Table(title=f"managed inference endpoints of {tag}")
    for column in ("Name", "Kind", "Instance type", "State", "Ready", "SageMaker endpoint"):
        table.add_column(column)
    for e in found["endpoints"]:
        table.add_row(
            e["name"],
            e["kind"],
            str(e.get("instanceType") or "-"),
            str(e.get("state") or "-"),
            f"{e.get('readyReplicas') or 0}/{e.get('replicas') or 0}",
            str(e.get("endpointName") or "-"),
        )
    state.console.print(table)


@endpoints_app.command("get")
@handle_errors
def endpoints_get(
    ctx: typer.Context, tag: TagArgument, name: EndpointNameArgument, as_json: JsonOption = False
) -> None:
    """An endpoint: state and message, conditions, SageMaker endpoint, worker pods' events."""
    state = _state(ctx)
    e = state.client().get_inference_endpoint(tag, name)
    if state.wants_json(as_json):
        _echo_json(e)
        return
    console = state.console
    console.print(
        f"[bold]{esc(e['namespace'])}/{esc(e['name'])}[/] {esc(e['kind'])} {esc(e['apiVersion'])}: "
        f"[bold]{esc(e.get('state') or '-')}[/]" + (f" - {esc(e['message'])}" if e.get("message") else ""),
        highlight=False,
    )
    sm = e.get("sagemaker")
    if sm:
        console.print(
            f"SageMaker endpoint {sm['name']}: {sm.get('state') or '-'} ({sm.get('status') or 'not found'}) "
            f"{sm.get('endpointArn') or ''}",
            markup=False,
            highlight=False,
        )
    for c in e["conditions"]:
        console.print(f"  {c.get('type')}={c.get('status')} {c.get('reason') or ''}", markup=False, highlight=False)
    for ev in e["events"]:
        console.print(
            f"  {ev['pod']}: {ev.get('type') or ''} {ev.get('reason') or ''} {ev.get('message') or ''}",
            markup=False,
            highlight=False,
        )


@endpoints_app.command("invoke")
@handle_errors
def endpoints_invoke(
    ctx: typer.Context,
    tag: TagArgument,
    name: EndpointNameArgument,
    body: Annotated[str, typer.Argument(help='The JSON object sent to the model, e.g. \'{"prompt": "Hello"}\'.')],
    idempotency_key: IdempotencyOption = None,
    as_json: JsonOption = False,
) -> None:
    """Call the model (SageMaker InvokeEndpoint; at most 1 MiB sent, the answer cut at 256 KiB)."""
    state = _state(ctx)
    payload = _model_body(body)
    answer = state.client().invoke_inference_endpoint(tag, name, payload, idempotency_key=idempotency_key)
    _print_model_answer(state, answer, as_json)


@endpoints_app.command("delete")
@handle_errors
def endpoints_delete(
    ctx: typer.Context,
    tag: TagArgument,
    name: EndpointNameArgument,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    idempotency_key: IdempotencyOption = None,
    wait: WaitOption = False,
    poll_interval: PollOption = DEFAULT_POLL_INTERVAL,
    wait_timeout: WaitTimeoutOption = None,
    as_json: JsonOption = False,
) -> None:
    """Delete an endpoint; the operator removes its SageMaker endpoint, config and model (asks you to type its name)."""
    state = _state(ctx)
    if not yes:
        typed = typer.prompt(
            f"This deletes managed endpoint '{name}' of '{tag}' and its SageMaker endpoint. Type its name"
        )
        if typed.strip() != name:
            state.err_console.print("Aborted: the name you typed does not match; nothing was deleted.")
            raise typer.Exit(EXIT_OPERATION_FAILED)
    accepted = state.client().delete_inference_endpoint(tag, name, idempotency_key=idempotency_key)
    _report_accepted(
        state,
        accepted,
        f"{accepted['kind']} {accepted['namespace']}/{accepted['name']}",
        f"Check with: instantstart endpoints list {tag}",
        as_json,
        wait=wait,
        poll_interval=poll_interval,
        timeout=wait_timeout,
    )
