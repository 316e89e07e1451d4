"""``instantstart jobs``: training jobs of a cluster (create from a recipe, list, get, logs, delete)."""

from __future__ import annotations

import json
import math
from typing import Annotated, Any, cast

import typer
from rich.table import Table

from instantstart_client.cli.common import (
    EXIT_INTERRUPTED,
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
    _pairs,
    _state,
    handle_errors,
)
from instantstart_client.progress import DEFAULT_POLL_INTERVAL
from instantstart_client.render import esc
from instantstart_client.shapes import Operation

jobs_app = typer.Typer(
    help="Training jobs of a cluster: create from a recipe (pytorch, script, llamafactory, msswift, verl), list, "
    "get, read or follow logs, delete.",
    no_args_is_help=True,
)

RECIPES = ("pytorch", "script", "llamafactory", "msswift", "verl")
JOB_TERMINAL_STATUSES = ("Succeeded", "Failed")
LOG_FOLLOW_INTERVAL = 5.0
"""Seconds between two log reads of ``jobs logs --follow``."""

JobNameArgument = Annotated[str, typer.Argument(help="Training job name, e.g. llama-sft-1.", show_default=False)]
NamespaceOption = Annotated[
    str, typer.Option("--namespace", "-n", help="Namespace of the job (a team's jobs: hyperpod-ns-<team>).")
]


def _job_body(
    recipe: str,
    options: dict[str, Any],
    env: list[str] | None,
    overrides: list[str] | None,
    from_file: str | None,
) -> dict[str, Any]:
    """The POST body: ``--file`` (a JSON body) first, then every option given; None options are left out."""
    body: dict[str, Any] = {}
    if from_file:
        try:
            with open(from_file, encoding="utf-8") as handle:
                loaded = json.load(handle)
        except (OSError, ValueError) as exc:
            raise typer.BadParameter(f"--file {from_file}: {exc}") from exc
        if not isinstance(loaded, dict):
            raise typer.BadParameter(f"--file {from_file} must hold a JSON object (the request body)")
        body.update(loaded)
    body["recipe"] = recipe
    body.update({key: value for key, value in options.items() if value not in (None, [])})
    if env:
        body["env"] = {**body.get("env", {}), **dict(_pairs(env, "--env"))}
    if overrides:
        body["overrides"] = {**body.get("overrides", {}), **dict(_pairs(overrides, "--override"))}
    return body


@jobs_app.command("create")
@handle_errors
def jobs_create(
    ctx: typer.Context,
    tag: TagArgument,
    recipe: Annotated[str, typer.Option("--recipe", help=f"Recipe: {', '.join(RECIPES)}.")],
    name: Annotated[str | None, typer.Option("--name", help="Job name (DNS-1123, e.g. llama-sft-1).")] = None,
    instance_type: Annotated[
        str | None, typer.Option("--instance-type", help="Instance type of the pods, e.g. ml.g5.8xlarge.")
    ] = None,
    image: Annotated[str | None, typer.Option("--image", help="Container image with a pinned tag or digest.")] = None,
    nodes: Annotated[int | None, typer.Option("--nodes", help="Nodes, one pod each (default 1).")] = None,
    nproc_per_node: Annotated[
        int | None, typer.Option("--nproc-per-node", help="Processes (GPUs) per pod (default: the type's GPUs).")
    ] = None,
    script: Annotated[str | None, typer.Option("--script", help="pytorch: the training script path.")] = None,
    command: Annotated[
        list[str] | None, typer.Option("--command", help="script: one argv element of the command (repeat).")
    ] = None,
    arg: Annotated[list[str] | None, typer.Option("--arg", help="An argument (argv element, repeat).")] = None,
    config_path: Annotated[
        str | None, typer.Option("--config-path", help="llamafactory/msswift: YAML config under /s3 or /fsx.")
    ] = None,
    model: Annotated[str | None, typer.Option("--model", help="Model (Hugging Face id or a path).")] = None,
    dataset: Annotated[str | None, typer.Option("--dataset", help="llamafactory/msswift: dataset name(s).")] = None,
    output_path: Annotated[
        str | None, typer.Option("--output-path", help="Checkpoints directory under /s3 or /fsx.")
    ] = None,
    train_files: Annotated[str | None, typer.Option("--train-files", help="verl: training parquet.")] = None,
    val_files: Annotated[str | None, typer.Option("--val-files", help="verl: validation parquet.")] = None,
    env: Annotated[list[str] | None, typer.Option("--env", help="KEY=VALUE environment variable (repeat).")] = None,
    override: Annotated[
        list[str] | None, typer.Option("--override", help="verl: KEY=VALUE Hydra override (repeat).")
    ] = None,
    namespace: Annotated[str | None, typer.Option("--namespace", "-n", help="Namespace (default: default).")] = None,
    team: Annotated[str | None, typer.Option("--team", help="Task governance team (Kueue queue).")] = None,
    priority_class: Annotated[str | None, typer.Option("--priority-class", help="Kueue priority class.")] = None,
    from_file: Annotated[
        str | None,
        typer.Option("--file", "-f", help="A JSON request body (e.g. with runPolicy); options given override it."),
    ] = None,
    idempotency_key: IdempotencyOption = None,
    wait: WaitOption = False,
    poll_interval: PollOption = DEFAULT_POLL_INTERVAL,
    wait_timeout: WaitTimeoutOption = None,
    as_json: JsonOption = False,
) -> None:
    """Create a training job from a recipe. The API checks the training operator, GPUs and nodes first (exit 2 with
    its 4xx), then an operation applies the job; follow the job with `jobs get` and `jobs logs --follow`."""
    state = _state(ctx)
    options = {
        "name": name,
        "instanceType": instance_type,
        "image": image,
        "nodes": nodes,
        "nprocPerNode": nproc_per_node,
        "script": script,
        "command": command,
        "args": arg,
        "configPath": config_path,
        "model": model,
        "dataset": dataset,
        "outputPath": output_path,
        "trainFiles": train_files,
        "valFiles": val_files,
        "namespace": namespace,
        "team": team,
        "priorityClass": priority_class,
    }
    body = _job_body(recipe, options, env, override, from_file)
    accepted = state.client().create_training_job(tag, body, idempotency_key=idempotency_key)
    _report_job_operation(state, tag, accepted, as_json, wait=wait, poll_interval=poll_interval, timeout=wait_timeout)


