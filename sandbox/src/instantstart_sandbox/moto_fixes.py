"""Corrections of moto behaviour that differs from AWS on paths the control plane uses.

Each fix names the AWS behaviour it restores. Applied once by :class:`instantstart_sandbox.runner.Sandbox`.
"""

from __future__ import annotations

import functools
import threading
from typing import Any


def install() -> None:
    """Apply every fix (idempotent)."""
    _gateway_endpoint_routes_follow_route_tables()
    _deleted_nat_gateway_releases_its_address_association()
    _dynamodb_item_operations_are_atomic()


def _gateway_endpoint_routes_follow_route_tables() -> None:
    """ModifyVpcEndpoint ``AddRouteTableIds``/``RemoveRouteTableIds`` on a gateway endpoint adds/removes the
    prefix-list route in those tables (AWS does; moto only records the ids, and DeleteVpcEndpoints then fails
    with InvalidRoute.NotFound)."""
    from moto.ec2.models.vpcs import VPCBackend

    original = VPCBackend.modify_vpc_endpoint
    if getattr(original, "_instantstart_patched", False):
        return

    def modify_vpc_endpoint(
        self: Any,
        vpc_id: str,
        policy_doc: str,
        add_subnets: Any,
        remove_subnets: Any,
        remove_route_tables: Any,
        add_route_tables: Any,
        *args: Any,
        **kwargs: Any,
    ) -> None:
        endpoint = self.describe_vpc_endpoints(vpc_end_point_ids=[vpc_id])[0]
        before = set(endpoint.route_table_ids or [])
        original(
            self,
            vpc_id,
            policy_doc,
            add_subnets,
            remove_subnets,
            remove_route_tables,
            add_route_tables,
            *args,
            **kwargs,
        )
        prefix_list = endpoint.destination_prefix_list_id
        if not prefix_list:
            return
        for table_id in add_route_tables or []:
            if table_id not in before:
                self.create_route(table_id, None, gateway_id=vpc_id, destination_prefix_list_id=prefix_list)
        for table_id in remove_route_tables or []:
            if table_id in before:
                self.delete_route(table_id, prefix_list)

    modify_vpc_endpoint._instantstart_patched = True  # type: ignore[attr-defined]
    VPCBackend.modify_vpc_endpoint = modify_vpc_endpoint  # type: ignore[method-assign]


def _deleted_nat_gateway_releases_its_address_association() -> None:
    """DeleteNatGateway disassociates the gateway's Elastic IP and removes its network interface (AWS does;
    moto leaves both, so the address can be neither released nor reused and the subnet never deleted)."""
    from moto.ec2.models.nat_gateways import NatGatewayBackend

    original = NatGatewayBackend.delete_nat_gateway
    if getattr(original, "_instantstart_patched", False):
        return

    def delete_nat_gateway(self: Any, nat_gateway_id: str) -> Any:
        nat = original(self, nat_gateway_id)
        eni = getattr(nat, "_eni", None)
        for address in list(self.addresses):
            if eni is not None and getattr(address, "eni", None) is eni:
                address.eni = None
                address.association_id = None
        if eni is not None:  # AWS removes the gateway's interface too (else DeleteSubnet meets DependencyViolation)
            self.enis.pop(eni.id, None)
        return nat

    delete_nat_gateway._instantstart_patched = True  # type: ignore[attr-defined]
    NatGatewayBackend.delete_nat_gateway = delete_nat_gateway  # type: ignore[method-assign]


_DYNAMODB_LOCK = threading.RLock()


def _dynamodb_item_operations_are_atomic() -> None:
    """Each DynamoDB item operation is atomic, as in AWS. moto's in-memory tables are not thread-safe: two
    concurrent UpdateItem calls on one item can fail with "dictionary changed size during iteration". The
    sandbox serves requests on many threads (parallel Step Functions branches), so item operations are
    serialised here."""
    from moto.dynamodb.models import DynamoDBBackend

    if getattr(DynamoDBBackend, "_instantstart_atomic", False):
        return
    for name in ("put_item", "get_item", "query", "scan", "update_item", "delete_item", "transact_write_items"):
        original = getattr(DynamoDBBackend, name)

        def locked(*args: Any, __original: Any = original, **kwargs: Any) -> Any:
            with _DYNAMODB_LOCK:
                return __original(*args, **kwargs)

        setattr(DynamoDBBackend, name, functools.wraps(original)(locked))
    DynamoDBBackend._instantstart_atomic = True  # type: ignore[attr-defined]
