"""EC2 answers the sandbox serves itself: DescribeInstanceTypeOfferings with wildcard filters, and
``DependencyViolation`` on DeleteSubnet/DeleteSecurityGroup/DeleteVpc while network interfaces remain.

moto 5.2.5 holds realistic offerings per zone for us-west-2 (g5, g6, g6e, p4d, p5, ...), but its
filters match exact values only, while EC2 accepts ``*``/``?`` wildcards (``g5.*``), and it never
pages. This answers from moto's own offering data with EC2's filter semantics and paging.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable
from typing import Any
from xml.sax.saxutils import escape

from instantstart_sandbox.aws.protocol import AwsError, AwsRequest, RawResponse, ec2_xml

_FILTER_KEYS = {"instance-type": "InstanceType", "location": "Location"}


def _filters(params: dict[str, Any]) -> dict[str, list[str]]:
    names: dict[str, str] = {}
    values: dict[str, list[str]] = {}
    for key, value in params.items():
        match = re.fullmatch(r"Filter\.(\d+)\.Name", key)
        if match:
            names[match.group(1)] = str(value)
            continue
        match = re.fullmatch(r"Filter\.(\d+)\.Value\.(\d+)", key)
        if match:
            values.setdefault(match.group(1), []).extend(value if isinstance(value, list) else [value])
    return {names[i]: values.get(i, []) for i in names}


def describe_instance_type_offerings(
    req: AwsRequest,
    forward: Callable[[], RawResponse],
    region: str,
    removed: Callable[[str, str], bool] | None = None,
) -> RawResponse:
    """DescribeInstanceTypeOfferings (LocationType region | availability-zone | availability-zone-id).

    EC2 names carry no ``ml.`` prefix (``g6.4xlarge``); a filter on ``ml.g6.4xlarge`` matches nothing,
    as on AWS. ``removed(instance_type, location)`` hides offerings a test removed.
    """
    from moto.ec2.models.instance_types import INSTANCE_TYPE_OFFERINGS

    params = req.params
    location_type = params.get("LocationType") or "region"
    if location_type not in INSTANCE_TYPE_OFFERINGS:
        raise AwsError("InvalidParameterValue", f"Invalid value '{location_type}' for LocationType")
    filters = _filters(params)
    for name in filters:
        if name not in _FILTER_KEYS:
            raise AwsError("InvalidParameterValue", f"The filter '{name}' is invalid")
    offerings: list[dict[str, Any]] = INSTANCE_TYPE_OFFERINGS[location_type].get(region, [])
    matched = [
        o
        for o in offerings
        if not (removed is not None and removed(str(o["InstanceType"]), str(o["Location"])))
        and all(
            any(fnmatch.fnmatchcase(str(o.get(_FILTER_KEYS[name], "")), pattern) for pattern in patterns)
            for name, patterns in filters.items()
        )
    ]
    matched.sort(key=lambda o: (o["InstanceType"], o["Location"]))
    start = int(params.get("NextToken") or 0)
    size = int(params.get("MaxResults") or 1000)
    page = matched[start : start + size]
    items = "".join(
        f"<item><instanceType>{escape(o['InstanceType'])}</instanceType>"
        f"<locationType>{escape(location_type)}</locationType><location>{escape(o['Location'])}</location></item>"
        for o in page
    )
    token = f"<nextToken>{start + size}</nextToken>" if start + size < len(matched) else ""
    body = ec2_xml(
        "DescribeInstanceTypeOfferings", f"<instanceTypeOfferingSet>{items}</instanceTypeOfferingSet>{token}"
    )
    return RawResponse(200, [("Content-Type", "text/xml;charset=UTF-8")], body)


# -- network interfaces that outlive their cluster --------------------------------------------------
def _enis(account_id: str, region: str) -> list[Any]:
    from instantstart_sandbox.aws import backends

    return list(backends.ec2(account_id, region).enis.values())


def _eni_groups(eni: Any) -> set[str]:
    return {getattr(g, "id", g) for g in getattr(eni, "_group_set", None) or []}


def linger_network_interfaces(
    account_id: str,
    region: str,
    subnet_ids: list[str],
    group_ids: list[str],
    description: str,
    seconds: float,
    call_later: Callable[[float, Callable[[], None]], None],
) -> list[str]:
    """Create one interface per subnet (``group_ids`` attached) that is deleted ``seconds`` later.

    Models the requester-managed interfaces EKS and HyperPod leave behind for a while after a
    cluster is deleted; they are visible in DescribeNetworkInterfaces. Returns their ids.
    """
    from instantstart_sandbox.aws import backends

    backend = backends.ec2(account_id, region)
    created: list[str] = []
    for subnet_id in subnet_ids:
        subnet = backends.subnet(account_id, region, subnet_id)
        if subnet is None:
            continue
        groups = [g for g in group_ids if backends.security_group_exists(account_id, region, g)]
        eni = backend.create_network_interface(subnet, None, group_ids=groups, description=description)
        eni.requester_managed = True
        eni.status = "in-use"
        created.append(eni.id)

    def gone() -> None:
        for eni_id in created:
            backend.enis.pop(eni_id, None)

    if created:
        call_later(seconds, gone)
    return created


def _dependency(message: str) -> AwsError:
    return AwsError("DependencyViolation", message, 400)


def delete_subnet(req: AwsRequest, forward: Callable[[], RawResponse], account_id: str, region: str) -> RawResponse:
    """DeleteSubnet: ``DependencyViolation`` while a network interface is in the subnet (moto does not check)."""
    subnet_id = str(req.params.get("SubnetId") or "")
    if any(getattr(eni.subnet, "id", None) == subnet_id for eni in _enis(account_id, region)):
        raise _dependency(f"The subnet '{subnet_id}' has dependencies and cannot be deleted.")
    return forward()


def delete_security_group(
    req: AwsRequest, forward: Callable[[], RawResponse], account_id: str, region: str
) -> RawResponse:
    """DeleteSecurityGroup: ``DependencyViolation`` while a network interface uses the group."""
    group_id = str(req.params.get("GroupId") or "")
    if group_id and any(group_id in _eni_groups(eni) for eni in _enis(account_id, region)):
        raise _dependency(f"resource {group_id} has a dependent object")
    return forward()


def delete_vpc(req: AwsRequest, forward: Callable[[], RawResponse], account_id: str, region: str) -> RawResponse:
    """DeleteVpc: ``DependencyViolation`` while a network interface is in the VPC."""
    vpc_id = str(req.params.get("VpcId") or "")
    if any(getattr(eni.subnet, "vpc_id", None) == vpc_id for eni in _enis(account_id, region)):
        raise _dependency(f"The vpc '{vpc_id}' has dependencies and cannot be deleted.")
    return forward()
