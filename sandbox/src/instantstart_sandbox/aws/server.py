"""The AWS side of the offline sandbox: moto's server app behind the sandbox extension, in-process."""

from __future__ import annotations

import logging
import os
import threading

from instantstart_sandbox.aws import eks, eventbridge, limits, transport
from instantstart_sandbox.aws.extension import AwsExtension
from instantstart_sandbox.aws.kubetypes import KubeApiServerLike
from instantstart_sandbox.aws.protocol import WSGIApplication
from instantstart_sandbox.clock import SimClock

log = logging.getLogger(__name__)

_PREWARM = (
    ("moto.ec2.models", "ec2_backends"),
    ("moto.eks.models", "eks_backends"),
    ("moto.events.models", "events_backends"),
    ("moto.sqs.models", "sqs_backends"),
    ("moto.awslambda.models", "lambda_backends"),
    ("moto.dynamodb.models", "dynamodb_backends"),
    ("moto.stepfunctions.parser.models", "stepfunctions_parser_backends"),
)


class AwsSandboxServer:
    """A threaded HTTP server on 127.0.0.1 serving moto + :class:`AwsExtension`.

    Point boto3 at :attr:`endpoint_url` (``AWS_ENDPOINT_URL``) with any credentials. moto's state is
    process-global: two servers in one process share it. With ``in_process`` (the default) botocore clients in
    this process reach the same application without the socket once
    :func:`instantstart_sandbox.aws.transport.install` ran (:mod:`instantstart_sandbox.aws.transport`);
    clients in other processes use HTTP.

    Args:
        clock: the sandbox's simulated clock (drives every lifecycle).
        kube: the sandbox Kubernetes API server (``instantstart_sandbox.kube.KubeApiServer``).
        region: the region whose EKS / SageMaker requests the extension emulates.
        account_id: the account of moto's default credentials.
        hyperpod_state_change_events: whether HyperPod emits "SageMaker HyperPod Cluster State Change".
        in_process: answer this process's botocore requests to :attr:`endpoint_url` without HTTP.
    """

    def __init__(
        self,
        clock: SimClock,
        kube: KubeApiServerLike,
        region: str = "us-west-2",
        account_id: str = "123456789012",
        hyperpod_state_change_events: bool = True,
        in_process: bool = True,
    ) -> None:
        self.clock = clock
        self.kube = kube
        self.region = region
        self.account_id = account_id
        self.in_process = in_process
        self.extension = AwsExtension(clock, kube, region, account_id, hyperpod_state_change_events)
        self.endpoint_url = ""
        self.port = 0
        self.app: WSGIApplication | None = None  # moto behind the extension, once started
        self._server: object | None = None
        self._thread: threading.Thread | None = None
        self._previous_moto_port: str | None = None

    def start(self, host: str = "127.0.0.1", port: int = 0) -> None:
        """Serve on ``host:port`` (0 picks a free port) in a background thread; returns when listening.

        Switches on moto's Step Functions engine, patches EventBridge target delivery and the hard limits moto does
        not enforce (:mod:`instantstart_sandbox.aws.limits`), and exports
        ``MOTO_PORT`` (moto's Step Functions engine calls back to ``localhost:$MOTO_PORT``).
        """
        from moto.core.config import default_user_config

        default_user_config["stepfunctions"] = {"execute_state_machine": True}
        eventbridge.install()
        eks.install_moto_patches()
        limits.install(self.clock)

        from moto.moto_server.werkzeug_app import (
            DomainDispatcherApplication,
            MotoRequestHandler,
            create_backend_app,
        )
        from werkzeug.serving import make_server

        class QuietRequestHandler(MotoRequestHandler):
            """moto's request handler without a log line per request."""

            def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
                return None

        app = self.extension.wsgi(DomainDispatcherApplication(create_backend_app))
        self.app = app
        server = make_server(
            host,
            port,
            app,
            threaded=True,
            request_handler=QuietRequestHandler,
        )
        self._server = server
        self.port = int(server.server_address[1])
        self.endpoint_url = f"http://{host}:{self.port}"
        self.extension.endpoint_url = self.endpoint_url
        if self.in_process:
            transport.register(self.endpoint_url, app)
        self._previous_moto_port = os.environ.get("MOTO_PORT")
        os.environ["MOTO_PORT"] = str(self.port)
        self._thread = threading.Thread(target=server.serve_forever, name="aws-sandbox", daemon=True)
        self._thread.start()
        threading.Thread(target=self._prewarm, name="aws-sandbox-prewarm", daemon=True).start()

    def _prewarm(self) -> None:
        """Import and build moto's backends the sandbox uses (EC2 alone takes seconds on first use)."""
        import importlib

        for module, attr in _PREWARM:
            try:
                backends = getattr(importlib.import_module(module), attr)
                backends[self.account_id][self.region]
            except Exception:  # best effort: the first request builds it anyway
                log.debug("prewarming %s failed", module, exc_info=True)

    def stop(self) -> None:
        """Stop serving (moto's state stays in the process); restores a previous ``MOTO_PORT``."""
        if self.endpoint_url:
            transport.unregister(self.endpoint_url)
        server = self._server
        if server is not None:
            server.shutdown()  # type: ignore[attr-defined]
            server.server_close()  # type: ignore[attr-defined]
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None
        if os.environ.get("MOTO_PORT") == str(self.port) and self._previous_moto_port:
            os.environ["MOTO_PORT"] = self._previous_moto_port