def _report_job_operation(
    state: CliState,
    tag: str,
    accepted: dict[str, Any],
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
        f"{esc(operation.get('type'))} {esc(accepted['kind'])} [bold]{esc(accepted['namespace'])}/"
        f"{esc(accepted['name'])}[/] on {esc(tag)}: operation {esc(operation.get('operationId'))} "
        f"{esc(operation.get('status'))}",
        highlight=False,
    )
    state.console.print(
        f"Follow it with: instantstart jobs get {tag} {accepted['name']} -n {accepted['namespace']}  "
        f"(logs: instantstart jobs logs {tag} {accepted['name']} -n {accepted['namespace']} --follow)",
        markup=False,
        highlight=False,
    )


def _age(seconds: int | None) -> str:
    if seconds is None:
        return "-"
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


@jobs_app.command("list")
@handle_errors
def jobs_list(
    ctx: typer.Context,
    tag: TagArgument,
    namespace: Annotated[
        str | None, typer.Option("--namespace", "-n", help="Only this namespace (default: every one).")
    ] = None,
    max_results: Annotated[int | None, typer.Option("--max-results", help="Most jobs per page (1-100).")] = None,
    next_token: Annotated[str | None, typer.Option("--next-token", help="nextToken of the previous page.")] = None,
    as_json: JsonOption = False,
) -> None:
    """The cluster's training jobs, newest first: status, restarts, age."""
    state = _state(ctx)
    listing = state.client().list_training_jobs(
        tag, namespace=namespace, max_results=max_results, next_token=next_token
    )
    if state.wants_json(as_json):
        _echo_json(listing)
        return
    table = Table(title=f"training jobs of {tag}")
    for column in ("Name", "Namespace", "Kind", "Recipe", "Status", "Restarts", "Age"):
        table.add_column(column)
    for job in listing["trainingJobs"]:
        table.add_row(
            job["name"],
            job["namespace"],
            job["kind"],
            str(job.get("recipe") or "-"),
            job["status"],
            str(job["restarts"]),
            _age(job.get("ageSeconds")),
        )
    state.console.print(table)
    if not listing["trainingJobs"]:
        state.console.print("no training jobs")
    if listing.get("nextToken"):
        state.console.print(f"More: --next-token {listing['nextToken']}", markup=False, highlight=False)


@jobs_app.command("get")
@handle_errors
def jobs_get(
    ctx: typer.Context,
    tag: TagArgument,
    name: JobNameArgument,
    namespace: NamespaceOption = "default",
    as_json: JsonOption = False,
) -> None:
    """A training job: status (and why it failed), spec summary, pods (node, phase, restarts), restart history."""
    state = _state(ctx)
    job = state.client().get_training_job(tag, name, namespace=namespace)
    if state.wants_json(as_json):
        _echo_json(job)
        return
    console = state.console
    console.print(
        f"[bold]{esc(job['namespace'])}/{esc(job['name'])}[/] {esc(job['kind'])} ({esc(job.get('recipe') or '-')}): "
        f"[bold]{esc(job['status'])}[/], {job['restarts']} restarts, age {_age(job.get('ageSeconds'))}",
        highlight=False,
    )
    if job.get("reason"):
        console.print(f"Reason: {esc(job['reason'])}", highlight=False, soft_wrap=True)
    spec = job.get("spec") or {}
    shown = ", ".join(f"{k}={spec[k]}" for k in ("instanceType", "nodes", "nprocPerNode", "image") if spec.get(k))
    if shown:
        console.print(f"Spec: {esc(shown)}", highlight=False, soft_wrap=True)
    pods = Table(title="pods")
    for column in ("Rank", "Pod", "Node", "Phase", "Restarts", "Waiting"):
        pods.add_column(column)
    for pod in job["pods"]:
        pods.add_row(
            "-" if pod.get("rank") is None else str(pod["rank"]),
            pod["name"],
            str(pod.get("nodeName") or "-"),
            str(pod.get("phase") or "-"),
            str(pod["restarts"]),
            esc(str(pod.get("reason") or "-")),
        )
    console.print(pods)
    if job.get("restartHistory"):
        history = Table(title="restart history")
        for column in ("When", "Type", "Reason", "Message"):
            history.add_column(column)
        for c in job["restartHistory"]:
            history.add_row(
                str(c.get("lastTransitionTime") or "-"),
                c["type"],
                str(c.get("reason") or "-"),
                str(c.get("message") or ""),
            )
        console.print(history)


