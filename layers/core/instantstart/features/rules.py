"""The refusals of ``PATCH /clusters/{clusterTag}/features`` before any operation starts."""

from __future__ import annotations

from instantstart.errors import ValidationFailed
from instantstart.features.catalog import FEATURES
from instantstart.features.observe import ClusterObservation
from instantstart.features.plan import compatible_versions, requested
from instantstart.models.common import ClusterStatus
from instantstart.models.features import UpdateFeaturesRequest
from instantstart.runtime import Runtime

CHANGEABLE = (ClusterStatus.READY, ClusterStatus.DEGRADED)
"""Cluster statuses in which features can change (PATCH answers 409 ``ClusterNotReady`` in any other)."""


def check_versions(rt: Runtime, request: UpdateFeaturesRequest, obs: ClusterObservation) -> None:
    """A pinned version must be offered for the cluster's Kubernetes version (EKS DescribeAddonVersions).

    Raises:
        ValidationFailed: names ``<feature>.version`` and the versions offered (``allowedValues``).
    """
    for key, req in requested(request).items():
        spec = FEATURES[key]
        version = getattr(req, "version", None)
        if version is None or spec.addon is None:
            continue
        offered = compatible_versions(rt.client("eks"), spec.addon, str(obs.kubernetes_version))
        if version not in offered:
            raise ValidationFailed(
                f"{key}.version '{version}' is not offered for {spec.addon} on Kubernetes {obs.kubernetes_version}; "
                f"allowed values: {', '.join(offered) or 'none'}",
                details=[
                    {
                        "field": f"{key}.version",
                        "message": f"not offered for Kubernetes {obs.kubernetes_version}",
                        "allowedValues": offered,
                    }
                ],
            )
