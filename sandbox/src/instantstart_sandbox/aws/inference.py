"""The AWS side of inference in the sandbox: SageMaker endpoints the HyperPod inference operator creates,
``InvokeEndpoint`` on them, and the S3 writes of model downloads.

The sandbox's inference operator (:mod:`instantstart_sandbox.kube.inference`) calls :class:`SageMakerInference`
(its ``SageMakerSide``) to create and delete the SageMaker Model, EndpointConfig and Endpoint in moto's SageMaker
backend (so ``DescribeEndpoint``, ``ListEndpoints``, ``DescribeModel``... answer them) and to write downloaded
model files into moto S3.

``InvokeEndpoint`` (sagemaker-runtime) is answered here:

- an endpoint the operator created and that is ``InService``: 200 with a deterministic completion. A JSON body
  gets an OpenAI-style ``text_completion`` (:func:`completion`) echoing the prompt's SHA-256 prefix and length;
  a body that is not JSON is refused like a model server does (``ModelError``, 424);
- an endpoint the operator created that is not ``InService`` (Creating, Deleting): ``ValidationError`` (400);
- any other name: ``ValidationError`` (400) "Endpoint <name> of account <account> not found." (AWS's text);
- endpoints created directly through the SageMaker API are passed to moto (its static answer).

Test hooks (``AwsExtension.inference``): ``stall``/``unstall``, ``fail_image_pull``/``allow_image_pull``,
``fail_download``, ``hold_download``/``release_download``, ``reset`` per EKS cluster name (see
:class:`InferenceFaults`).
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from instantstart_sandbox.aws.kubetypes import KubeApiServerLike
from instantstart_sandbox.aws.protocol import AwsError, AwsRequest, RawResponse
from instantstart_sandbox.completions import completion

MAX_INVOKE_BYTES = 6 * 1024 * 1024
"""InvokeEndpoint's payload limit (6 MB)."""


@dataclass
class _Endpoint:
    cluster: str
    model_name: str
    config_name: str