def _new_lines(previous: list[str], lines: list[str]) -> list[str]:
    """``lines`` without the head that repeats the end of ``previous`` (a sinceSeconds window overlaps the last)."""
    for k in range(min(len(previous), len(lines)), 0, -1):
        if previous[-k:] == lines[:k]:
            return lines[k:]
    return lines


@jobs_app.command("logs")
@handle_errors
def jobs_logs(
    ctx: typer.Context,
    tag: TagArgument,
    name: JobNameArgument,
    namespace: NamespaceOption = "default",
    pod: Annotated[str | None, typer.Option("--pod", help="Pod (default: rank 0; names in `jobs get`).")] = None,
    container: Annotated[str | None, typer.Option("--container", help="Container.")] = None,
    tail: Annotated[int | None, typer.Option("--tail", help="Only the last lines (default 1000).")] = None,
    since: Annotated[int | None, typer.Option("--since", help="Only lines of the last seconds.")] = None,
    follow: Annotated[
        bool,
        typer.Option("--follow", help="Keep reading new lines (sinceSeconds) until the job ends; exit 1 if it Failed."),
    ] = False,
    poll_interval: Annotated[
        float, typer.Option("--poll-interval", min=0.1, help="Seconds between reads with --follow.")
    ] = LOG_FOLLOW_INTERVAL,
    as_json: JsonOption = False,
) -> None:
    """Log text of one pod of the job (rank 0 by default); --follow polls for new lines until the job ends."""
    state = _state(ctx)
    client = state.client()
    json_out = state.wants_json(as_json)
    answer = client.get_training_job_logs(
        tag, name, namespace=namespace, pod=pod, container=container, tail_lines=tail, since_seconds=since
    )
    if json_out and not follow:
        _echo_json(answer)
        return
    chosen = answer["pod"]
    if answer.get("truncated"):
        state.err_console.print(f"(older lines of {chosen} cut to the API's size bound)", highlight=False)
    printed = answer["text"].splitlines()
    for line in printed:
        typer.echo(line)
    if not follow:
        return
    from instantstart_client import cli as package  # its _sleep and _monotonic: tests replace them there

    last_read = package._monotonic()
    try:
        while True:
            package._sleep(poll_interval)
            status = client.get_training_job(tag, name, namespace=namespace)["status"]
            now = package._monotonic()
            window = max(1, math.ceil(now - last_read) + 1)  # one second of overlap; repeats are dropped
            answer = client.get_training_job_logs(
                tag, name, namespace=namespace, pod=chosen, container=container, since_seconds=window
            )
            last_read = now
            fresh = _new_lines(printed, answer["text"].splitlines())
            for line in fresh:
                typer.echo(line)
            printed = (printed + fresh)[-1000:]
            if status in JOB_TERMINAL_STATUSES:
                state.err_console.print(f"Job {namespace}/{name} {status}.", highlight=False)
                if status == "Failed":
                    raise typer.Exit(EXIT_OPERATION_FAILED)
                return
    except KeyboardInterrupt:
        raise typer.Exit(EXIT_INTERRUPTED) from None


@jobs_app.command("delete")
@handle_errors
def jobs_delete(
    ctx: typer.Context,
    tag: TagArgument,
    name: JobNameArgument,
    namespace: NamespaceOption = "default",
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    idempotency_key: IdempotencyOption = None,
    wait: WaitOption = False,
    poll_interval: PollOption = DEFAULT_POLL_INTERVAL,
    wait_timeout: WaitTimeoutOption = None,
    as_json: JsonOption = False,
) -> None:
    """Delete a training job and its pods (asks you to type the job name); its processes stop."""
    state = _state(ctx)
    if not yes:
        typed = typer.prompt(
            f"This deletes training job '{namespace}/{name}' of '{tag}' and its pods. Type the job name"
        )
        if typed.strip() != name:
            state.err_console.print("Aborted: the name you typed does not match; nothing was deleted.")
            raise typer.Exit(EXIT_OPERATION_FAILED)
    accepted = state.client().delete_training_job(tag, name, namespace=namespace, idempotency_key=idempotency_key)
    _report_job_operation(state, tag, accepted, as_json, wait=wait, poll_interval=poll_interval, timeout=wait_timeout)
