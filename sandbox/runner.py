"""The whole control plane on one machine: emulated AWS, emulated Kubernetes, the template deployed.

``Sandbox().start()`` brings up, in order: the simulated clock, the Kubernetes API server (HTTPS,
its own CA, EKS bearer-token check), moto with the sandbox extension, the in-process Lambda runtime
and Step Functions clock hooks, the template's resources, and the HTTP API router. Nothing in the
product knows it runs here: it reaches AWS through ``AWS_ENDPOINT_URL`` and Kubernetes through
the endpoint and CA that EKS ``DescribeCluster`` returns.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from sandbox import lambdas, moto_fixes, stepfunctions
from sandbox.clock import SimClock
from sandbox.deploy import Deployer, Deployment
from sandbox.httpapi import HttpApiServer

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "template.yaml"
DEFAULT_TIME_SCALE = 60.0
"""Simulated seconds per wall second: a ~35-minute cluster creation takes well under a minute."""

CREDENTIALS = {"access_key": "AKIASANDBOXEXAMPLE00", "secret_key": "sandbox-secret-access-key"}
ACCOUNT_ID = "123456789012"


class Sandbox:
    """The offline sandbox.

    Args:
        time_scale: simulated seconds per wall second (``--time-scale``).
        region: the emulated Region.
        log_level: log level of the in-process Lambda functions (Powertools).
    """

    def __init__(
        self, time_scale: float = DEFAULT_TIME_SCALE, region: str = "us-west-2", log_level: str = "WARNING"
    ) -> None:
        self.time_scale = time_scale
        self.log_level = log_level
        self.region = region
        self.account_id = ACCOUNT_ID
        self.clock = SimClock(time_scale)
        self.kube: Any = None
        self.aws: Any = None
        self.http: HttpApiServer | None = None
        self.deployment: Deployment | None = None

    @property
    def api_url(self) -> str:
        """Base URL of the HTTP API (SigV4-sign requests with :data:`CREDENTIALS`)."""
        assert self.http is not None, "sandbox not started"
        return self.http.url

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
        from sandbox.aws.server import AwsSandboxServer
        from sandbox.kube.auth import eks_token_validator
        from sandbox.kube.server import KubeApiServer

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
        self.kube = KubeApiServer(token_validator=eks_token_validator, clock=self.clock)
        self.kube.start()
        self.aws = AwsSandboxServer(self.clock, self.kube, self.region, self.account_id)
        self.aws.start()
        os.environ["AWS_ENDPOINT_URL"] = self.aws.endpoint_url
        lambdas.install()
        moto_fixes.install()
        stepfunctions.install(self.clock)
        deployer = Deployer(self.aws.endpoint_url, self.region, self.account_id)
        self.deployment = deployer.deploy(TEMPLATE)
        # In-process functions share this process's environment (the deployer checked it is consistent).
        # Only the log level is the sandbox's own: Lambda logs would otherwise flood the terminal.
        os.environ.update(self.deployment.environment)
        os.environ["POWERTOOLS_LOG_LEVEL"] = self.log_level
        self.http = HttpApiServer(
            self.deployment.routes, deployer.client("lambda"), CREDENTIALS, self.region, self.account_id
        )
        self.http.start()
        logging.getLogger(__name__).info("sandbox API at %s", self.http.url)
        return self

    def stop(self) -> None:
        """Stop the servers and the clock."""
        if self.http:
            self.http.stop()
        if self.aws:
            self.aws.stop()
        if self.kube:
            self.kube.stop()
        self.clock.stop()

    def __enter__(self) -> Sandbox:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
