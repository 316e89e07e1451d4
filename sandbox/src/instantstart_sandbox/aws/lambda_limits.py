"""Lambda's hard limits that moto does not enforce, answered with Lambda's own errors.

Checked where Lambda checks them, on moto's backend and response handler (so the deployer, the HTTP API router,
the Step Functions engine and any boto3 client meet the same answers):

* environment variables: the variables as compact JSON (``{"K":"V"}``) may take at most 4 KB (4,096 bytes UTF-8) at
  CreateFunction and UpdateFunctionConfiguration, else ``InvalidParameterValueException`` "Lambda was unable to
  configure your environment variables because the environment variables you have provided exceeded the 4KB limit.
  String measured: <the JSON>";
* unzipped code: a function's or a layer's archive unzips to less than 262,144,000 bytes ("Unzipped size must be
  smaller than 262144000 bytes"), and a function with its layers too ("Function code combined with layers exceeds
  the maximum allowed size of 262144000 bytes. The actual size is N bytes.") at CreateFunction, UpdateFunctionCode,
  UpdateFunctionConfiguration (new ``Layers``) and PublishLayerVersion. An archive may declare the size of the code
  it stands for in an entry named :data:`DECLARED_SIZE_ENTRY` (the sandbox deployer's placeholders do: the code runs
  from the local directory); the larger of that and the archive's own unzipped size counts;
* Invoke request payload: 6 MB (6,291,456 bytes) synchronous, 256 KB (262,144 bytes) asynchronous, else HTTP 413
  ``RequestEntityTooLargeException``. AWS now documents 1 MB for asynchronous invocations; the sandbox keeps the older,
  harsher 256 KB. A synchronous response over 6 MB is moto's own check (``Function.ResponseSizeTooLarge``, at about
  6,000,000 bytes: harsher than Lambda's 6,291,556).
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import zipfile
from typing import Any

MAX_ENVIRONMENT_BYTES = 4096
"""Lambda's quota on a function's environment variables (4 KB), measured on their compact JSON in UTF-8."""

MAX_UNZIPPED_BYTES = 262_144_000
"""Lambda's quota on a function's unzipped code plus its layers (250 MB)."""

MAX_SYNC_PAYLOAD_BYTES = 6_291_456
"""Lambda's quota on a synchronous invocation's request payload (6 MB)."""

MAX_ASYNC_PAYLOAD_BYTES = 262_144
"""The asynchronous invocation request quota the sandbox applies (256 KB; AWS documents 1 MB since 2025)."""

DECLARED_SIZE_ENTRY = ".sandbox-unzipped-bytes"
"""An archive entry whose text is the decimal number of bytes the archive stands for when unzipped."""


def invalid_parameter(message: str) -> Exception:
    """moto's ``InvalidParameterValueException`` (HTTP 400) with ``message``."""
    from moto.awslambda.exceptions import InvalidParameterValueException

    return InvalidParameterValueException(message)


def request_too_large(message: str) -> Exception:
    """Lambda's HTTP 413 ``RequestEntityTooLargeException`` with ``message``."""
    from moto.awslambda.exceptions import LambdaClientError

    error = LambdaClientError("RequestEntityTooLargeException", message)
    error.code = 413
    return error


def check_environment(environment: Any) -> None:
    """Refuse a function configuration's ``Environment`` (``{"Variables": {name: value}}``) over 4 KB.

    Raises:
        InvalidParameterValueException: the variables' compact JSON is over :data:`MAX_ENVIRONMENT_BYTES` bytes.
    """
    variables = (environment or {}).get("Variables") if isinstance(environment, dict) else None
    if not variables:
        return
    measured = json.dumps(variables, separators=(",", ":"))
    if len(measured.encode("utf-8")) > MAX_ENVIRONMENT_BYTES:
        raise invalid_parameter(
            "Lambda was unable to configure your environment variables because the environment variables you have "
            f"provided exceeded the 4KB limit. String measured: {measured}"
        )


def unzipped_bytes(archive: bytes) -> int:
    """The bytes ``archive`` (a ZIP file) unzips to: its entries' sizes, or the size it declares in
    :data:`DECLARED_SIZE_ENTRY` when larger. 0 for bytes that are not a ZIP file (Lambda refuses those elsewhere)."""
    try:
        with zipfile.ZipFile(io.BytesIO(archive)) as zf:
            entries = zf.infolist()
            size = sum(entry.file_size for entry in entries)
            if any(entry.filename == DECLARED_SIZE_ENTRY for entry in entries):
                size = max(size, int(zf.read(DECLARED_SIZE_ENTRY).decode().strip() or 0))
            return size
    except (zipfile.BadZipFile, ValueError, OSError):
        return 0


