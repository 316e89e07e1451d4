"""The features area's part of the steps function (:mod:`instantstart.clusters.registry`): the ``UPDATE_FEATURES``
change (:data:`instantstart.features.service.CHANGES`) and what a cluster deletion removes of the features.

Imports nothing of the area at import time: the registry imports the change's module on first use, and the
teardown hooks import theirs when they run.
"""

from __future__ import annotations

from instantstart.clusters.registry import REGISTRY, Teardown
from instantstart.models.common import OperationType
from instantstart.runtime import Runtime


def delete_file_systems(rt: Runtime, tag: str) -> list[str]:
    """One round of deleting the cluster's ``fsx`` file systems, their data repository associations and security
    group (:func:`instantstart.features.fsx.teardown`: FSx and EC2 calls); what is still there (empty: done).

    Before the network teardown: a file system's network interface would keep the subnet and security groups.
    """
    from instantstart.features import fsx

    return fsx.teardown(rt, tag)


def delete_roles(rt: Runtime, tag: str) -> list[str]:
    """Delete every feature role and the TLS bucket carrying the cluster's ownership tags
    (:func:`instantstart.features.service.teardown`: IAM and S3 calls); returns nothing to wait for."""
    from instantstart.features.service import teardown

    teardown(rt, tag)
    return []


REGISTRY.add_changes("instantstart.features.service", (OperationType.UPDATE_FEATURES,))
REGISTRY.add_teardown(Teardown.NETWORK, delete_file_systems)
REGISTRY.add_teardown(Teardown.ROLES, delete_roles)
