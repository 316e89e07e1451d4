"""``instantstart catalog``: what the account and Region can run (zones, instance types, training plans)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from instantstart_client.cli.common import JsonOption, _echo_json, _state, handle_errors
from instantstart_client.render import instance_types_table, zones_table

catalog_app = typer.Typer(help="What the account and Region can run.", no_args_is_help=True)


# -- catalog ------------------------------------------------------------------------------------------


@catalog_app.command("zones")
@handle_errors
def catalog_zones(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """Availability Zones of the API's Region."""
    state = _state(ctx)
    zones = state.client().list_availability_zones()
    if state.wants_json(as_json):
        _echo_json({"availabilityZones": zones})
        return
    state.console.print(zones_table(zones))


@catalog_app.command("instance-types")
@handle_errors
def catalog_instance_types(
    ctx: typer.Context,
    az: Annotated[str, typer.Option("--az", help="Availability Zone, e.g. us-west-2c.")],
    as_json: JsonOption = False,
) -> None:
    """HyperPod instance types offered in an Availability Zone."""
    state = _state(ctx)
    instance_types = state.client().list_instance_types(az)
    if state.wants_json(as_json):
        _echo_json({"instanceTypes": instance_types})
        return
    state.console.print(instance_types_table(instance_types, az))


@catalog_app.command("training-plans")
@handle_errors
def catalog_training_plans(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """The account's SageMaker training plans (status, zone, instance type and count, start and end)."""
    state = _state(ctx)
    plans = state.client().list_training_plans()
    if state.wants_json(as_json):
        _echo_json({"trainingPlans": plans})
        return
    table = Table(title="Training plans")
    for column in ("Name", "Status", "Zone", "Instances", "Available", "Start", "End", "ARN"):
        table.add_column(column)
    for p in plans:
        table.add_row(
            p["trainingPlanName"],
            p["status"],
            p.get("availabilityZone") or "-",
            f"{p.get('totalInstanceCount') or 0}x {p.get('instanceType') or '-'}",
            str(p.get("availableInstanceCount") if p.get("availableInstanceCount") is not None else "-"),
            p.get("startTime") or "-",
            p.get("endTime") or "-",
            p["trainingPlanArn"],
        )
    state.console.print(table)


@catalog_app.command("training-plan-offerings")
@handle_errors
def catalog_training_plan_offerings(
    ctx: typer.Context,
    instance_type: Annotated[str, typer.Option("--instance-type", help="Instance type, e.g. ml.p5.48xlarge.")],
    count: Annotated[int, typer.Option("--count", help="Instances to reserve, 1-256.")],
    duration_hours: Annotated[int | None, typer.Option("--duration-hours", help="Plan duration in hours.")] = None,
    start_after: Annotated[
        str | None, typer.Option("--start-after", help="Earliest start, ISO-8601 UTC (2026-11-29T17:04:05Z).")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Purchasable training plan offerings for HyperPod clusters."""
    state = _state(ctx)
    offerings = state.client().search_training_plan_offerings(
        instance_type=instance_type, instance_count=count, duration_hours=duration_hours, start_after=start_after
    )
    if state.wants_json(as_json):
        _echo_json({"trainingPlanOfferings": offerings})
        return
    table = Table(title=f"Training plan offerings for {count}x {instance_type}")
    for column in ("Offering", "Zone", "Start", "End", "Hours", "Upfront fee"):
        table.add_column(column)
    for o in offerings:
        table.add_row(
            o["trainingPlanOfferingId"],
            o.get("availabilityZone") or "-",
            o.get("startTime") or "-",
            o.get("endTime") or "-",
            str(o.get("durationHours") or "-"),
            f"{o.get('upfrontFee') or '-'} {o.get('currencyCode') or ''}".strip(),
        )
    state.console.print(table)
