"""``instantstart models`` (download, list) and ``instantstart deployments`` (self-managed inference: create, list,
get, scale, invoke, delete, router), with the helpers ``instantstart endpoints`` shares."""

from __future__ import annotations

import json
from typing import Annotated, Any, cast

import typer
from rich.table import Table

from instantstart_client.cli.common import (
    EXIT_OPERATION_FAILED,
    CliState,
    IdempotencyOption,
    JsonOption,
    PollOption,
    TagArgument,
    WaitOption,
    WaitTimeoutOption,
    _echo_json,
    _follow,
    _state,
    handle_errors,
)
from instantstart_client.progress import DEFAULT_POLL_INTERVAL
from instantstart_client.render import esc
from instantstart_client.shapes import Operation

models_app = typer.Typer(
    help="Models in the cluster's storage: download from Hugging Face (a Kubernetes Job), list what is stored.",
    no_args_is_help=True,
)
deployments_app = typer.Typer(
    help="Self-managed inference (vLLM or SGLang Deployment + Service): create, list, get, scale, invoke, delete, "
    "router.",
    no_args_is_help=True,
)

DeploymentNameArgument = Annotated[str, typer.Argument(help="Deployment name, e.g. qwen-vllm.", show_default=False)]


def _secret_ref(value: str | None, option: str) -> dict[str, str] | None:
    """``NAME:KEY`` -> ``{"name", "key"}`` (a Secret reference; the token itself is never an option)."""
    if value is None:
        return None
    name, sep, key = value.partition(":")
    if not sep or not name or not key:
        raise typer.BadParameter(f"{option} takes SECRET_NAME:KEY (e.g. hf-token:token), not {value!r}")
    return {"name": name, "key": key}


def _report_accepted(
    state: CliState,
    accepted: dict[str, Any],
    what: str,
    follow_hint: str,
    as_json: bool,
    *,
    wait: bool,
    poll_interval: float,
    timeout: float | None,
) -> None:
    operation = cast(Operation, accepted["operation"])
    if wait:
        _follow(state, operation, as_json=state.wants_json(as_json), poll_interval=poll_interval, wait_timeout=timeout)
        return
    if state.wants_json(as_json):
        _echo_json(accepted)
        return
    state.console.print(
        f"{esc(operation.get('type'))} {esc(what)}: operation {esc(operation.get('operationId'))} "
        f"{esc(operation.get('status'))}",
        highlight=False,
    )
    state.console.print(follow_hint, markup=False, highlight=False)


@models_app.command("download")
@handle_errors
def models_download(
    ctx: typer.Context,
    tag: TagArgument,
    model_id: Annotated[str, typer.Argument(help="Hugging Face model id, e.g. Qwen/Qwen2.5-0.5B-Instruct.")],
    revision: Annotated[str | None, typer.Option("--revision", help="Branch, tag or commit (default main).")] = None,
    destination: Annotated[str, typer.Option("--destination", help="s3 (the cluster bucket) or fsx.")] = "s3",
    hf_token_secret: Annotated[
        str | None, typer.Option("--hf-token-secret", help="Gated models: SECRET_NAME:KEY of a Secret in default.")
    ] = None,
    idempotency_key: IdempotencyOption = None,
    wait: WaitOption = False,
    poll_interval: PollOption = DEFAULT_POLL_INTERVAL,
    wait_timeout: WaitTimeoutOption = None,
    as_json: JsonOption = False,
) -> None:
    """Download a model into the cluster's storage; the operation ends when the Job completed."""
    state = _state(ctx)
    body: dict[str, Any] = {"source": "huggingface", "modelId": model_id, "destination": destination}
    if revision:
        body["revision"] = revision
    ref = _secret_ref(hf_token_secret, "--hf-token-secret")
    if ref:
        body["hfTokenSecret"] = ref
    accepted = state.client().download_model(tag, body, idempotency_key=idempotency_key)
    _report_accepted(
        state,
        accepted,
        f"{accepted['modelId']} -> {accepted['location']} (Job {accepted['jobName']})",
        f"Pods will see it at {accepted['modelPath']}; list stored models with: instantstart models list {tag}",
        as_json,
        wait=wait,
        poll_interval=poll_interval,
        timeout=wait_timeout,
    )


