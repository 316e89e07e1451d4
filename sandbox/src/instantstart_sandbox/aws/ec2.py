"""EC2 answers the sandbox serves itself: DescribeInstanceTypeOfferings with wildcard filters.

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


def describe_instance_type_offerings(req: AwsRequest, forward: Callable[[], RawResponse], region: str) -> RawResponse:
    """DescribeInstanceTypeOfferings (LocationType region | availability-zone | availability-zone-id)."""
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
        if all(
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
