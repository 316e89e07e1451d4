"""``instantstart-sandbox``: run the control plane offline (``demo`` runs the main job end to end)."""

from __future__ import annotations

import enum
import gc
import logging
import os
import sys
import threading
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from instantstart_sandbox.artifacts import ArtifactsError
from instantstart_sandbox.aws.faults import (
    DEFAULT_BUCKET_REUSE_SECONDS,
    DEFAULT_ENI_LINGER_SECONDS,
    DEFAULT_KUBE_ACCESS_SECONDS,
    DEFAULT_ROLE_PROPAGATION_SECONDS,
    FaultInjector,
)
from instantstart_sandbox.runner import DEFAULT_TIME_SCALE, Sandbox, TemplateNotFoundError

app = typer.Typer(add_completion=False, no_args_is_help=True, help="The InstantStart offline sandbox.")
console = Console()

TimeScale = Annotated[
    float,
    typer.Option("--time-scale", min=1.0, max=100000.0, help="Simulated seconds per wall second (1 = real time)."),
]


class LambdaRuntime(enum.StrEnum):
    """How the sandbox runs the deployed functions (``Sandbox(lambda_runtime=...)``)."""

    process = "process"
    thread = "thread"


LambdaRuntimeOption = Annotated[
    LambdaRuntime,
    typer.Option(
        "--lambda-runtime",
        help="process: each Lambda execution environment a process running AWS's awslambdaric on the built "
        "artifacts (make build-host); thread: the same artifacts' handlers called in this process (cheaper).",
    ),
]

Template = Annotated[
    Path | None,
    typer.Option(
        "--template",
        metavar="PATH",
        help="SAM template to deploy. Default: template.yaml of the project checkout this package is installed from.",
    ),
]


LOG_FORMAT = "%(levelname)s %(name)s: %(message)s"


def _configure_logging(executions: bool) -> None:
    """Warnings to stderr; the sandbox's own records through a handler of their own.

    Powertools (loaded with the in-process functions, service ``instantstart``) filters the root
    handlers to drop every record whose logger name contains ``instantstart``, which includes this
    package's loggers (``instantstart_sandbox.*``): without their own handler, the access log and
    the sandbox's warnings would go silent after the first Lambda invocation.
    """
    logging.basicConfig(level=logging.WARNING, format=LOG_FORMAT)
    own = logging.getLogger("instantstart_sandbox")
    if not own.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter(LOG_FORMAT))
        own.addHandler(handler)
    own.propagate = False
    # serve: one line per execution start, stage change and end (the engine's internals go to the engine
    # log); the demo shows its own progress board instead
    logging.getLogger("instantstart_sandbox.executions").setLevel(logging.INFO if executions else logging.WARNING)


def _start(
    time_scale: float,
    template: Path | None,
    state_change_events: bool = True,
    *,
    executions: bool = True,
    lambda_runtime: LambdaRuntime = LambdaRuntime.process,
) -> Sandbox:
    _configure_logging(executions)
    try:
        sandbox = Sandbox(
            time_scale=time_scale,
            template_path=template,
            hyperpod_state_change_events=state_change_events,
            lambda_runtime="thread" if lambda_runtime is LambdaRuntime.thread else "process",
        )
    except TemplateNotFoundError as error:
        raise typer.BadParameter(str(error), param_hint="--template") from error
    started = time.monotonic()
    try:
        with console.status("Starting the sandbox: emulated AWS, Kubernetes API, template deployment..."):
            sandbox.start()
    except ArtifactsError as error:
        sandbox.stop()
        console.print(f"[red]{error}[/red]")
        raise typer.Exit(2) from error
    console.print(
        f"[green]Sandbox ready[/green] in {time.monotonic() - started:.1f}s: API {sandbox.api_url}, "
        f"time scale {time_scale:g}x"
    )
    if executions:
        console.print(f"Step Functions engine log: {sandbox.engine_log_path}")
    return sandbox