@models_app.command("list")
@handle_errors
def models_list(ctx: typer.Context, tag: TagArgument, as_json: JsonOption = False) -> None:
    """Models in the cluster's bucket and on its FSx for Lustre file system (read from storage): where, path pods
    see, size, files; says why the file system is not listed when it cannot be."""
    state = _state(ctx)
    found = state.client().list_models(tag)
    if state.wants_json(as_json):
        _echo_json(found)
        return
    fsx = found.get("fsx") or {}
    if not found["models"]:
        state.console.print(f"no models in s3://{found.get('bucket')}/models/", highlight=False)
    else:
        table = Table(title=f"models of {tag}")
        for column in ("Model", "Storage", "Path", "Size (bytes)", "Files", "Last modified"):
            table.add_column(column)
        for m in found["models"]:
            table.add_row(
                m["modelId"],
                str(m.get("destination")),
                m["modelPath"],
                str(m["sizeBytes"]),
                str(m["files"]),
                str(m.get("lastModified")),
            )
        state.console.print(table)
    if fsx and not fsx.get("listed"):
        state.console.print(f"fsx not listed: {fsx.get('reason')}", highlight=False)


def _model_body(body: str) -> dict[str, Any]:
    """The BODY argument of an invoke command as a JSON object (typer's usage error otherwise)."""
    try:
        payload = json.loads(body)
    except ValueError as exc:
        raise typer.BadParameter(f"BODY is not JSON: {exc}") from exc
    if not isinstance(payload, dict):
        raise typer.BadParameter("BODY must be a JSON object")
    return payload


def _print_model_answer(state: CliState, answer: dict[str, Any], as_json: bool) -> None:
    """An invoke answer: the whole view with --json, else the model's JSON, else its text."""
    if state.wants_json(as_json) or answer.get("body") is not None:
        _echo_json(answer if state.wants_json(as_json) else answer["body"])
        return
    state.console.print(answer.get("text") or "", markup=False, highlight=False)


@deployments_app.command("create")
@handle_errors
def deployments_create(
    ctx: typer.Context,
    tag: TagArgument,
    name: Annotated[str, typer.Option("--name", help="Deployment name (DNS-1035, e.g. qwen-vllm).")],
    engine: Annotated[str, typer.Option("--engine", help="vllm or sglang.")],
    model_path: Annotated[str, typer.Option("--model-path", help="Model directory, e.g. /s3/models/<modelId>.")],
    served_model_name: Annotated[str, typer.Option("--served-model-name", help="Model name clients send.")],
    instance_type: Annotated[str, typer.Option("--instance-type", help="One of the cluster's instance types.")],
    gpus: Annotated[int | None, typer.Option("--gpus", help="GPUs per replica = tensor parallel size.")] = None,
    replicas: Annotated[int | None, typer.Option("--replicas", help="Pods (default 1).")] = None,
    max_model_len: Annotated[int | None, typer.Option("--max-model-len", help="Most tokens of a sequence.")] = None,
    port: Annotated[int | None, typer.Option("--port", help="Port (default vllm 8000, sglang 30000).")] = None,
    image: Annotated[str | None, typer.Option("--image", help="Pinned engine image (default: the engine's).")] = None,
    service_type: Annotated[
        str | None, typer.Option("--service-type", help="ClusterIP (default) or LoadBalancer (an internal NLB).")
    ] = None,
    internet_facing: Annotated[
        bool, typer.Option("--internet-facing", help="With LoadBalancer: reachable from the internet.")
    ] = False,
    hf_token_secret: Annotated[
        str | None, typer.Option("--hf-token-secret", help="SECRET_NAME:KEY of a Secret with a Hugging Face token.")
    ] = None,
    idempotency_key: IdempotencyOption = None,
    wait: WaitOption = False,
    poll_interval: PollOption = DEFAULT_POLL_INTERVAL,
    wait_timeout: WaitTimeoutOption = None,
    as_json: JsonOption = False,
) -> None:
    """Deploy a model with vLLM or SGLang; follow readiness with `deployments get`."""
    state = _state(ctx)
    body: dict[str, Any] = {
        "name": name,
        "engine": engine,
        "modelPath": model_path,
        "servedModelName": served_model_name,
        "instanceType": instance_type,
    }
    optional = {"gpus": gpus, "replicas": replicas, "maxModelLen": max_model_len, "port": port, "image": image}
    body.update({k: v for k, v in optional.items() if v is not None})
    if service_type or internet_facing:
        body["service"] = {"type": service_type or "LoadBalancer"}
        if internet_facing:
            body["service"]["exposure"] = "internet-facing"
    ref = _secret_ref(hf_token_secret, "--hf-token-secret")
    if ref:
        body["hfTokenSecret"] = ref
    accepted = state.client().create_inference_deployment(tag, body, idempotency_key=idempotency_key)
    _report_accepted(
        state,
        accepted,
        f"{accepted['namespace']}/{accepted['name']} on {tag}",
        f"Follow it with: instantstart deployments get {tag} {accepted['name']}",
        as_json,
        wait=wait,
        poll_interval=poll_interval,
        timeout=wait_timeout,
    )


