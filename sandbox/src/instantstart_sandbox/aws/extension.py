"""The WSGI layer in front of moto: routes by the botocore service model, fills moto's gaps.

For each signed request it takes the service from the SigV4 credential scope and the operation from
``X-Amz-Target`` / ``Action`` / method + URI (botocore model), then either answers an injected fault,
answers the operation itself (EKS lifecycle, add-ons, access entries, pod identity; SageMaker
HyperPod, task governance and managed MLflow; FSx for Lustre; EC2 instance type offerings), or passes the request to
moto unchanged. Every signed request is first recorded in :attr:`AwsExtension.calls` (service,
operation) so tests can count AWS write calls. A few moto
operations are wrapped for the real-account faults (:mod:`instantstart_sandbox.aws.faults`): IAM
CreateRole (role age), S3 CreateBucket/DeleteBucket (name reuse), EC2 DeleteSubnet/
DeleteSecurityGroup/DeleteVpc (lingering interfaces) and SageMaker CreateCluster/DeleteCluster; IAM's
size and count quotas on roles and policies are enforced before moto (:mod:`instantstart_sandbox.aws.iam_limits`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any

from instantstart_sandbox import iam_audit
from instantstart_sandbox.aws import ec2, eventbridge
from instantstart_sandbox.aws.calls import READ_PREFIXES, AwsCall, CallRecorder, IamTarget
from instantstart_sandbox.aws.eks import EksEmulator
from instantstart_sandbox.aws.faults import CONNECTION_FAULT_HEADER, ConnectionFault, FaultInjector
from instantstart_sandbox.aws.foreign import ForeignClusters
from instantstart_sandbox.aws.fsx import FsxLustre
from instantstart_sandbox.aws.hyperpod import HyperPodEmulator
from instantstart_sandbox.aws.hyperpod_autoscaling import HyperPodAutoScaling
from instantstart_sandbox.aws.hyperpod_nodes import HyperPodNodeOperations
from instantstart_sandbox.aws.iam_limits import IamLimits
from instantstart_sandbox.aws.inference import InferenceFaults, SageMakerInference
from instantstart_sandbox.aws.kubetypes import KubeApiServerLike
from instantstart_sandbox.aws.mlflow import SageMakerMlflow
from instantstart_sandbox.aws.protocol import (
    MODELS,
    AwsError,
    AwsRequest,
    RawResponse,
    StartResponse,
    WSGIApplication,
    WSGIEnviron,
    call_app,
    dynamodb_direct,
    error_response,
    json_response,
    parse_params,
    read_body,
    resolve_operation,
    send,
    signing_scope,
)
from instantstart_sandbox.aws.service_quotas import ServiceQuotas
from instantstart_sandbox.aws.task_governance import TaskGovernance
from instantstart_sandbox.aws.training_plans import TrainingPlans
from instantstart_sandbox.clock import SimClock

__all__ = ["AwsExtension", "FaultInjector", "InferenceFaults", "TrainingFaults", "WSGIApplication"]

log = logging.getLogger(__name__)

Handler = Callable[[AwsRequest, Callable[[], RawResponse]], Any]
GLOBAL_SERVICES = frozenset({"iam"})
"""Services signed for us-east-1 whatever the Region (IAM is global)."""


def _discard(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Callable[[bytes], object]:
    """A WSGI ``start_response`` whose answer nobody reads (a read timeout's lost response)."""
    return lambda data: None


class TrainingFaults:
    """Test hooks on the training operators of the sandbox's EKS clusters.

    See :mod:`instantstart_sandbox.kube.training`.
    """

    def __init__(self, kube: KubeApiServerLike) -> None:
        self._kube = kube

    def fail_pod(self, cluster: str, namespace: str, pod: str, exit_code: int = 1) -> None:
        """Crash the training container of running pod ``pod`` of EKS cluster ``cluster`` with ``exit_code``:
        the pod turns Failed and its HyperPodPyTorchJob restarts it as its ``runPolicy`` allows.

        Raises:
            KeyError: unknown cluster. KubeError: 404 unknown pod, 409 pod not Running.
        """
        training = getattr(self._kube, "training", None)
        if training is None:
            raise KeyError(f"the Kubernetes API of {cluster} runs no training operator")
        training(cluster).fail_pod(namespace, pod, exit_code)


class AwsExtension:
    """The sandbox's AWS extension in front of moto.

    Attributes:
        faults: the fault injector (per service/operation errors, HyperPod capacity failures).
        eks: the EKS emulator (cluster lifecycle, add-ons, access entries, pod identity).
        hyperpod: the SageMaker HyperPod emulator.
        hyperpod_nodes: HyperPod batch node operations, deep health checks, Spot interruptions.
        training_plans: SageMaker training plans and offerings (``seed_plan``, ``seed_offering``, ``reset``).
        service_quotas: SageMaker HyperPod cluster-usage quotas (``set_quota``, ``reset``).
        autoscaling: HyperPod managed Karpenter (AutoScaling) and its NodePool controller.
        task_governance: SageMaker cluster scheduler configs and compute quotas (and their Kueue objects).
        fsx: FSx for Lustre file systems (lifecycle, validation, network interfaces), their data repository
            associations and auto-export to S3 of the files pods write.
        foreign: EKS clusters created outside the control plane, for import tests (``create(...)``).
        mlflow: SageMaker managed MLflow tracking servers and apps (``fail_next_create``, ``find``, ``reset``).
        iam_limits: IAM's trust, inline, managed policy size and attachment count quotas (checked on every call).
        calls: every AWS call received (``reset()``, ``calls(*services)``, ``writes(*services)``, ``counts``).
        training: training-job faults (``fail_pod(cluster, namespace, pod, exit_code)``); node faults are
            ``hyperpod.report_node_health`` and ``hyperpod_nodes`` reboot/replace.
        sagemaker_inference: the SageMaker endpoints of the HyperPod inference operator, InvokeEndpoint on them,
            S3 writes of model downloads (:mod:`instantstart_sandbox.aws.inference`).
        inference: inference faults (``stall``, ``unstall``, ``fail_image_pull``, ``allow_image_pull``,
            ``fail_download``, ``hold_download``, ``release_download``, ``reset``; by EKS cluster name).
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
        self.faults = FaultInjector(clock.now)
        self.calls = CallRecorder()
        self._dynamodb_turn = threading.Lock()
        self.eks = EksEmulator(clock, kube, region, account_id, self.emit, self.faults)
        if hasattr(kube, "access_gate"):
            kube.access_gate = self.eks.kubernetes_access  # 401/403 while access entries propagate
        if hasattr(kube, "entry_groups"):
            kube.entry_groups = self.eks.kubernetes_groups  # the RBAC groups of the service proxy
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
        self.hyperpod_nodes = HyperPodNodeOperations(self.hyperpod)
        for op, handler in self.hyperpod_nodes.handlers().items():
            self._handlers[("sagemaker", op)] = handler
        self.hyperpod.launch_checks.append(self._offered)
        self.training_plans = TrainingPlans(self.hyperpod)
        for op, handler in self.training_plans.handlers().items():
            self._handlers[("sagemaker", op)] = handler
        self.service_quotas = ServiceQuotas(self.hyperpod)
        for op, handler in self.service_quotas.handlers().items():
            self._handlers[("service-quotas", op)] = handler
        self.autoscaling = HyperPodAutoScaling(self.hyperpod, kube)
        self.task_governance = TaskGovernance(self.hyperpod, self.eks.addon_status)
        self.fsx = FsxLustre(clock, region, account_id)
        self.endpoint_url: str | None = None  # set by AwsSandboxServer.start
        self.foreign = ForeignClusters(self)
        self.training = TrainingFaults(kube)
        self.sagemaker_inference = SageMakerInference(region, account_id, clock.now)
        self.inference = InferenceFaults(kube)
        if hasattr(kube, "sagemaker"):
            kube.sagemaker = self.sagemaker_inference  # the inference operator's AWS side
        if hasattr(kube, "lustre"):
            kube.lustre = self.fsx  # pods writing to an fsx claim write onto the emulated file system
        self._handlers[("sagemaker-runtime", "InvokeEndpoint")] = self.sagemaker_inference.invoke_endpoint
        for op, handler in self.fsx.handlers().items():
            self._handlers[("fsx", op)] = handler
        for op, handler in self.task_governance.handlers().items():
            self._handlers[("sagemaker", op)] = handler
        hyperpod_list_tags = self._handlers[("sagemaker", "ListTags")]
        self._handlers[("sagemaker", "ListTags")] = lambda req, fwd: self.task_governance.list_tags(
            req, lambda: hyperpod_list_tags(req, fwd)
        )
        self.hyperpod.delete_checks.append(self.task_governance.refuse_cluster_delete)
        self.mlflow = SageMakerMlflow(clock, region, account_id)
        for op, handler in self.mlflow.handlers().items():
            self._handlers[("sagemaker", op)] = handler
        governance_list_tags = self._handlers[("sagemaker", "ListTags")]
        self._handlers[("sagemaker", "ListTags")] = lambda req, fwd: self.mlflow.list_tags(
            req, lambda: governance_list_tags(req, fwd)
        )
        self._handlers[("ec2", "DescribeInstanceTypeOfferings")] = lambda req, fwd: (
            ec2.describe_instance_type_offerings(req, fwd, self.region, self.faults.offering_removed)
        )
        for op, check in (
            ("DeleteSubnet", ec2.delete_subnet),
            ("DeleteSecurityGroup", ec2.delete_security_group),
            ("DeleteVpc", ec2.delete_vpc),
        ):
            self._handlers[("ec2", op)] = self._ec2_check(check)
        self._handlers[("iam", "CreateRole")] = self._create_role
        self.iam_limits = IamLimits(account_id)
        for op, limit in self.iam_limits.checks().items():
            self._handlers.setdefault(("iam", op), lambda req, forward: forward())
            self._wrap("iam", op, limit)
        self._handlers[("s3", "CreateBucket")] = self._create_bucket
        self._handlers[("s3", "DeleteBucket")] = self._delete_bucket
        self._hyperpod_networks: dict[str, tuple[list[str], list[str]]] = {}
        self._hyperpod_names: dict[str, str] = {}
        self._wrap("sagemaker", "CreateCluster", self._before_hyperpod_create, self._after_hyperpod_create)
        self._wrap("sagemaker", "DeleteCluster", None, self._after_hyperpod_delete)
        self._wrap("sagemaker", "CreateCluster", self._check_hyperpod_request, self.autoscaling.after_create)
        self._wrap("sagemaker", "UpdateCluster", self._check_hyperpod_request, self.autoscaling.after_update)
        self._services = {service for service, _ in self._handlers}

    def _check_hyperpod_request(self, req: AwsRequest) -> None:
        """CreateCluster/UpdateCluster: training plan fit and managed Karpenter prerequisites."""
        cluster = None
        if req.operation == "UpdateCluster":
            cluster = self.hyperpod._find(str(req.params.get("ClusterName") or ""))
        self.training_plans.validate_groups(req.params, cluster)
        self.autoscaling.validate(req.params, cluster)

    def _offered(self, cluster: Any, group: Any, zone: str) -> str | None:
        """HyperPod launch check: EC2 refuses a type a test removed from the zone (EC2's Unsupported text)."""
        instance_type = str(group.spec.get("InstanceType") or "")
        if not instance_type or not self.faults.offering_removed(instance_type, zone):
            return None
        return (
            f"Unsupported: Your requested instance type ({instance_type.removeprefix('ml.')}) is not supported in "
            f"your requested Availability Zone ({zone})."
        )

    # -- real-account faults around moto and the emulators ------------------------------------------
    def _wrap(
        self,
        service: str,
        operation: str,
        before: Callable[[AwsRequest], None] | None,
        after: Callable[[AwsRequest, Any], None] | None = None,
    ) -> None:
        inner = self._handlers[(service, operation)]

        def handler(req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
            if before is not None:
                before(req)
            result = inner(req, forward)
            if after is not None and not (isinstance(result, RawResponse) and result.status >= 300):
                after(req, result)
            return result

        self._handlers[(service, operation)] = handler

    def _ec2_check(self, check: Callable[[AwsRequest, Callable[[], RawResponse], str, str], RawResponse]) -> Handler:
        return lambda req, forward: check(req, forward, self.account_id, self.region)

    def _create_role(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> RawResponse:
        response = forward()
        if response.status < 300 and req.params.get("RoleName"):
            self.faults.role_created(str(req.params["RoleName"]))
        return response

    def _create_bucket(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> RawResponse:
        bucket = str(req.params.get("Bucket") or "")
        if not self.faults.bucket_name_reusable(bucket):
            raise AwsError(
                "OperationAborted",
                "A conflicting conditional operation is currently in progress against this resource. Please try again.",
                409,
            )
        return forward()

    def _delete_bucket(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> RawResponse:
        response = forward()
        if response.status < 300:
            self.faults.bucket_deleted(str(req.params.get("Bucket") or ""))
        return response

    def _before_hyperpod_create(self, req: AwsRequest) -> None:
        """SageMaker CreateCluster: execution roles still propagating are refused; remember the network."""
        params = req.params
        groups = list(params.get("InstanceGroups") or []) + list(params.get("RestrictedInstanceGroups") or [])
        for group in groups:
            role = str(group.get("ExecutionRole") or "")
            if self.faults.role_propagating(role):
                raise AwsError(
                    "ValidationException",
                    f"The execution role ARN {role} is invalid. Please ensure that the role exists and that "
                    "its trust relationship policy allows the action 'sts:AssumeRole' for the service principal "
                    "'sagemaker.amazonaws.com'.",
                )
        subnets = list((params.get("VpcConfig") or {}).get("Subnets") or [])
        security_groups = list((params.get("VpcConfig") or {}).get("SecurityGroupIds") or [])
        for group in groups:
            override = group.get("OverrideVpcConfig") or {}
            subnets += [s for s in override.get("Subnets") or [] if s not in subnets]
            security_groups += [g for g in override.get("SecurityGroupIds") or [] if g not in security_groups]
        name = str(params.get("ClusterName") or "")
        self._hyperpod_networks[name] = (subnets, security_groups)

    def _after_hyperpod_create(self, req: AwsRequest, result: Any) -> None:
        arn = result.get("ClusterArn") if isinstance(result, dict) else None
        if arn:
            self._hyperpod_names[str(arn)] = str(req.params.get("ClusterName") or "")

    def _after_hyperpod_delete(self, req: AwsRequest, result: Any) -> None:
        """SageMaker DeleteCluster: the instances' network interfaces linger (when set)."""
        key = str(req.params.get("ClusterName") or "")
        key = self._hyperpod_names.pop(key, key)
        network = self._hyperpod_networks.pop(key, None)
        if network is None or self.faults.eni_linger_seconds <= 0:
            return
        ec2.linger_network_interfaces(
            self.account_id,
            self.region,
            network[0],
            network[1],
            f"SageMaker HyperPod cluster {key}",
            self.faults.eni_linger_seconds,
            self.clock.call_later,
        )

    def emit(self, source: str, detail_type: str, detail: dict[str, Any], resources: list[str]) -> None:
        """Emit an AWS service event on the default bus at the simulated time (through PutEvents)."""
        eventbridge.put_event(
            self.account_id, self.region, source, detail_type, detail, resources, time=self.clock.now()
        )

    _SAGEMAKER_TARGETED = HyperPodEmulator.CLUSTER_OPERATIONS | {"CreateCluster", "AddTags", "DeleteTags"}

    def _iam_target(
        self, service: str, operation: str, environ: WSGIEnviron, body: bytes, region: str
    ) -> IamTarget | None:
        """The resource and tags IAM would judge a deployed function's EKS, HyperPod or task governance write on
        (the IAM audit evaluates the template's tag conditions with it); None for every other call."""
        if region != self.region or operation.startswith(READ_PREFIXES):
            return None
        if service == "eks":
            emulator: Any = self.eks
        elif service == "sagemaker" and operation in self._SAGEMAKER_TARGETED:
            emulator = self.hyperpod
        elif service == "sagemaker" and operation in TaskGovernance.OPERATIONS:
            emulator = self.task_governance
        else:
            return None
        model = MODELS.service_model(service)
        assert model is not None
        req = AwsRequest(service, operation, model.operation_model(operation), environ, body, region=region)
        try:
            params = parse_params(req)
        except Exception:  # noqa: BLE001 - a request the handler will refuse on its own
            return None
        target: IamTarget | None = emulator.iam_target(operation, params)
        return target

    def wsgi(self, app: WSGIApplication) -> WSGIApplication:
        """Wrap moto's WSGI ``app``: answer faults and emulated operations, pass the rest through."""

        def application(environ: WSGIEnviron, start_response: StartResponse) -> Iterable[bytes]:
            scope = signing_scope(environ)
            if scope is None:
                return app(environ, start_response)
            region, signing_name = scope
            body = read_body(environ)
            if signing_name == "sagemaker-mlflow":  # MLflow's REST API: no botocore model
                self.calls.record(
                    AwsCall("sagemaker-mlflow", str(environ.get("PATH_INFO") or ""), region, self.clock.now())
                )
                return send(self.mlflow.rest(environ, body), start_response)
            service = MODELS.service_name(signing_name)
            if service == "sagemaker" and not environ.get("HTTP_X_AMZ_TARGET"):
                service = "sagemaker-runtime"  # same signing name; the runtime's REST calls carry no target
            operation = resolve_operation(MODELS, service, environ, body)
            if operation is None:
                return app(environ, start_response)
            iam_audit.attribute(environ)  # a function's own process: its access key names it
            caller = environ.get("HTTP_X_SANDBOX_FUNCTION")
            label = environ.get("HTTP_X_SANDBOX_LABEL")
            target = self._iam_target(service, operation, environ, body, region) if caller else None
            call = AwsCall(service, operation, region, self.clock.now(), caller, label, target)
            self.calls.record(call)
            fault = self.faults.take(service, operation, call) if self.faults.has_faults_for(service) else None
            if isinstance(fault, ConnectionFault):
                log.info("connection fault injected: %s.%s -> %s", service, operation, fault.kind)
                if fault.kind == "read-timeout":  # AWS did the work; the answer is lost on the way
                    list(serve(environ, _discard, service, operation, region, body, None))
                model = MODELS.service_model(service)
                response = error_response(model.protocol if model else "json", service, fault)
                response.headers.append((CONNECTION_FAULT_HEADER, fault.kind))
                return iam_audit.after_response(environ, operation, send(response, start_response))
            answer = serve(environ, start_response, service, operation, region, body, fault)
            return iam_audit.after_response(environ, operation, answer)

        def serve(
            environ: WSGIEnviron,
            start_response: StartResponse,
            service: str,
            operation: str,
            region: str,
            body: bytes,
            fault: AwsError | None,
        ) -> Iterable[bytes]:
            if service == "dynamodb":
                # DynamoDB's conditional writes and transactions are atomic; moto's check, then write. The
                # server is threaded, so DynamoDB requests take turns (a condition cannot go stale mid-write).
                with self._dynamodb_turn:
                    return list(dispatch(environ, start_response, service, operation, region, body, fault))
            return dispatch(environ, start_response, service, operation, region, body, fault)

        def dispatch(
            environ: WSGIEnviron,
            start_response: StartResponse,
            service: str,
            operation: str,
            region: str,
            body: bytes,
            fault: AwsError | None,
        ) -> Iterable[bytes]:
            if service not in self._services and fault is None:
                if service == "dynamodb":  # moto's handler without its Flask layer
                    return send(dynamodb_direct(environ), start_response)
                return app(environ, start_response)
            model = MODELS.service_model(service)
            assert model is not None
            if fault is not None:
                log.info("fault injected: %s.%s -> %s", service, operation, fault.code)
                return send(error_response(model.protocol, service, fault), start_response)
            handler = self._handlers.get((service, operation))
            if handler is None or (region != self.region and service not in GLOBAL_SERVICES):
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
