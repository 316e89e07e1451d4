"""boto3 client factory: one session per process, standard retry mode, timeouts that fit the caller's deadline.

Two budgets (:class:`CallBudget`), chosen by the function that calls (:func:`using_budget`, a context variable, so
two functions sharing one interpreter, as in the sandbox, keep their own):

* :data:`API_BUDGET` for the API function: API Gateway waits 30 s for an HTTP API integration, and the function's
  own ``Timeout`` (template.yaml ``ApiFunction``, 28 s) must end it before that. One AWS call of the API takes at
  worst ``max_attempts * (connect_timeout + read_timeout)`` plus standard mode's backoff between attempts (botocore
  ``ExponentialBackoff``: ``rand(0, 1) * min(2 ** (i - 1), 20)`` s after attempt ``i`` for a throttle, less
  otherwise): ``3 * (2 + 5) + (1 + 2) = 24 s`` < 28 s < 30 s (:meth:`CallBudget.worst_case_seconds`;
  ``tests/contract/test_call_budget.py`` reads the template). ``read_timeout`` bounds each socket read, not the whole
  answer, and botocore may stretch a backoff by up to 5 s for an ``x-amz-retry-after`` header: the function's
  ``Timeout`` stays the backstop of a route that makes several calls;
* :data:`WORKFLOW_BUDGET` (the default) for the steps and event functions (``Timeout: 300``; the events functions
  had the global 30 s, less than this budget): a slow AWS answer is waited for,
  ``6 * (5 + 30) + (1 + 2 + 4 + 8 + 16) = 241 s`` < 300 s (6 attempts: what ``max_attempts: 5`` meant before,
  botocore counting it as retries).

botocore honours ``AWS_ENDPOINT_URL`` (and ``AWS_ENDPOINT_URL_<SERVICE>``) itself, which is how the
offline sandbox points every client at its emulated AWS; nothing here knows about the sandbox.

boto3 is imported by the first client (or session) asked for, not with this module: a handler's import stays
cheap (``make cold-start``), and what each invocation needs is loaded when it needs it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import boto3.session
    from botocore.config import Config

_lock = threading.Lock()


MAX_BACKOFF_SECONDS = 20.0
"""botocore standard mode's cap on one backoff (``ExponentialBackoff._MAX_BACKOFF``)."""


@dataclass(frozen=True)
class CallBudget:
    """How long one AWS call may take: timeouts of each attempt (seconds) and the attempts of standard retry mode
    (``max_attempts`` counts the first attempt)."""

    connect_timeout: float
    read_timeout: float
    max_attempts: int

    def worst_case_seconds(self) -> float:
        """The longest one call may take, in seconds: every attempt timing out on connect and read, and the
        longest standard-mode backoff between attempts (``min(2 ** (i - 1), MAX_BACKOFF_SECONDS)`` after attempt
        ``i``, a throttle's; other errors back off 20 to 40 times less)."""
        backoff = sum(min(2.0 ** (i - 1), MAX_BACKOFF_SECONDS) for i in range(1, self.max_attempts))
        return self.max_attempts * (self.connect_timeout + self.read_timeout) + backoff


API_BUDGET = CallBudget(connect_timeout=2, read_timeout=5, max_attempts=3)
"""The API function's calls: at worst 24 s, within its 28 s ``Timeout`` and API Gateway's 30 s (module docstring)."""

WORKFLOW_BUDGET = CallBudget(connect_timeout=5, read_timeout=30, max_attempts=6)
"""The steps and event functions' calls (``Timeout: 300``): at worst 241 s."""

_BUDGET: ContextVar[CallBudget] = ContextVar("aws_call_budget", default=WORKFLOW_BUDGET)


@contextmanager
def using_budget(budget: CallBudget) -> Iterator[None]:
    """Within the block (this thread or task, and what it runs in a copied context), :func:`client` and
    :func:`new_client` answer clients configured with ``budget``; the API handler serves each request in one."""
    token = _BUDGET.set(budget)
    try:
        yield
    finally:
        _BUDGET.reset(token)


def current_budget() -> CallBudget:
    """The budget the clients of the current context are configured with (:data:`WORKFLOW_BUDGET` by default)."""
    return _BUDGET.get()


@lru_cache(maxsize=4)
def _retry_config(budget: CallBudget) -> Config:
    from botocore.config import Config

    return Config(
        # total_max_attempts counts the first attempt (botocore's max_attempts counts only the retries)
        retries={"mode": "standard", "total_max_attempts": budget.max_attempts},
        connect_timeout=budget.connect_timeout,
        read_timeout=budget.read_timeout,
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


def client(service: str, region: str | None = None) -> Any:
    """A cached boto3 client for ``service`` with standard retries and the timeouts of the current
    :class:`CallBudget` (:func:`using_budget`; :data:`WORKFLOW_BUDGET` by default).

    Args:
        service: botocore service name (``ec2``, ``eks``, ``sagemaker``, ...).
        region: AWS Region; defaults to the session's.
    """
    return _client(service, region, _BUDGET.get())


@lru_cache(maxsize=128)
def _client(service: str, region: str | None, budget: CallBudget) -> Any:
    return _new_client(service, region, budget)


def new_client(service: str, region: str | None = None) -> Any:
    """A new boto3 client of the process-wide session, configured as :func:`client`'s, for a caller that keeps its
    own (one with event handlers of its own, e.g. the EKS token presigner). Created under the session's lock.
    """
    return _new_client(service, region, _BUDGET.get())


def _new_client(service: str, region: str | None, budget: CallBudget) -> Any:
    with _lock:  # boto3 client creation is not thread-safe on a shared session
        factory: Any = session()
        return factory.client(service, region_name=region, config=_retry_config(budget))


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