@deployments_app.command("list")
@handle_errors
def deployments_list(ctx: typer.Context, tag: TagArgument, as_json: JsonOption = False) -> None:
    """The cluster's inference deployments: engine, status, replicas ready/desired."""
    state = _state(ctx)
    found = state.client().list_inference_deployments(tag)
    if state.wants_json(as_json):
        _echo_json(found)
        return
    if not found["deployments"]:
        state.console.print("no inference deployments")
        return
    table = Table(title=f"inference deployments of {tag}")
    for column in ("Name", "Engine", "Model", "Instance type", "GPUs", "Status", "Ready"):
        table.add_column(column)
    for d in found["deployments"]:
        table.add_row(
            d["name"],
            str(d.get("engine") or "-"),
            str(d.get("servedModelName") or "-"),
            str(d.get("instanceType") or "-"),
            str(d.get("gpus") or "-"),
            d["status"],
            f"{d['readyReplicas']}/{d['desiredReplicas']}",
        )
    state.console.print(table)


@deployments_app.command("get")
@handle_errors
def deployments_get(
    ctx: typer.Context, tag: TagArgument, name: DeploymentNameArgument, as_json: JsonOption = False
) -> None:
    """A deployment: status, replicas, Service URL, pods (node, phase, ready, bound model)."""
    state = _state(ctx)
    d = state.client().get_inference_deployment(tag, name)
    if state.wants_json(as_json):
        _echo_json(d)
        return
    console = state.console
    console.print(
        f"[bold]{esc(d['namespace'])}/{esc(d['name'])}[/] {esc(d.get('engine') or '-')} "
        f"{esc(d.get('servedModelName') or '-')}: [bold]{esc(d['status'])}[/], "
        f"{d['readyReplicas']}/{d['desiredReplicas']} ready",
        highlight=False,
    )
    if d.get("reason"):
        console.print(f"Reason: {d['reason']}", markup=False, highlight=False, soft_wrap=True)
    if d.get("service"):
        console.print(f"Service: {d['service']['type']} {d['service']['url']}", markup=False, highlight=False)
    if d.get("router"):
        console.print(f"Router: {d['router']['url']}", markup=False, highlight=False)
    pods = Table(title="pods")
    for column in ("Pod", "Node", "Phase", "Ready", "Bound model", "Waiting"):
        pods.add_column(column)
    for pod in d["pods"]:
        pods.add_row(
            pod["name"],
            str(pod.get("nodeName") or "-"),
            str(pod.get("phase") or "-"),
            "yes" if pod["ready"] else "no",
            str(pod.get("boundModel") or "-"),
            str(pod.get("reason") or "-"),
        )
    console.print(pods)


@deployments_app.command("scale")
@handle_errors
def deployments_scale(
    ctx: typer.Context,
    tag: TagArgument,
    name: DeploymentNameArgument,
    replicas: Annotated[int, typer.Option("--replicas", help="Pods wanted (idle pods are removed first).")],
    idempotency_key: IdempotencyOption = None,
    wait: WaitOption = False,
    poll_interval: PollOption = DEFAULT_POLL_INTERVAL,
    wait_timeout: WaitTimeoutOption = None,
    as_json: JsonOption = False,
) -> None:
    """Scale a deployment; a scale-in that would remove a pod serving a bound model is refused (exit 2)."""
    state = _state(ctx)
    accepted = state.client().scale_inference_deployment(tag, name, replicas, idempotency_key=idempotency_key)
    _report_accepted(
        state,
        accepted,
        f"{accepted['namespace']}/{accepted['name']} -> {replicas} replicas",
        f"Follow it with: instantstart deployments get {tag} {name}",
        as_json,
        wait=wait,
        poll_interval=poll_interval,
        timeout=wait_timeout,
    )


