"""The whole control plane on one machine: emulated AWS, emulated Kubernetes, the template deployed.

``Sandbox().start()`` brings up, in order: the simulated clock, the Kubernetes API server (HTTPS,
its own CA, EKS bearer-token check), moto with the sandbox extension, the in-process Lambda runtime
and Step Functions clock hooks, the template's resources, and the HTTP API router. Nothing in the
product knows it runs here: it reaches AWS through ``AWS_ENDPOINT_URL`` and Kubernetes through
the endpoint and CA that EKS ``DescribeCluster`` returns.
"""

from __future__ import annotations

import gc
import logging
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from instantstart_sandbox import artifacts as built
from instantstart_sandbox import iam_audit, lambda_process, lambdas, moto_fixes, moto_speedups, stepfunctions
from instantstart_sandbox.aws import scheduler, transport
from instantstart_sandbox.clock import SimClock
from instantstart_sandbox.console import ConsoleSite
from instantstart_sandbox.deploy import Deployer, Deployment, translate
from instantstart_sandbox.httpapi import HttpApiServer

PACKAGE_DIR = Path(__file__).resolve().parent
DEFAULT_TIME_SCALE = 60.0
"""Simulated seconds per wall second: a ~35-minute cluster creation takes well under a minute."""

GC_THRESHOLDS = (100_000, 50, 100)
"""The cyclic garbage collector's thresholds while a sandbox runs (Python's default: 700, 10, 10). The sandbox allocates
fast (moto's items, botocore's parsed answers, Kubernetes objects) over a large live heap, so the default collected
often and walked the whole heap about once every two seconds: 18% of the CPU of an integration module
(``tests/integration/test_features.py``: 7.7 of 42 CPU-seconds in 2,592 collections; 3.9 with these, most of it before
the sandbox starts). Reference counting still frees almost everything at once; cycles wait for up to 100,000
allocations before their first look (the module's peak memory: about 565 MB before, 595 MB with these).
:meth:`Sandbox.stop` restores the thresholds it found."""

CREDENTIALS = {"access_key": "AKIASANDBOXEXAMPLE00", "secret_key": "sandbox-secret-access-key"}
ACCOUNT_ID = "123456789012"


class TemplateNotFoundError(FileNotFoundError):
    """No SAM template to deploy: none was given and the package does not sit in a project checkout."""


def checkout_template(package_dir: Path = PACKAGE_DIR) -> Path | None:
    """The project checkout's ``template.yaml`` when this package is installed from its source tree.

    In a checkout (an editable install), the package lives at ``<checkout>/sandbox/src/instantstart_sandbox``;
    an installed wheel sits in ``site-packages`` with no template next to it. Returns ``None`` then.
    """
    candidate = package_dir.parent.parent.parent / "template.yaml"
    return candidate if candidate.is_file() else None


def resolve_template(template_path: Path | str | None = None, package_dir: Path = PACKAGE_DIR) -> Path:
    """The SAM template to deploy: ``template_path`` if given, else the checkout's ``template.yaml``.

    Raises:
        TemplateNotFoundError: the given file does not exist, or none was given and the package is not
            installed from a checkout (the message says to pass ``--template``).
    """
    if template_path is not None:
        path = Path(template_path).expanduser().resolve()
        if not path.is_file():
            raise TemplateNotFoundError(f"SAM template {path} does not exist")
        return path
    found = checkout_template(package_dir)
    if found is None:
        raise TemplateNotFoundError(
            f"no SAM template given and none found in a project checkout around {package_dir}; "
            "pass the project's template.yaml with --template PATH (Sandbox(template_path=...))"
        )
    return found