class SageMakerInference:
    """SageMaker endpoints of the sandbox's inference operator and S3 writes of model downloads, over moto.

    Args:
        region: the sandbox's Region.
        account_id: the sandbox's account.
        now: the simulated clock (epoch seconds), for nothing but symmetry with the other emulators.
    """

    def __init__(self, region: str, account_id: str, now: Callable[[], float]) -> None:
        self.region = region
        self.account_id = account_id
        self.now = now
        self._lock = threading.Lock()
        self._endpoints: dict[str, _Endpoint] = {}

    def _backend(self) -> Any:
        from moto.sagemaker.models import sagemaker_backends

        return sagemaker_backends[self.account_id][self.region]

    # -- SageMakerSide ------------------------------------------------------------------------------
    def create_model(self, cluster: str, name: str, image: str, environment: dict[str, str]) -> str:
        """CreateModel ``name`` (primary container ``image``); its ARN."""
        model = self._backend().create_model(
            model_name=name,
            execution_role_arn=f"arn:aws:iam::{self.account_id}:role/hyperpod-inference-{cluster}"[:2048],
            primary_container={"Image": image, "Environment": dict(environment)},
            vpc_config=None,
            containers=None,
            tags=[{"Key": "sagemaker.amazonaws.com/hyperpod-cluster", "Value": cluster}],
        )
        return str(model.arn)

    def create_endpoint_config(self, name: str, model_name: str, instance_type: str, count: int) -> str:
        """CreateEndpointConfig ``name`` with one variant ``AllTraffic`` of ``model_name``; its ARN."""
        variant = {
            "VariantName": "AllTraffic",
            "ModelName": model_name,
            "InstanceType": "ml.m5.large",  # moto 5.2.5's instance type list predates g5/p4/p5: set below
            "InitialInstanceCount": max(1, count),
            "InitialVariantWeight": 1.0,
        }
        try:
            config = self._backend().create_endpoint_config(
                endpoint_config_name=name,
                production_variants=[variant],
                data_capture_config={},
                async_inference_config={},
                tags=[],
                kms_key_id="",
            )
        except Exception as exc:
            raise ValueError(str(exc)) from exc
        variant["InstanceType"] = instance_type
        return str(config.endpoint_config_arn)

    def create_endpoint(self, cluster: str, name: str, config_name: str, served_model: str) -> str:
        """CreateEndpoint ``name`` (``Creating``) serving ``served_model`` (the name InvokeEndpoint answers
        with); its ARN. ``ValueError`` when it exists."""
        backend = self._backend()
        if name in backend.endpoints:
            raise ValueError(
                f'Cannot create already existing endpoint "arn:aws:sagemaker:{self.region}:{self.account_id}:'
                f'endpoint/{name.lower()}".'
            )
        endpoint = backend.create_endpoint(endpoint_name=name, endpoint_config_name=config_name, tags=[])
        endpoint.endpoint_status = "Creating"
        with self._lock:
            self._endpoints[name] = _Endpoint(cluster, served_model, config_name)
        return str(endpoint.arn)

    def endpoint_status(self, name: str) -> str | None:
        """The endpoint's status, or None when it does not exist."""
        endpoint = self._backend().endpoints.get(name)
        return None if endpoint is None else str(endpoint.endpoint_status)

    def set_endpoint_status(self, name: str, status: str) -> None:
        """Set the endpoint's ``EndpointStatus``."""
        from moto.core.utils import utcnow

        endpoint = self._backend().endpoints.get(name)
        if endpoint is not None:
            endpoint.endpoint_status = status
            endpoint.last_modified_time = utcnow()

    def delete_endpoint(self, name: str) -> None:
        """Remove the endpoint (missing: no-op)."""
        self._backend().endpoints.pop(name, None)
        with self._lock:
            self._endpoints.pop(name, None)

    def delete_endpoint_config(self, name: str) -> None:
        """Remove the endpoint config (missing: no-op)."""
        self._backend().endpoint_configs.pop(name, None)

    def delete_model(self, name: str) -> None:
        """Remove the model (missing: no-op)."""
        self._backend()._models.pop(name, None)

    def put_objects(self, bucket: str, objects: list[tuple[str, bytes]]) -> None:
        """PutObject each ``(key, body)`` into moto S3; ``LookupError`` when ``bucket`` does not exist."""
        from moto.s3.models import s3_backends

        backend = s3_backends[self.account_id]["aws"]
        try:
            backend.get_bucket(bucket)
        except Exception as exc:
            raise LookupError(bucket) from exc
        for key, body in objects:
            backend.put_object(bucket, key, body)

    # -- sagemaker-runtime InvokeEndpoint ------------------------------------------------------------
    def invoke_endpoint(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> RawResponse:
        """InvokeEndpoint: a deterministic completion for the operator's InService endpoints (module docstring)."""
        name = str(req.params.get("EndpointName") or "")
        with self._lock:
            ours = self._endpoints.get(name)
        status = self.endpoint_status(name)
        if ours is None:
            if status is not None:
                return forward()
            raise AwsError("ValidationError", f"Endpoint {name} of account {self.account_id} not found.")
        if status != "InService":
            raise AwsError(
                "ValidationError",
                f"Endpoint {name} of account {self.account_id} is not in service (status {status}).",
            )
        if len(req.body) > MAX_INVOKE_BYTES:
            raise AwsError("ValidationError", f"Request body is larger than {MAX_INVOKE_BYTES} bytes.", 413)
        try:
            answer = completion(name, ours.model_name, req.body)
        except ValueError:
            arn = f"arn:aws:sagemaker:{self.region}:{self.account_id}:endpoint/{name.lower()}"
            raise AwsError(
                "ModelError",
                'Received client error (400) from primary with message "{"object":"error","message":"request body '
                f'is not valid JSON","type":"BadRequestError","code":400}}". See https://{self.region}.console.aws.'
                f"amazon.com/cloudwatch/home?region={self.region}#logEventViewer:group=/aws/sagemaker/Endpoints/"
                f"{name} in account {self.account_id} for more information.",
                424,
                OriginalStatusCode=400,
                LogStreamArn=arn,
            ) from None
        body = json.dumps(answer).encode()
        headers = [
            ("Content-Type", "application/json"),
            ("x-Amzn-Invoked-Production-Variant", "AllTraffic"),
            ("x-amzn-RequestId", str(uuid.uuid4())),
        ]
        return RawResponse(200, headers, body)

    def reset(self) -> None:
        """Forget the operator's endpoints (moto's records stay)."""
        with self._lock:
            self._endpoints.clear()


class InferenceFaults:
    """Test hooks on the inference workloads of the sandbox's EKS clusters (by EKS cluster name).

    See :mod:`instantstart_sandbox.kube.inference`. Each raises ``KeyError`` for an unknown cluster or a
    Kubernetes API without inference controllers.
    """

    def __init__(self, kube: KubeApiServerLike) -> None:
        self._kube = kube

    def _controllers(self, cluster: str) -> Any:
        inference = getattr(self._kube, "inference", None)
        if inference is None:
            raise KeyError(f"the Kubernetes API of {cluster} runs no inference controllers")
        return inference(cluster)

    def stall(self, cluster: str, namespace: str, name: str, reason: str = "") -> None:
        """Hold InferenceEndpointConfig/JumpStartModel ``namespace/name`` of EKS cluster ``cluster`` in
        ``DeploymentInProgress``: its worker pods fail to pull their image (``ErrImagePull``) with a Warning
        ``Failed`` event whose message ends with ``reason`` (default: the registry's not-found text)."""
        self._controllers(cluster).stall(namespace, name, reason)

    def unstall(self, cluster: str, namespace: str, name: str) -> None:
        """Undo :meth:`stall`: the next pull succeeds and the deployment proceeds."""
        self._controllers(cluster).unstall(namespace, name)

    def fail_image_pull(self, cluster: str, image: str, reason: str = "") -> None:
        """Every pod of ``cluster`` with a container of ``image`` fails to pull it (ErrImagePull)."""
        self._controllers(cluster).fail_image_pull(image, reason)

    def allow_image_pull(self, cluster: str, image: str) -> None:
        """Undo :meth:`fail_image_pull`."""
        self._controllers(cluster).allow_image_pull(image)

    def fail_download(self, cluster: str, model_id: str, reason: str = "RepositoryNotFound") -> None:
        """Model downloads of ``model_id`` in ``cluster`` fail with Hugging Face's error for ``reason``
        (``RepositoryNotFound``: 404, ``GatedRepo``: 401): the pod logs the error line and exits 1."""
        self._controllers(cluster).fail_download(model_id, reason)

    def hold_download(self, cluster: str, model_id: str) -> None:
        """Model downloads of ``model_id`` in ``cluster`` keep running (pod Running, no files) until
        :meth:`release_download`: a download of hundreds of GB that takes an hour."""
        self._controllers(cluster).hold_download(model_id)

    def release_download(self, cluster: str, model_id: str) -> None:
        """Undo :meth:`hold_download`: the held downloads of ``model_id`` finish (at once when their time is up)."""
        self._controllers(cluster).release_download(model_id)

    def reset(self, cluster: str) -> None:
        """Clear every inference fault of ``cluster``."""
        self._controllers(cluster).reset()