@deployments_app.command("invoke")
@handle_errors
def deployments_invoke(
    ctx: typer.Context,
    tag: TagArgument,
    name: DeploymentNameArgument,
    body: Annotated[str, typer.Argument(help='The JSON object sent to the engine, e.g. \'{"prompt": "Hello"}\'.')],
    chat: Annotated[
        bool, typer.Option("--chat", help="Call v1/chat/completions (messages) instead of v1/completions (prompt).")
    ] = False,
    via: Annotated[
        str | None,
        typer.Option("--via", help="router or service (default: the router when the deployment has one)."),
    ] = None,
    idempotency_key: IdempotencyOption = None,
    as_json: JsonOption = False,
) -> None:
    """Call the engine (OpenAI-compatible route, through the Kubernetes service proxy; at most 1 MiB sent)."""
    state = _state(ctx)
    payload = _model_body(body)
    answer = state.client().invoke_inference_deployment(
        tag,
        name,
        payload,
        route="v1/chat/completions" if chat else None,
        via=via,
        idempotency_key=idempotency_key,
    )
    _print_model_answer(state, answer, as_json)


@deployments_app.command("delete")
@handle_errors
def deployments_delete(
    ctx: typer.Context,
    tag: TagArgument,
    name: DeploymentNameArgument,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    idempotency_key: IdempotencyOption = None,
    wait: WaitOption = False,
    poll_interval: PollOption = DEFAULT_POLL_INTERVAL,
    wait_timeout: WaitTimeoutOption = None,
    as_json: JsonOption = False,
) -> None:
    """Delete a deployment with its Service and router (asks you to type its name)."""
    state = _state(ctx)
    if not yes:
        typed = typer.prompt(f"This deletes inference deployment '{name}' of '{tag}' and its Service. Type its name")
        if typed.strip() != name:
            state.err_console.print("Aborted: the name you typed does not match; nothing was deleted.")
            raise typer.Exit(EXIT_OPERATION_FAILED)
    accepted = state.client().delete_inference_deployment(tag, name, idempotency_key=idempotency_key)
    _report_accepted(
        state,
        accepted,
        f"{accepted['namespace']}/{accepted['name']}",
        f"Check with: instantstart deployments list {tag}",
        as_json,
        wait=wait,
        poll_interval=poll_interval,
        timeout=wait_timeout,
    )


@deployments_app.command("router")
@handle_errors
def deployments_router(
    ctx: typer.Context,
    tag: TagArgument,
    name: DeploymentNameArgument,
    policy: Annotated[str | None, typer.Option("--policy", help="cache_aware (default), round_robin, ...")] = None,
    min_replicas: Annotated[int | None, typer.Option("--min-replicas", help="KEDA: fewest workers.")] = None,
    max_replicas: Annotated[
        int | None, typer.Option("--max-replicas", help="KEDA: most workers (turns it on).")
    ] = None,
    prometheus: Annotated[
        str | None, typer.Option("--prometheus", help="KEDA: Prometheus URL scraping the workers.")
    ] = None,
    idempotency_key: IdempotencyOption = None,
    wait: WaitOption = False,
    poll_interval: PollOption = DEFAULT_POLL_INTERVAL,
    wait_timeout: WaitTimeoutOption = None,
    as_json: JsonOption = False,
) -> None:
    """Put the SGLang cache-aware router in front of an SGLang deployment; --max-replicas adds KEDA autoscaling."""
    state = _state(ctx)
    body: dict[str, Any] = {}
    if policy:
        body["policy"] = policy
    if max_replicas is not None or prometheus is not None:
        scaling: dict[str, Any] = {"maxReplicas": max_replicas, "prometheusServerAddress": prometheus}
        if min_replicas is not None:
            scaling["minReplicas"] = min_replicas
        body["autoscaling"] = {k: v for k, v in scaling.items() if v is not None}
    accepted = state.client().create_inference_router(tag, name, body, idempotency_key=idempotency_key)
    _report_accepted(
        state,
        accepted,
        f"router of {accepted['namespace']}/{accepted['name']}",
        f"Follow it with: instantstart deployments get {tag} {name}",
        as_json,
        wait=wait,
        poll_interval=poll_interval,
        timeout=wait_timeout,
    )