def _code_archive(code: dict[str, Any], account_id: str, partition: str) -> bytes | None:
    """The ZIP bytes of a ``Code``/``Content`` member (``ZipFile`` base64, or ``S3Bucket``/``S3Key``)."""
    if code.get("ZipFile"):
        data = code["ZipFile"]
        if isinstance(data, bytes):
            return data
        try:
            return base64.b64decode(data)
        except (binascii.Error, ValueError):
            return None
    if code.get("S3Bucket") and code.get("S3Key"):
        from moto.s3.models import s3_backends

        try:
            key = s3_backends[account_id][partition].get_object(code["S3Bucket"], code["S3Key"])
            return bytes(key.value) if key is not None else None
        except Exception:  # noqa: BLE001 - a missing object is moto's own error to give
            return None
    return None


def _check_alone(size: int) -> None:
    if size >= MAX_UNZIPPED_BYTES:
        raise invalid_parameter(f"Unzipped size must be smaller than {MAX_UNZIPPED_BYTES} bytes")


def _check_combined(code_size: int, backend: Any, layer_arns: list[str]) -> None:
    total = code_size
    for arn in layer_arns:
        layer = backend.layers_versions_by_arn(arn)
        if layer is not None:
            total += unzipped_bytes(layer.code_bytes or b"")
    if total > MAX_UNZIPPED_BYTES:
        raise invalid_parameter(
            f"Function code combined with layers exceeds the maximum allowed size of {MAX_UNZIPPED_BYTES} bytes. "
            f"The actual size is {total} bytes."
        )


def _layer_arns(layers: Any) -> list[str]:
    return [str(entry["Arn"] if isinstance(entry, dict) else entry) for entry in layers or []]


def _partition(backend: Any) -> str:
    from moto.utilities.utils import get_partition

    return str(get_partition(backend.region_name))


def install() -> None:
    """Patch moto's Lambda backend and response handler with these checks (idempotent)."""
    from moto.awslambda.models import LambdaBackend
    from moto.awslambda.responses import LambdaResponse

    cls: Any = LambdaBackend
    if getattr(cls, "_instantstart_limits", False):
        return
    create_function = cls.create_function
    update_configuration = cls.update_function_configuration
    update_code = cls.update_function_code
    publish_layer = cls.publish_layer_version

    def _create_function(self: Any, spec: dict[str, Any]) -> Any:
        check_environment(spec.get("Environment"))
        archive = _code_archive(spec.get("Code") or {}, self.account_id, _partition(self))
        size = unzipped_bytes(archive) if archive else 0
        _check_alone(size)
        _check_combined(size, self, _layer_arns(spec.get("Layers")))
        return create_function(self, spec)

    def _update_function_configuration(self: Any, function_name: str, qualifier: Any, body: dict[str, Any]) -> Any:
        check_environment(body.get("Environment"))
        if "Layers" in body:
            fn = self.get_function(function_name, qualifier)
            _check_combined(unzipped_bytes(fn.code_bytes or b""), self, _layer_arns(body["Layers"]))
        return update_configuration(self, function_name, qualifier, body)

    def _update_function_code(self: Any, function_name: str, qualifier: Any, body: dict[str, Any]) -> Any:
        archive = _code_archive(body, self.account_id, _partition(self))
        if archive is not None:
            size = unzipped_bytes(archive)
            _check_alone(size)
            fn = self.get_function(function_name, qualifier)
            _check_combined(size, self, _layer_arns(fn.layers))
        return update_code(self, function_name, qualifier, body)

    def _publish_layer_version(self: Any, spec: dict[str, Any]) -> Any:
        archive = _code_archive(spec.get("Content") or {}, self.account_id, _partition(self))
        if archive is not None:
            _check_alone(unzipped_bytes(archive))
        return publish_layer(self, spec)

    cls.create_function = _create_function
    cls.update_function_configuration = _update_function_configuration
    cls.update_function_code = _update_function_code
    cls.publish_layer_version = _publish_layer_version
    cls._instantstart_limits = True

    response: Any = LambdaResponse
    invoke = response.invoke

    def _invoke(self: Any) -> Any:
        body = self.raw_body if isinstance(self.raw_body, bytes) else str(self.body or "").encode("utf-8")
        if self.headers.get("X-Amz-Invocation-Type") == "Event":
            if len(body) > MAX_ASYNC_PAYLOAD_BYTES:
                raise request_too_large(
                    f"{len(body)} byte payload is too large for the Event invocation type "
                    f"(limit {MAX_ASYNC_PAYLOAD_BYTES} bytes)"
                )
        elif len(body) > MAX_SYNC_PAYLOAD_BYTES:
            raise request_too_large(
                f"Request must be smaller than {MAX_SYNC_PAYLOAD_BYTES} bytes for the InvokeFunction operation"
            )
        return invoke(self)

    response.invoke = _invoke
