"""Routes of the catalog: zones, instance types, training plans and their offerings.

Thin: parse, call one core function, map the result.
"""

from __future__ import annotations

from functools import partial
from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from pydantic import Field

from api_routes.common import (
    _errors,
    _json,
    _ok,
    faces,
    runtime,
)
from instantstart.capacity import training_plans
from instantstart.clusters import (
    catalog,
)
from instantstart.clusters.catalog import AvailabilityZone
from instantstart.models.capacity import TrainingPlanList, TrainingPlanOfferingList
from instantstart.models.cluster import (
    AVAILABILITY_ZONE_PATTERN,
    AVAILABILITY_ZONE_RULE,
    INSTANCE_TYPE_PATTERN,
    INSTANCE_TYPE_RULE,
)
from instantstart.models.common import ApiModel
from instantstart.models.errors import pattern_rule

router = APIGatewayHttpRouter()
_faces = partial(faces, toolset="catalog")


class AvailabilityZoneList(ApiModel):
    """Body of ``GET /catalog/availability-zones``."""

    availability_zones: list[AvailabilityZone] = Field(description="The zones of the API's Region.")


class InstanceTypeList(ApiModel):
    """Body of ``GET /catalog/instance-types``."""

    instance_types: list[str] = Field(
        description="HyperPod instance types offered in the zone.", examples=[["ml.g5.8xlarge", "ml.g6.4xlarge"]]
    )


@router.get(
    "/catalog/availability-zones",
    operation_id="ListAvailabilityZones",
    summary="Availability Zones of the Region",
    responses={**_ok(AvailabilityZoneList), **_errors(422, 503)},
    tags=["catalog"],
    openapi_extensions=_faces(
        "catalog_list_availability_zones",
        "List Availability Zones",
        (
            "List the Availability Zones of the API's Region (GET /catalog/availability-zones): zone names and ids.\n\n"
            "Call before asking the user for a zone, and offer only these. Read-only."
        ),
        cli="catalog zones",
        read_only=True,
    ),
)
def list_availability_zones() -> Response[AvailabilityZoneList]:
    """Zones usable for the HyperPod compute subnet."""
    return _json(AvailabilityZoneList(availability_zones=catalog.list_availability_zones(runtime())))


@router.get(
    "/catalog/instance-types",
    operation_id="ListInstanceTypes",
    summary="HyperPod instance types offered in a zone",
    responses={**_ok(InstanceTypeList), **_errors(422, 503)},
    tags=["catalog"],
    openapi_extensions=_faces(
        "catalog_list_instance_types",
        "List instance types in a zone",
        (
            "List the HyperPod instance types offered in an Availability Zone (GET /catalog/instance-types).\n\n"
            "Call after the user chose a zone and before asking for an instance type; offer only these. Read-only."
        ),
        cli="catalog instance-types",
        read_only=True,
    ),
)
def list_instance_types(
    availability_zone: Annotated[
        str,
        Query(
            alias="availabilityZone",
            pattern=AVAILABILITY_ZONE_PATTERN,
            description="Availability Zone name (GET /catalog/availability-zones).",
            examples=["us-west-2c"],
            json_schema_extra=pattern_rule(AVAILABILITY_ZONE_RULE),
        ),
    ],
) -> Response[InstanceTypeList]:
    """HyperPod ClusterInstanceType values whose EC2 type is offered in the zone."""
    return _json(InstanceTypeList(instance_types=catalog.list_instance_types(runtime(), availability_zone)))


START_AFTER_PATTERN = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$"
"""An ISO-8601 UTC time with seconds and ``Z``, as the API writes times."""


@router.get(
    "/catalog/training-plans",
    operation_id="ListTrainingPlans",
    summary="The account's SageMaker training plans",
    responses={**_ok(TrainingPlanList), **_errors(422, 503)},
    tags=["catalog"],
    openapi_extensions=_faces(
        "catalog_list_training_plans",
        "List training plans",
        (
            "List the account's SageMaker training plans (GET /catalog/training-plans): status, zone, instance type "
            "and count, start and end.\n\n"
            "Call before offering capacityType TrainingPlan: offer only Active or Scheduled plans of the chosen "
            "instance type with enough available instances; the cluster is created in the plan's zone. Read-only."
        ),
        cli="catalog training-plans",
        read_only=True,
    ),
)
def list_training_plans() -> Response[TrainingPlanList]:
    """Training plans of the account in the API's Region: status, zone, instance type and count, start and end."""
    plans = training_plans.list_training_plans(runtime().client("sagemaker"))
    return _json(TrainingPlanList(training_plans=plans))


@router.get(
    "/catalog/training-plan-offerings",
    operation_id="SearchTrainingPlanOfferings",
    summary="Training plan offerings for HyperPod clusters",
    responses={**_ok(TrainingPlanOfferingList), **_errors(422, 503)},
    tags=["catalog"],
    openapi_extensions=_faces(
        "catalog_search_training_plan_offerings",
        "Search training plan offerings",
        (
            "Search purchasable training plan offerings for HyperPod clusters (GET /catalog/training-plan-offerings): "
            "zone, start, end, duration and upfront fee.\n\n"
            "Read-only: buying a plan is a purchase the user makes in SageMaker, never through this server."
        ),
        cli="catalog training-plan-offerings",
        read_only=True,
    ),
)
def search_training_plan_offerings(
    instance_type: Annotated[
        str,
        Query(
            alias="instanceType",
            pattern=INSTANCE_TYPE_PATTERN,
            description="Instance type to reserve, e.g. ml.p5.48xlarge (SageMaker ReservedCapacityInstanceType).",
            examples=["ml.p5.48xlarge"],
            json_schema_extra=pattern_rule(INSTANCE_TYPE_RULE),
        ),
    ],
    instance_count: Annotated[
        int,
        Query(alias="instanceCount", ge=1, le=256, description="Instances to reserve, 1-256.", examples=[4]),
    ],
    duration_hours: Annotated[
        int | None,
        Query(alias="durationHours", ge=1, le=87600, description="Plan duration in hours, 1-87600.", examples=[168]),
    ] = None,
    start_after: Annotated[
        str | None,
        Query(
            alias="startAfter",
            pattern=START_AFTER_PATTERN,
            description="Earliest start (ISO-8601 UTC, e.g. 2026-11-29T17:04:05Z).",
            examples=["2026-11-29T17:04:05Z"],
            json_schema_extra=pattern_rule("an ISO-8601 UTC time with seconds and Z, such as 2026-11-29T17:04:05Z"),
        ),
    ] = None,
) -> Response[TrainingPlanOfferingList]:
    """Purchasable training plan offerings for target resource hyperpod-cluster (SearchTrainingPlanOfferings)."""
    start = training_plans.parse_start_after(start_after) if start_after else None
    offerings = training_plans.search_offerings(
        runtime().client("sagemaker"),
        instance_type=instance_type,
        instance_count=instance_count,
        duration_hours=duration_hours,
        start_after=start,
    )
    return _json(TrainingPlanOfferingList(training_plan_offerings=offerings))