@app.command()
def demo(
    time_scale: TimeScale = DEFAULT_TIME_SCALE,
    template: Template = None,
    cluster_tag: Annotated[str, typer.Option("--tag", help="Cluster tag.")] = "demo",
    availability_zone: Annotated[str, typer.Option("--az", help="Availability Zone.")] = "us-west-2c",
    instance_type: Annotated[str, typer.Option("--instance-type")] = "ml.g6.4xlarge",
    instance_count: Annotated[int, typer.Option("--count", min=1)] = 1,
    lambda_runtime: LambdaRuntimeOption = LambdaRuntime.process,
) -> None:
    """Start the sandbox and create a HyperPod cluster through the HTTP API, as the article's agent does."""
    from instantstart_client.api import InstantStartClient
    from instantstart_client.demo import run_demo

    sandbox = _start(time_scale, template, executions=False, lambda_runtime=lambda_runtime)
    started = time.monotonic()
    try:
        os.environ.update(sandbox.client_environment())
        client = InstantStartClient(sandbox.api_url, region=sandbox.region)
        code = run_demo(
            client,
            console,
            cluster_tag=cluster_tag,
            availability_zone=availability_zone,
            instance_type=instance_type,
            instance_count=instance_count,
            poll_interval=1.0,
        )
        console.print(f"Demo finished in {time.monotonic() - started:.1f}s of wall time.")
    finally:
        sandbox.stop()
    raise typer.Exit(code)


FailCapacity = Annotated[
    list[str] | None,
    typer.Option(
        "--fail-hyperpod-capacity",
        metavar="INSTANCE_TYPE",
        help="HyperPod launches of this instance type fail for insufficient capacity (repeatable): Error cluster "
        "events, the cluster stays InService below its target and HyperPod retries every few simulated minutes.",
    ),
]

CapacityFailures = Annotated[
    int,
    typer.Option(
        "--capacity-failures",
        min=0,
        metavar="N",
        help="Failed launch attempts per --fail-hyperpod-capacity type before capacity returns (0: never).",
    ),
]

StateChangeEvents = Annotated[
    bool,
    typer.Option(
        "--hyperpod-state-change-events/--no-hyperpod-state-change-events",
        help='Emit the EventBridge "SageMaker HyperPod Cluster State Change" events (cluster events are always on).',
    ),
]


RefuseZone = Annotated[
    list[str] | None,
    typer.Option(
        "--refuse-eks-zone",
        metavar="ZONE",
        help="EKS CreateCluster with a subnet in ZONE fails with UnsupportedAvailabilityZoneException (repeatable).",
    ),
]
Throttle = Annotated[
    list[str] | None,
    typer.Option(
        "--throttle",
        metavar="SERVICE:OPERATION[:TIMES]",
        help="The next TIMES (default 1) calls of the operation are throttled, e.g. eks:CreateAddon:5 (repeatable).",
    ),
]


def parse_throttle(spec: str) -> tuple[str, str, int]:
    """``SERVICE:OPERATION[:TIMES]`` -> (service, operation, times); ``typer.BadParameter`` when malformed."""
    parts = spec.split(":")
    if len(parts) not in (2, 3) or not all(parts[:2]) or (len(parts) == 3 and not parts[2].isdigit()):
        raise typer.BadParameter(f"expected SERVICE:OPERATION[:TIMES], got {spec!r}", param_hint="--throttle")
    times = int(parts[2]) if len(parts) == 3 else 1
    if times < 1:
        raise typer.BadParameter("TIMES must be >= 1", param_hint="--throttle")
    return parts[0], parts[1], times


