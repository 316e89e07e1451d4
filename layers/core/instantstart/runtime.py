"""What every core entry point needs: settings, the store and AWS clients, built once per process."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from instantstart.aws.clients import client
from instantstart.config import Settings, load_settings
from instantstart.store.table import Store


@dataclass
class Runtime:
    """Dependencies of the core library (handlers build one at cold start; tests build their own)."""

    settings: Settings

    @classmethod
    def from_env(cls, required: Iterable[str] = ()) -> Runtime:
        """The runtime of this process, from the environment read once into :class:`Settings`.

        Raises:
            MissingSettings: one of ``required`` is not set (the cold start stops with its name).
        """
        return cls(load_settings(required))

    @property
    def region(self) -> str:
        """The AWS Region of this deployment."""
        return self.settings.AWS_REGION

    def client(self, service: str) -> Any:
        """A cached boto3 client of ``service`` in this Region."""
        return client(service, self.region)

    @cached_property
    def store(self) -> Store:
        """The DynamoDB store of records."""
        return Store(self.client("dynamodb"), self.settings.TABLE_NAME)

    @cached_property
    def account_id(self) -> str:
        """The AWS account id (STS ``GetCallerIdentity``, once per process)."""
        return str(self.client("sts").get_caller_identity()["Account"])
