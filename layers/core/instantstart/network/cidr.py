"""Address planning: a free /16 for a new VPC and the first free /20 for a compute subnet."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

VPC_PREFIX = 16
COMPUTE_SUBNET_PREFIX = 20


def free_vpc_cidr(used: Iterable[str], base: str = "10.0.0.0/8") -> str:
    """The first /16 inside ``base`` that overlaps none of the ``used`` CIDRs.

    Raises:
        ValueError: every /16 of ``base`` is taken.
    """
    taken = [ipaddress.ip_network(c) for c in used]
    for candidate in ipaddress.ip_network(base).subnets(new_prefix=VPC_PREFIX):
        if not any(candidate.overlaps(t) for t in taken):
            return str(candidate)
    raise ValueError(f"no free /{VPC_PREFIX} left in {base}")


def control_plane_cidrs(vpc_cidr: str) -> dict[str, list[str]]:
    """Fixed /24 layout of the control-plane subnets: two public and two private, one per AZ."""
    subnets = list(ipaddress.ip_network(vpc_cidr).subnets(new_prefix=24))
    return {"public": [str(subnets[0]), str(subnets[1])], "private": [str(subnets[2]), str(subnets[3])]}


def free_compute_cidr(vpc_cidr: str, used: Iterable[str], prefix: int = COMPUTE_SUBNET_PREFIX) -> str:
    """The first ``/prefix`` block of the VPC that overlaps no existing subnet.

    Raises:
        ValueError: the VPC has no free block of that size.
    """
    taken = [ipaddress.ip_network(c) for c in used]
    for candidate in ipaddress.ip_network(vpc_cidr).subnets(new_prefix=prefix):
        if not any(candidate.overlaps(t) for t in taken):
            return str(candidate)
    raise ValueError(f"VPC {vpc_cidr} has no free /{prefix} block")