def apply_fault_options(
    faults: FaultInjector,
    *,
    fail_capacity: list[str] | None = None,
    capacity_failures: int = 2,
    refuse_zones: list[str] | None = None,
    throttles: list[str] | None = None,
    role_propagation_seconds: float = DEFAULT_ROLE_PROPAGATION_SECONDS,
    kube_access_seconds: float = DEFAULT_KUBE_ACCESS_SECONDS,
    eni_linger_seconds: float = DEFAULT_ENI_LINGER_SECONDS,
    bucket_reuse_seconds: float = DEFAULT_BUCKET_REUSE_SECONDS,
) -> list[str]:
    """Set ``serve``'s fault options on ``faults``; one sentence per fault that is on, for the terminal."""
    said: list[str] = []
    for instance_type in fail_capacity or []:
        faults.fail_hyperpod_capacity(instance_type, times=capacity_failures or None)
        until = f"for {capacity_failures} launch attempts" if capacity_failures else "until the sandbox stops"
        said.append(f"HyperPod launches of {instance_type} fail for insufficient capacity {until}.")
    for zone in refuse_zones or []:
        faults.refuse_eks_zone(zone)
        said.append(f"EKS refuses clusters with a subnet in {zone} (UnsupportedAvailabilityZoneException).")
    for spec in throttles or []:
        service, operation, times = parse_throttle(spec)
        faults.throttle(service, operation, times)
        said.append(f"The next {times} {service}:{operation} call(s) are throttled.")
    faults.delay_role_propagation(role_propagation_seconds)
    faults.delay_kubernetes_access(kube_access_seconds)
    faults.linger_network_interfaces(eni_linger_seconds)
    faults.delay_bucket_name_reuse(bucket_reuse_seconds)
    for value, text in (
        (role_propagation_seconds, "New IAM roles cannot be assumed by SageMaker/EKS for {:g} s."),
        (kube_access_seconds, "New EKS access entries answer 401/403 on Kubernetes for {:g} s."),
        (eni_linger_seconds, "Network interfaces outlive deleted clusters by {:g} s (DependencyViolation)."),
        (bucket_reuse_seconds, "Deleted S3 bucket names cannot be reused for {:g} s (OperationAborted)."),
    ):
        if value > 0:
            said.append(text.format(value) + " (simulated)")
    return said


@app.command()
def serve(
    time_scale: TimeScale = DEFAULT_TIME_SCALE,
    template: Template = None,
    fail_capacity: FailCapacity = None,
    capacity_failures: CapacityFailures = 2,
    state_change_events: StateChangeEvents = True,
    refuse_zone: RefuseZone = None,
    throttle: Throttle = None,
    role_propagation_seconds: Annotated[
        float, typer.Option(min=0.0, help="New IAM roles cannot be assumed by SageMaker/EKS for this long (0: off).")
    ] = DEFAULT_ROLE_PROPAGATION_SECONDS,
    kube_access_seconds: Annotated[
        float, typer.Option(min=0.0, help="A new EKS access entry answers 401, then 403, for this long (0: off).")
    ] = DEFAULT_KUBE_ACCESS_SECONDS,
    eni_linger_seconds: Annotated[
        float,
        typer.Option(min=0.0, help="Network interfaces outlive a deleted EKS/HyperPod cluster by this long (0: off)."),
    ] = DEFAULT_ENI_LINGER_SECONDS,
    bucket_reuse_seconds: Annotated[
        float, typer.Option(min=0.0, help="A deleted S3 bucket's name cannot be created again for this long (0: off).")
    ] = DEFAULT_BUCKET_REUSE_SECONDS,
    lambda_runtime: LambdaRuntimeOption = LambdaRuntime.process,
) -> None:
    """Start the sandbox and keep it running; prints the environment a client needs.

    Durations are simulated seconds.
    """
    for spec in throttle or []:
        parse_throttle(spec)  # fail before starting anything
    sandbox = _start(time_scale, template, state_change_events, lambda_runtime=lambda_runtime)
    for line in apply_fault_options(
        sandbox.aws.extension.faults,
        fail_capacity=fail_capacity,
        capacity_failures=capacity_failures,
        refuse_zones=refuse_zone,
        throttles=throttle,
        role_propagation_seconds=role_propagation_seconds,
        kube_access_seconds=kube_access_seconds,
        eni_linger_seconds=eni_linger_seconds,
        bucket_reuse_seconds=bucket_reuse_seconds,
    ):
        console.print(line)
    if sandbox.console_url:
        console.print(f"Web console: {sandbox.console_url} (sign in to the sandbox there)")
    console.print("Point the CLI or the MCP proxy at it:")
    for key, value in sandbox.client_environment().items():
        console.print(f"  export {key}={value}")
    console.print("Ctrl-C stops the sandbox. Requests are logged below.")
    logging.getLogger("instantstart_sandbox.httpapi.access").setLevel(logging.INFO)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        sandbox.stop()


def main() -> None:
    """Console-script entry point."""
    try:
        app(prog_name="instantstart-sandbox")
    finally:
        # The process exits now: the interpreter need not walk and free the sandbox's heap object by object
        # (seconds for a heap of a million objects; the operating system takes the memory back at once).
        gc.freeze()


if __name__ == "__main__":
    main()
    sys.exit(0)
