"""The error body of every 4xx/5xx answer of the HTTP API, and the rule-in-words of a pattern.

Every error answer is ``{"error": {"code", "message", "details": [{"field", ...}]}}``
(:class:`ErrorResponse`). The API function builds each one from these models, the OpenAPI document
references them, and the client and the MCP proxy (separate deployables) are checked against that
document by the contract tests.
"""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

from instantstart.models.common import ApiModel

PATTERN_RULE_KEY = "x-patternRule"
"""JSON-schema extension keyword carrying a pattern's rule in words (a noun phrase, e.g. "a zone name such as
us-west-2c"). Set it once next to the pattern with :func:`pattern_rule`; the API's 422 messages quote it
instead of the regular expression, and it is published in ``api_schema/openapi.json``."""


def pattern_rule(words: str) -> dict[str, Any]:
    """The ``json_schema_extra`` of a field with a ``pattern``: the pattern's rule in ``words``.

    Args:
        words: a noun phrase completing "<field> must be ...", e.g. "a zone name such as us-west-2c".

    Returns:
        ``{PATTERN_RULE_KEY: words}``, for ``Field(json_schema_extra=...)`` or a Powertools ``Param``.
    """
    return {PATTERN_RULE_KEY: words}


class ErrorDetail(ApiModel):
    """One problem of a failed request: the field it concerns and, for a validation failure, the rule.

    Only the keys that apply are present. Other keys may be added by later versions.
    """

    model_config = ConfigDict(extra="allow")

    field: str = Field(
        description="The request field, parameter or header concerned: a JSON path into the body "
        "(`instanceGroups[0].instanceCount`), a path or query parameter name, or a header name.",
        examples=["instanceGroups[0].instanceCount"],
    )
    message: str | SkipJsonSchema[None] = Field(
        default=None,
        description="What is wrong with this field and the rule it must follow, in words.",
        examples=["instanceGroups[0].instanceCount must be an integer between 1 and 6758; got 0"],
    )
    type: str | SkipJsonSchema[None] = Field(
        default=None,
        description="Machine-readable kind of the validation failure (pydantic error type).",
        examples=["greater_than_equal", "string_pattern_mismatch", "missing", "enum"],
    )
    allowed_values: list[str] | SkipJsonSchema[None] = Field(
        default=None, description="The values the field accepts, when they are a closed set.", examples=[["OnDemand"]]
    )
    minimum: int | float | SkipJsonSchema[None] = Field(
        default=None, description="Smallest allowed number (inclusive).", examples=[1]
    )
    maximum: int | float | SkipJsonSchema[None] = Field(
        default=None, description="Largest allowed number (inclusive).", examples=[6758]
    )
    min_length: int | SkipJsonSchema[None] = Field(default=None, description="Fewest characters allowed.", examples=[3])
    max_length: int | SkipJsonSchema[None] = Field(default=None, description="Most characters allowed.", examples=[24])
    min_items: int | SkipJsonSchema[None] = Field(default=None, description="Fewest list items allowed.", examples=[1])
    max_items: int | SkipJsonSchema[None] = Field(default=None, description="Most list items allowed.", examples=[20])
    pattern: str | SkipJsonSchema[None] = Field(
        default=None,
        description="The regular expression the value must match (the message states it in words).",
        examples=["^[a-z]{2}(-[a-z]+)+-\\d[a-z]$"],
    )
    status: str | SkipJsonSchema[None] = Field(
        default=None, description="For a conflict: the current status of the cluster or stage.", examples=["CREATING"]
    )
    operation_status: str | SkipJsonSchema[None] = Field(
        default=None, description="For a conflict: the status of the operation in the way.", examples=["RUNNING"]
    )


class ErrorBody(ApiModel):
    """``error`` of every 4xx/5xx answer."""

    code: str = Field(
        description="Machine-readable error code, e.g. ValidationError, BadRequest, ClusterNotFound, "
        "ClusterAlreadyExists, IdempotencyKeyReused, UnsupportedMediaType, RouteNotFound.",
        examples=["ValidationError"],
    )
    message: str = Field(
        description="What went wrong and what to do about it, in words (names the fields and their rules).",
        examples=["invalid request: instanceGroups[0].instanceCount must be an integer between 1 and 6758; got 0"],
    )
    details: list[ErrorDetail] = Field(
        default_factory=list, description="One entry per field concerned (may be empty)."
    )


class ErrorResponse(ApiModel):
    """Every 4xx/5xx answer: ``{"error": {"code", "message", "details": [{"field", ...}]}}``."""

    error: ErrorBody = Field(description="The error.")

    @classmethod
    def of(cls, code: str, message: str, details: list[dict[str, Any]] | None = None) -> ErrorResponse:
        """The error answer with ``code``, ``message`` and ``details`` (dicts with camelCase keys).

        Raises:
            pydantic.ValidationError: a detail has no ``field`` or a known key of the wrong type.
        """
        items = [ErrorDetail.model_validate(d) for d in details or []]
        return cls(error=ErrorBody(code=code, message=message, details=items))

    def to_api(self) -> dict[str, object]:
        """The camelCase JSON-ready dict, without the detail keys that do not apply."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)