class Sandbox:
    """The offline sandbox.

    Args:
        time_scale: simulated seconds per wall second (``--time-scale``).
        region: the emulated Region.
        log_level: log level of the in-process Lambda functions (Powertools).
        template_path: the SAM template to deploy (``--template``); its ``CodeUri``/``ContentUri`` paths are
            relative to it. Default: the checkout's ``template.yaml`` (see :func:`resolve_template`).
        hyperpod_state_change_events: whether HyperPod emits "SageMaker HyperPod Cluster State Change" events
            (``--no-hyperpod-state-change-events``); cluster events are emitted either way. Settable later on
            ``sandbox.aws.extension.hyperpod.state_change_events``.
        engine_log: file for moto's own log records (the Step Functions engine's internals); default
            a new file under ``<tmp>/instantstart-sandbox/``. Its path is :attr:`engine_log_path`.
        lambda_environments: how many invocations of one deployed function may run at once, each in its own
            execution environment (default 1: one container per function). More lets concurrent API requests
            race as they do when Lambda scales out; settable later with
            :func:`instantstart_sandbox.lambdas.set_environments`.
        lambda_runtime: ``"process"``: each execution environment a process running AWS's runtime interface client
            (``awslambdaric``) on the built artifacts, with Lambda's variables and nothing else on ``sys.path``
            (:mod:`instantstart_sandbox.lambda_process`; ``make demo`` and ``serve``); ``"thread"`` (default): the
            handlers of the same artifacts imported into this process (cheaper; the test suites' default).
        scheduled_firing: whether the template's EventBridge Scheduler schedules fire on the simulated clock
            (False: only ``sandbox.schedules.fire(name)`` invokes them; settable later on
            ``sandbox.schedules.automatic``; :mod:`instantstart_sandbox.aws.scheduler`).
        artifacts: ``sam build``'s layout to run (default ``<template's directory>/.aws-sam/host``, written by
            ``make build-host``; :mod:`instantstart_sandbox.artifacts`).

    Raises:
        TemplateNotFoundError: no template was given or found (checked here, before anything starts).
        ArtifactsError: (at :meth:`start`) the build directory is missing or older than the sources.
    """

    def __init__(
        self,
        time_scale: float = DEFAULT_TIME_SCALE,
        region: str = "us-west-2",
        log_level: str = "WARNING",
        template_path: Path | str | None = None,
        hyperpod_state_change_events: bool = True,
        engine_log: Path | str | None = None,
        lambda_environments: int = 1,
        lambda_runtime: lambdas.RuntimeMode = "thread",
        artifacts: Path | str | None = None,
        scheduled_firing: bool = True,
    ) -> None:
        self.template_path = resolve_template(template_path)
        self.lambda_runtime: lambdas.RuntimeMode = lambda_runtime
        self.build = built.build_dir(self.template_path, artifacts)
        self.hyperpod_state_change_events = hyperpod_state_change_events
        self.engine_log_path = (
            Path(engine_log)
            if engine_log is not None
            else Path(tempfile.gettempdir())
            / "instantstart-sandbox"
            / f"engine-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"
        )
        self.time_scale = time_scale
        self.lambda_environments = lambda_environments
        self.scheduled_firing = scheduled_firing
        self.log_level = log_level
        self.region = region
        self.account_id = ACCOUNT_ID
        self.clock = SimClock(time_scale)
        self.kube: Any = None
        self.aws: Any = None
        self.http: HttpApiServer | None = None
        self._gc_thresholds: tuple[int, int, int] | None = None
        self._frozen = False
        self.deployment: Deployment | None = None

    @property
    def api_url(self) -> str:
        """Base URL of the HTTP API (SigV4-sign requests with :data:`CREDENTIALS`)."""
        assert self.http is not None, "sandbox not started"
        return self.http.url

    @property
    def console_url(self) -> str | None:
        """The web console, ``<api_url>/console/``, when the checkout has one (``console/site`` by the template)."""
        assert self.http is not None, "sandbox not started"
        return f"{self.http.url}/console/" if self.http.console is not None else None

    @property
    def aws_endpoint_url(self) -> str:
        """Endpoint of the emulated AWS."""
        return str(self.aws.endpoint_url)

    def client_environment(self) -> dict[str, str]:
        """Environment a client process needs to call the sandbox API (URL, Region, credentials)."""
        return {
            "INSTANTSTART_API_URL": self.api_url,
            "AWS_REGION": self.region,
            "AWS_DEFAULT_REGION": self.region,
            "AWS_ACCESS_KEY_ID": CREDENTIALS["access_key"],
            "AWS_SECRET_ACCESS_KEY": CREDENTIALS["secret_key"],
        }

    def start(self) -> Sandbox:
        """Start every part and deploy the template; returns self."""
        from instantstart_sandbox.aws.server import AwsSandboxServer
        from instantstart_sandbox.kube.auth import eks_token_validator
        from instantstart_sandbox.kube.server import KubeApiServer

        self._gc_thresholds = gc.get_threshold()
        gc.set_threshold(*GC_THRESHOLDS)
        os.environ.update(
            {
                "AWS_ACCESS_KEY_ID": CREDENTIALS["access_key"],
                "AWS_SECRET_ACCESS_KEY": CREDENTIALS["secret_key"],
                "AWS_REGION": self.region,
                "AWS_DEFAULT_REGION": self.region,
                "MOTO_IAM_LOAD_MANAGED_POLICIES": "true",
                "POWERTOOLS_TRACE_DISABLED": "true",
            }
        )
        os.environ.pop("AWS_SESSION_TOKEN", None)
        os.environ.pop("AWS_PROFILE", None)
        stepfunctions.route_engine_logs(self.engine_log_path)
        self.kube = KubeApiServer(token_validator=eks_token_validator, clock=self.clock)
        self.kube.start()
        self.aws = AwsSandboxServer(
            self.clock, self.kube, self.region, self.account_id, self.hyperpod_state_change_events
        )
        self.aws.start()
        os.environ["AWS_ENDPOINT_URL"] = self.aws.endpoint_url
        self._use_artifacts()
        lambdas.install()
        iam_audit.install()
        transport.install()
        lambdas.use_clock(self.clock.now, self.clock.sleep)
        lambdas.sdk_backoff_on(self.clock)
        lambdas.use_sim_clock(self.clock)
        moto_fixes.install()
        moto_speedups.install()
        stepfunctions.install(self.clock)
        scheduler.SCHEDULES.use(self.clock, self.region, self.account_id, automatic=self.scheduled_firing)
        deployer = Deployer(self.aws.endpoint_url, self.region, self.account_id, build=self.build)
        self.deployment = deployer.deploy(self.template_path)
        # In-process functions share this process's environment (the deployer checked it is consistent).
        # Only the log level is the sandbox's own: Lambda logs would otherwise flood the terminal.
        os.environ.update(self.deployment.environment)
        os.environ["POWERTOOLS_LOG_LEVEL"] = self.log_level
        lambdas.set_environments(self.lambda_environments)
        site = self.template_path.parent / "console" / "site"
        self.http = HttpApiServer(
            self.deployment.routes,
            deployer.client("lambda"),
            CREDENTIALS,
            self.region,
            self.account_id,
            console=ConsoleSite(site, self.region, CREDENTIALS) if site.is_dir() else None,
        )
        self.http.start()
        logging.getLogger(__name__).info("sandbox API at %s", self.http.url)
        # What exists now (modules, botocore and moto models, the deployed template) lives as long as the sandbox:
        # the collector need not walk it again in every full collection (``stop`` gives it back).
        gc.freeze()
        self._frozen = True
        return self

    def _use_artifacts(self) -> None:
        """Check the build against the sources and set the Lambda runtime up to run it."""
        _, local = translate(self.template_path, self.region)
        built.check_sources(self.build, local)
        built.activate([built.layer_dir(self.build, built.CORE_LAYER)])
        self.use_lambda_runtime(self.lambda_runtime)

    def use_lambda_runtime(self, mode: lambdas.RuntimeMode) -> None:
        """Run the next invocations in ``mode`` (see the class's ``lambda_runtime``); the process environments of the
        previous mode are stopped. Raises ``ValueError`` for another mode."""
        lambdas.use_runtime(mode)
        self.lambda_runtime = mode
        if mode == "thread":
            lambda_process.configure(None)
            return
        lambda_process.configure(
            lambda_process.ProcessSettings(
                python=sys.executable,
                runtime_dir=built.function_dir(self.build, built.RUNTIME_DIR),
                endpoint_url=self.aws.endpoint_url,
                secret_key=CREDENTIALS["secret_key"],
                region=self.region,
                clock=self.clock,
                log_dir=self.engine_log_path.with_suffix(".lambda"),
                common_environment={"POWERTOOLS_TRACE_DISABLED": "true", "POWERTOOLS_LOG_LEVEL": self.log_level},
            )
        )

    @property
    def schedules(self) -> scheduler.Schedules:
        """The template's EventBridge Scheduler schedules: ``fire(name)`` (one synchronous invocation, the handler's
        result), ``wait_for_firings(name, n)``, ``state(name)`` (firings made and refused), ``automatic``. ``name``
        is the deployed name: ``sandbox.deployment.physical[<logical id>]``."""
        return scheduler.SCHEDULES

    @property
    def lambda_faults(self) -> lambdas.LambdaFaults:
        """Crash or time out invocations of the deployed functions after their n-th AWS call
        (:data:`instantstart_sandbox.lambdas.FAULTS`)."""
        return lambdas.FAULTS

    def function_name(self, logical_id: str) -> str:
        """The deployed name of the template's function ``logical_id`` (e.g. ``ClusterStepsFunction``).

        Raises:
            KeyError: the template has no such function.
        """
        assert self.deployment is not None, "start() first"
        name = self.deployment.physical[logical_id]
        if name not in lambdas.REGISTRY:
            raise KeyError(f"{logical_id} is not a function of the template")
        return name

    def audit_iam(self) -> iam_audit.AuditReport:
        """Every AWS call the deployed functions made so far, judged against their roles in the template: the
        actions a role lacks, and the EKS/HyperPod writes its tag conditions would deny
        (:func:`instantstart_sandbox.iam_audit.audit`)."""
        assert self.aws is not None and self.deployment is not None, "start() first"
        functions = {name: lid for lid, name in self.deployment.physical.items() if name in lambdas.REGISTRY}
        calls = self.aws.extension.calls
        return iam_audit.audit(
            dict(calls.by_caller),
            self.template_path,
            self.region,
            functions,
            targets=dict(calls.by_target),
            account_id=self.account_id,
        )

    def stop(self) -> None:
        """Stop the servers and the clock."""
        if self.http:
            self.http.stop()
        if self.aws:
            self.aws.stop()
        if self.kube:
            self.kube.stop()
        lambda_process.configure(None)
        lambdas.use_runtime("thread")
        lambdas.FAULTS.clear()
        lambdas.use_clock(None)
        scheduler.SCHEDULES.use(None, self.region, self.account_id)
        lambdas.sdk_backoff_on(None)
        lambdas.use_sim_clock(None)
        self.clock.stop()
        if self._gc_thresholds is not None:
            gc.set_threshold(*self._gc_thresholds)
            self._gc_thresholds = None
        if self._frozen:
            gc.unfreeze()
            self._frozen = False

    def __enter__(self) -> Sandbox:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
