"""DynamoDB's writes are atomic in the sandbox, as they are in AWS.

DynamoDB evaluates a write's ``ConditionExpression`` and applies the write as one step, and runs
``TransactWriteItems`` serializably (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis.html#transaction-isolation):
of two concurrent writes conditioned on the same old value, exactly one succeeds. moto checks and then writes in
Python, so two threads of a threaded server can both pass the check; and a cancelled transaction restores the items
it backed up, which can undo a concurrent write. :func:`install` serializes moto's DynamoDB writes (``PutItem``,
``UpdateItem``, ``DeleteItem``, ``BatchWriteItem``, ``TransactWriteItems``) with one lock, so a lock built on a
conditional write (one operation per cluster) is tested against the isolation AWS gives, not a weaker one.
Reads take the same lock: DynamoDB returns each item as it was before or after a write, but moto changes its item
dicts in place, so a read beside a write could fail with ``RuntimeError: dictionary changed size during iteration``
(seen under load in ``tests/unit/test_operation_lock.py``), an error AWS never gives.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

_WRITES = ("put_item", "update_item", "delete_item", "batch_write_item", "transact_write_items")
"""moto ``DynamoHandler`` actions that write (each one request of the DynamoDB API)."""
_READS = ("get_item", "query", "scan", "batch_get_item", "transact_get_items")
"""moto ``DynamoHandler`` actions that read items (serialized too: see the module's docstring)."""

_write_lock = threading.RLock()
_install_lock = threading.Lock()


def _serialized(action: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(action)
    def write(self: Any, *args: Any, **kwargs: Any) -> Any:
        with _write_lock:
            return action(self, *args, **kwargs)

    write._instantstart_serialized = True  # type: ignore[attr-defined]
    return write


def install() -> None:
    """Serialize moto's DynamoDB item actions, writes and reads (idempotent; patches
    ``moto.dynamodb.responses.DynamoHandler``)."""
    from moto.dynamodb.responses import DynamoHandler

    handler: Any = DynamoHandler
    with _install_lock:
        for name in _WRITES + _READS:
            action = getattr(handler, name)
            if not getattr(action, "_instantstart_serialized", False):
                setattr(handler, name, _serialized(action))
