"""The WSGI layer in front of moto: routes by the botocore service model, fills moto's gaps.

For each signed request it takes the service from the SigV4 credential scope and the operation from
``X-Amz-Target`` / ``Action`` / method + URI (botocore model), then either answers an injected fault,
answers the operation itself (EKS lifecycle, add-ons, access entries, pod identity; SageMaker
HyperPod; EC2 instance type offerings), or passes the request to moto unchanged.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from instantstart_sandbox.aws import ec2, eventbridge
from instantstart_sandbox.aws.eks import EksEmulator
from instantstart_sandbox.aws.faults import FaultInjector
from instantstart_sandbox.aws.hyperpod import HyperPodEmulator
from instantstart_sandbox.aws.kubetypes import KubeApiServerLike
from instantstart_sandbox.aws.protocol import (
    MODELS,
    AwsError,
    AwsRequest,
    RawResponse,
    StartResponse,
    WSGIApplication,
    WSGIEnviron,
    call_app,
    error_response,
    json_response,
    parse_params,
    read_body,
    resolve_operation,
    send,
    signing_scope,
)
from instantstart_sandbox.clock import SimClock

__all__ = ["AwsExtension", "FaultInjector", "WSGIApplication"]

log = logging.getLogger(__name__)

Handler = Callable[[AwsRequest, Callable[[], RawResponse]], Any]


class AwsExtension:
    """The sandbox's AWS extension in front of moto.

    Attributes:
        faults: the fault injector (per service/operation errors, HyperPod capacity failures).
        eks: the EKS emulator (cluster lifecycle, add-ons, access entries, pod identity).
        hyperpod: the SageMaker HyperPod emulator.
    """

    def __init__(
        self,
        clock: SimClock,
        kube: KubeApiServerLike,
        region: str = "us-west-2",
        account_id: str = "123456789012",
        hyperpod_state_change_events: bool = True,
    ) -> None:
        self.clock = clock
        self.region = region
        self.account_id = account_id
        self.faults = FaultInjector()
        self.eks = EksEmulator(clock, kube, region, account_id, self.emit)
        self.hyperpod = HyperPodEmulator(
            clock,
            kube,
            region,
            account_id,
            self.emit,
            self.faults,
            self.eks.cluster_status,
            self.eks.authentication_mode,
            state_change_events=hyperpod_state_change_events,
        )
        self._handlers: dict[tuple[str, str], Handler] = {}
        for op, handler in self.eks.handlers().items():
            self._handlers[("eks", op)] = handler
        for op, handler in self.hyperpod.handlers().items():
            self._handlers[("sagemaker", op)] = handler
        self._handlers[("ec2", "DescribeInstanceTypeOfferings")] = lambda req, fwd: (
            ec2.describe_instance_type_offerings(req, fwd, self.region)
        )
        self._services = {service for service, _ in self._handlers}

    def emit(self, source: str, detail_type: str, detail: dict[str, Any], resources: list[str]) -> None:
        """Emit an AWS service event on the default bus at the simulated time (through PutEvents)."""
        eventbridge.put_event(
            self.account_id, self.region, source, detail_type, detail, resources, time=self.clock.now()
        )

    def wsgi(self, app: WSGIApplication) -> WSGIApplication:
        """Wrap moto's WSGI ``app``: answer faults and emulated operations, pass the rest through."""

        def application(environ: WSGIEnviron, start_response: StartResponse) -> Iterable[bytes]:
            scope = signing_scope(environ)
            if scope is None:
                return app(environ, start_response)
            region, signing_name = scope
            service = MODELS.service_name(signing_name)
            if service not in self._services and not self.faults.has_faults_for(service):
                return app(environ, start_response)
            body = read_body(environ)
            operation = resolve_operation(MODELS, service, environ, body)
            if operation is None:
                return app(environ, start_response)
            model = MODELS.service_model(service)
            assert model is not None
            fault = self.faults.take(service, operation)
            if fault is not None:
                log.info("fault injected: %s.%s -> %s", service, operation, fault.code)
                return send(error_response(model.protocol, service, fault), start_response)
            handler = self._handlers.get((service, operation))
            if handler is None or region != self.region:
                return app(environ, start_response)
            req = AwsRequest(service, operation, model.operation_model(operation), environ, body, region=region)
            try:
                req.params = parse_params(req)
                result = handler(req, lambda: call_app(app, environ))
                response = result if isinstance(result, RawResponse) else json_response(req, result)
            except AwsError as error:
                response = error_response(model.protocol, service, error)
            except Exception as exc:
                log.exception("sandbox handler %s.%s failed", service, operation)
                response = error_response(model.protocol, service, AwsError("InternalFailure", str(exc), 500))
            return send(response, start_response)

        return application
