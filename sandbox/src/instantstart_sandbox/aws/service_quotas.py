"""Service Quotas for SageMaker HyperPod cluster usage, and their enforcement on HyperPod launches.

moto 5.2.5's service-quotas knows only ``vpc`` defaults (ListAWSDefaultServiceQuotas, GetServiceQuota).
For ServiceCode ``sagemaker`` the sandbox answers ``ListServiceQuotas``, ``GetServiceQuota``,
``ListAWSDefaultServiceQuotas`` and ``GetAWSDefaultServiceQuota`` with one quota per HyperPod instance
type named "<type> for cluster usage" (e.g. "ml.g6.4xlarge for cluster usage"; stable ``L-`` codes);
other service codes go to moto. Real accounts start many of these at 0; the sandbox's default is
:data:`DEFAULT_CLUSTER_USAGE` so existing flows work, and tests lower a value with
:meth:`ServiceQuotas.set_quota`.

A continuous-mode HyperPod launch that would take the account's instances of a type (Pending or
Running, every cluster) above the quota fails like a capacity shortage: Error cluster events whose
FailureMessage is SageMaker's ResourceLimitExceeded text; HyperPod retries until the quota allows it.

API reference: https://docs.aws.amazon.com/servicequotas/2019-06-24/apireference/API_ListServiceQuotas.html
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from typing import Any

from instantstart_sandbox.aws.hyperpod import HpCluster, HpGroup, HyperPodEmulator, cluster_instance_types
from instantstart_sandbox.aws.protocol import AwsError, AwsRequest, RawResponse

DEFAULT_CLUSTER_USAGE = 100.0
"""The sandbox's default "<type> for cluster usage" value (instances)."""
SERVICE = "sagemaker"


def quota_code(instance_type: str) -> str:
    """The stable quota code of "<instance_type> for cluster usage" (``L-`` + 8 hex digits)."""
    return "L-" + hashlib.sha256(f"{instance_type} for cluster usage".encode()).hexdigest()[:8].upper()


class ServiceQuotas:
    """SageMaker cluster-usage quotas per instance type (values settable by tests).

    Args:
        hyperpod: the HyperPod emulator (a launch check is added to it).
    """

    def __init__(self, hyperpod: HyperPodEmulator) -> None:
        self.hp = hyperpod
        self._lock = threading.Lock()
        self._values: dict[str, float] = {}
        hyperpod.launch_checks.append(self._launch_check)

    # -- test API -----------------------------------------------------------------------------------
    def set_quota(self, instance_type: str, value: float) -> None:
        """Set the applied value of "<instance_type> for cluster usage" (e.g. ``ml.g6.4xlarge``, 1)."""
        with self._lock:
            self._values[instance_type] = float(value)

    def reset(self) -> None:
        """Every quota back to :data:`DEFAULT_CLUSTER_USAGE`."""
        with self._lock:
            self._values.clear()

    def value(self, instance_type: str) -> float:
        """The applied value of the cluster-usage quota of ``instance_type``."""
        with self._lock:
            return self._values.get(instance_type, DEFAULT_CLUSTER_USAGE)

    # -- API --------------------------------------------------------------------------------------
    def handlers(self) -> dict[str, Callable[[AwsRequest, Callable[[], RawResponse]], Any]]:
        """service-quotas operation name -> handler."""
        return {
            "ListServiceQuotas": self.list_service_quotas,
            "GetServiceQuota": self.get_service_quota,
            "ListAWSDefaultServiceQuotas": self.list_default_quotas,
            "GetAWSDefaultServiceQuota": self.get_default_quota,
        }

    def _quota(self, instance_type: str, applied: bool) -> dict[str, Any]:
        code = quota_code(instance_type)
        return {
            "ServiceCode": SERVICE,
            "ServiceName": "Amazon SageMaker",
            "QuotaArn": f"arn:aws:servicequotas:{self.hp.region}:{self.hp.account_id}:{SERVICE}/{code}",
            "QuotaCode": code,
            "QuotaName": f"{instance_type} for cluster usage",
            "Value": self.value(instance_type) if applied else DEFAULT_CLUSTER_USAGE,
            "Unit": "None",
            "Adjustable": True,
            "GlobalQuota": False,
            "QuotaAppliedAtLevel": "ACCOUNT",
            "Description": f"Maximum number of {instance_type} instances allowed across all SageMaker HyperPod "
            "clusters in this account in the current Region.",
        }

    def _list(self, req: AwsRequest, forward: Callable[[], RawResponse], applied: bool) -> Any:
        params = req.params
        if params.get("ServiceCode") != SERVICE:
            return forward()
        quotas = [self._quota(t, applied) for t in sorted(cluster_instance_types())]
        if params.get("QuotaCode"):
            quotas = [q for q in quotas if q["QuotaCode"] == params["QuotaCode"]]
        start = int(params.get("NextToken") or 0)
        end = start + int(params.get("MaxResults") or 100)
        return {"Quotas": quotas[start:end], **({"NextToken": str(end)} if end < len(quotas) else {})}

    def _get(self, req: AwsRequest, forward: Callable[[], RawResponse], applied: bool) -> Any:
        params = req.params
        if params.get("ServiceCode") != SERVICE:
            return forward()
        for instance_type in cluster_instance_types():
            if quota_code(instance_type) == params.get("QuotaCode"):
                return {"Quota": self._quota(instance_type, applied)}
        raise AwsError(
            "NoSuchResourceException", f"The request failed because the quota {params.get('QuotaCode')} does not exist."
        )

    def list_service_quotas(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """ListServiceQuotas (applied values) for ServiceCode ``sagemaker``; QuotaCode filter; paging."""
        return self._list(req, forward, applied=True)

    def list_default_quotas(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """ListAWSDefaultServiceQuotas for ServiceCode ``sagemaker`` (the sandbox defaults)."""
        return self._list(req, forward, applied=False)

    def get_service_quota(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """GetServiceQuota (applied value).

        Raises:
            AwsError: NoSuchResourceException for an unknown sagemaker QuotaCode.
        """
        return self._get(req, forward, applied=True)

    def get_default_quota(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """GetAWSDefaultServiceQuota (default value).

        Raises:
            AwsError: NoSuchResourceException for an unknown sagemaker QuotaCode.
        """
        return self._get(req, forward, applied=False)

    # -- enforcement ------------------------------------------------------------------------------
    def _launch_check(self, cluster: HpCluster, group: HpGroup, zone: str) -> str | None:
        instance_type = str(group.spec.get("InstanceType") or "")
        if not instance_type:
            return None
        limit = self.value(instance_type)
        used = sum(
            1
            for c in self.hp._clusters.values()
            for g in c.groups.values()
            for n in g.nodes
            if n.instance_type == instance_type
        )
        if used + 1 <= limit:
            return None
        return (
            f"ResourceLimitExceeded: The account-level service limit '{instance_type} for cluster usage' is "
            f"{int(limit)} Instances, with current utilization of {used} Instances and a request delta of 1 "
            "Instances. Please use AWS Service Quotas to request an increase for this quota."
        )
