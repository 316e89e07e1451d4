"""DynamoDB single-table keys. This module is the only place key formats are built.

| item                | PK              | SK                                   | GSI1PK          | GSI1SK           |
|---------------------|-----------------|--------------------------------------|-----------------|------------------|
| cluster             | CLUSTER#<tag>   | META                                 | CLUSTERS        | CLUSTER#<tag>    |
| stage of a cluster  | CLUSTER#<tag>   | GEN#<generation:04d>#STAGE#<nn>#<name> |               |                  |
| operation           | OP#<id>         | META                                 | CLUSTER#<tag>   | OP#<createdAt>#<id> |
| operation guard     | CLUSTER#<tag>   | GUARD#<kind>#<part>#...              |                 |                  |
| lock (a lease)      | LOCK#<name>     | META                                 |                 |                  |
| handled event       | EVENT#<id>      | META                                 |                 |                  |
| sweep claim         | SWEEP#<tag>     | META                                 |                 |                  |
| sweep cursor        | SWEEPS          | CURSOR                               |                 |                  |

A lock record holds ``owner`` and ``expiration`` (epoch seconds, the table's TTL attribute): a holder that
crashed leaves a lock that expires instead of blocking forever. A handled-event record (EventBridge event id) holds
``expiration`` too: it exists only to recognise a redelivery, which EventBridge makes within a day. An operation
guard (``records.OperationGuardRecord``) lives in its cluster's partition, so the running guarded operations of a
cluster are one strongly consistent ``Query`` (``begins_with(SK, "GUARD#")``).
"""

from __future__ import annotations

from instantstart.models.common import StageName

META = "META"
CLUSTERS_INDEX_PK = "CLUSTERS"
GSI1 = "GSI1"


def cluster_pk(tag: str) -> str:
    """Partition key of a cluster and its stages."""
    return f"CLUSTER#{tag}"


def stage_sk(generation: int, stage: StageName) -> str:
    """Sort key of one stage of one generation of a cluster."""
    return f"GEN#{generation:04d}#STAGE#{stage.order:02d}#{stage.value}"


def stage_prefix(generation: int) -> str:
    """Sort-key prefix of every stage of one generation."""
    return f"GEN#{generation:04d}#STAGE#"


def operation_pk(operation_id: str) -> str:
    """Partition key of an operation."""
    return f"OP#{operation_id}"


def cluster_index_sk(tag: str) -> str:
    """GSI1 sort key listing clusters by tag."""
    return f"CLUSTER#{tag}"


OPERATION_INDEX_PREFIX = "OP#"


def operation_index_sk(created_at: str, operation_id: str) -> str:
    """GSI1 sort key listing a cluster's operations by creation time (seconds), then by the time-ordered id."""
    return f"{OPERATION_INDEX_PREFIX}{created_at}#{operation_id}"


def lock_pk(name: str) -> str:
    """Partition key of the lock record ``name`` (e.g. ``SUBNETS#<vpc-id>``)."""
    return f"LOCK#{name}"


def event_pk(event_id: str) -> str:
    """Partition key of the record of a handled EventBridge event (its ``id``)."""
    return f"EVENT#{event_id}"


GUARD_PREFIX = "GUARD#"
"""Sort-key prefix of every operation guard of a cluster."""


def guard_sk(kind: str, *parts: str) -> str:
    """Sort key of the guard of ``kind`` over ``parts`` in the cluster's partition: ``GUARD#<kind>#<part>#...``
    (e.g. ``GUARD#DOWNLOAD#s3#Qwen/Qwen2.5-0.5B-Instruct``)."""
    return "#".join((f"{GUARD_PREFIX}{kind}", *parts))


SWEEPS_PK = "SWEEPS"
SWEEP_CURSOR_SK = "CURSOR"


def sweep_pk(tag: str) -> str:
    """Partition key of the reconciliation sweep's claim item of cluster ``tag``."""
    return f"SWEEP#{tag}"
