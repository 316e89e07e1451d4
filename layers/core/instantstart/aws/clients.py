"""boto3 client factory: one session per process, standard retry mode, timeouts.

botocore honours ``AWS_ENDPOINT_URL`` (and ``AWS_ENDPOINT_URL_<SERVICE>``) itself, which is how the
offline sandbox points every client at its emulated AWS; nothing here knows about the sandbox.

boto3 is imported by the first client (or session) asked for, not with this module: a handler's import stays
cheap (``make cold-start``), and what each invocation needs is loaded when it needs it.
"""

from __future__ import annotations

import threading
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import boto3.session
    from botocore.config import Config

_lock = threading.Lock()


@lru_cache(maxsize=1)
def _retry_config() -> Config:
    from botocore.config import Config

    return Config(
        retries={"mode": "standard", "max_attempts": 5},
        connect_timeout=5,
        read_timeout=30,
        user_agent_extra="instantstart-serverless/0.1",
    )


@lru_cache(maxsize=1)
def session() -> boto3.session.Session:
    """The process-wide boto3 session (credentials from the standard chain)."""
    import boto3.session

    return boto3.session.Session()


@lru_cache(maxsize=8)
def service_model(service: str) -> Any:
    """The installed botocore model of ``service`` (``botocore.model.ServiceModel``), read once per process: its
    shapes' enums and limits are the API's own (loading SageMaker's costs about 50 CPU-ms). Calls nothing.

    Raises:
        botocore.exceptions.UnknownServiceError: botocore has no model named ``service``.
    """
    import botocore.session

    return botocore.session.get_session().get_service_model(service)


@lru_cache(maxsize=64)
def client(service: str, region: str | None = None) -> Any:
    """A cached boto3 client for ``service`` with standard retries (5 attempts) and timeouts.

    Args:
        service: botocore service name (``ec2``, ``eks``, ``sagemaker``, ...).
        region: AWS Region; defaults to the session's.
    """
    return new_client(service, region)


def new_client(service: str, region: str | None = None) -> Any:
    """A new boto3 client of the process-wide session, configured as :func:`client`'s, for a caller that keeps its
    own (one with event handlers of its own, e.g. the EKS token presigner). Created under the session's lock.
    """
    with _lock:  # boto3 client creation is not thread-safe on a shared session
        factory: Any = session()
        return factory.client(service, region_name=region, config=_retry_config())


def error_code(exc: Exception) -> str | None:
    """The AWS error code of a botocore ``ClientError`` (None for anything else)."""
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        code = response.get("Error", {}).get("Code")
        return str(code) if code else None
    return None


def error_message(exc: Exception) -> str:
    """The AWS error message of a botocore ``ClientError`` verbatim (``str(exc)`` otherwise)."""
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        message = response.get("Error", {}).get("Message")
        if message:
            return str(message)
    return str(exc)
