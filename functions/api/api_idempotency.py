"""``Idempotency-Key`` handling with Powertools idempotency (records in the single table).

The key alone identifies the request; a hash of the route and body is validated, so the same
key with another body, or on another route or cluster, is refused (409) instead of running a new
request. Without a key the call runs as is; concurrent creates of one
tag are still serialised by the conditional writes in the core library.

Powertools' idempotency package imports boto3 and builds a DynamoDB client: both happen on the first request
that carries a key, not at the function's cold start (``make cold-start``).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING, Any

from instantstart.errors import Conflict

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer, IdempotencyConfig
    from aws_lambda_powertools.utilities.typing import LambdaContext


class Idempotency:
    """Idempotency records of one API function (Powertools ``DynamoDBPersistenceLayer`` on the single table).

    Built once per container (cold start), its Powertools parts on first use; :meth:`bind` gives it each
    invocation's Lambda context.
    """

    def __init__(self, table_name: str) -> None:
        self.table_name = table_name
        self._context: LambdaContext | None = None

    @cached_property
    def config(self) -> IdempotencyConfig:
        """The Powertools configuration: the key alone identifies a request, ``[route, body]`` is validated."""
        from aws_lambda_powertools.utilities.idempotency import IdempotencyConfig

        config = IdempotencyConfig(
            event_key_jmespath="key",
            payload_validation_jmespath="[route, body]",
            raise_on_no_idempotency_key=True,
            expires_after_seconds=24 * 3600,
        )
        if self._context is not None:
            config.register_lambda_context(self._context)
        return config

    @cached_property
    def persistence(self) -> DynamoDBPersistenceLayer:
        """The records' store: the single table (``PK``/``SK``), through the process's DynamoDB client of the current
        call budget (the API's: :data:`instantstart.aws.clients.API_BUDGET`)."""
        from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer

        from instantstart.aws.clients import client

        return DynamoDBPersistenceLayer(
            table_name=self.table_name, key_attr="PK", sort_key_attr="SK", boto3_client=client("dynamodb")
        )

    def bind(self, context: LambdaContext | None) -> None:
        """Register the invocation's Lambda context (Powertools uses its remaining time for in-progress records)."""
        if context is not None:
            self._context = context
            if "config" in self.__dict__:  # built by an earlier request; otherwise it registers it when built
                self.config.register_lambda_context(context)


def run_idempotent(
    idempotency: Idempotency, *, route: str, key: str | None, body: Any, call: Callable[[], dict[str, Any]]
) -> dict[str, Any]:
    """Run ``call`` once per ``(route, key)``; replay its stored result for a repeated request.

    Raises:
        Conflict: the key was used with another body, or the first request with it is still running.
    """
    if not key:
        return call()
    from aws_lambda_powertools.utilities.idempotency import idempotent_function
    from aws_lambda_powertools.utilities.idempotency.exceptions import (
        IdempotencyAlreadyInProgressError,
        IdempotencyValidationError,
    )

    @idempotent_function(
        data_keyword_argument="request", config=idempotency.config, persistence_store=idempotency.persistence
    )
    def _run(request: dict[str, Any]) -> dict[str, Any]:
        return call()

    try:
        return _run(request={"route": route, "key": key, "body": body})
    except IdempotencyValidationError as exc:
        raise Conflict(
            "Idempotency-Key was already used for a different request (another body, route or cluster); use a new key",
            code="IdempotencyKeyReused",
            details=[{"field": "Idempotency-Key"}],
        ) from exc
    except IdempotencyAlreadyInProgressError as exc:
        raise Conflict(
            "a request with this Idempotency-Key is still in progress; retry shortly",
            code="IdempotencyKeyInProgress",
            details=[{"field": "Idempotency-Key"}],
        ) from exc
