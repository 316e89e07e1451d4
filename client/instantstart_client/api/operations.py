"""Calls by ``operationId``: the one path every route method of the client takes to the transport."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from instantstart_client.api.transport import ApiTransport
from instantstart_client.operations import IDEMPOTENCY_HEADER, operation


class OperationsApi(ApiTransport):
    """:meth:`call_operation`, on which the area mixins build their route methods."""

    def call_operation(
        self,
        operation_id: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        body: Any = None,
        idempotency_key: str | None = None,
    ) -> Any:
        """Call the API operation ``operation_id`` of the shipped OpenAPI document and return its parsed JSON answer.

        Args:
            operation_id: the ``operationId``, e.g. ``"ListClusterEvents"`` (see
                :func:`instantstart_client.operations.operations`).
            arguments: path and query parameters by their OpenAPI names, e.g. ``{"clusterTag": "demo",
                "maxResults": 20}``. Path parameters are required and quoted as one segment (a ``/`` or ``..`` in a
                value never changes the route); query parameters that are None are left out.
            body: the JSON body, sent as given (None members are not removed); None for no body.
            idempotency_key: the ``Idempotency-Key`` header, sent only when the operation declares it (then a key
                is generated per call when None, so this call's retries never start a second operation).

        Returns:
            The parsed JSON of the 2xx answer, or None for an empty body.

        Raises:
            UnknownOperationError: (a ``KeyError``) no operation has this id.
            ValueError: an argument the operation does not declare (the message names it and the allowed names),
                a missing or empty path parameter, or a ``body`` for an operation that takes none.
            ApiError: non-2xx answer (after retries for 429/503), as :meth:`request`.
            ApiConnectionError: the API could not be reached after retries.
            ApiTimeoutError: the :meth:`time_bound` ran out before an answer.
            ConfigurationError: no AWS credentials.
        """
        op = operation(operation_id)
        path, query = op.bind(arguments)
        if body is not None and not op.takes_body:
            raise ValueError(f"{operation_id} ({op.method} {op.path}) takes no request body")
        headers: dict[str, str] = {}
        if op.accepts_idempotency_key:
            headers[IDEMPOTENCY_HEADER] = idempotency_key or str(uuid.uuid4())
        return self.request(op.method, path, params=query or None, body=body, headers=headers or None)
