"""What every stage module shares: the step signature and the AWS error codes meaning "already gone"."""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel

from instantstart.models.workflow import StepPayload
from instantstart.runtime import Runtime

Step = Callable[[Runtime, StepPayload], BaseModel]
"""A workflow step: the runtime and the task payload in, a small typed result out."""

GONE = ("ResourceNotFoundException", "ResourceNotFound", "NoSuchEntity", "NoSuchBucket", "404")
"""AWS error codes of a resource that does not exist (a teardown step treats it as done)."""
