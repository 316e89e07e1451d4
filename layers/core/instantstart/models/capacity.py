"""Capacity models: training plans and offerings (``GET /catalog/training-plans``, ``.../training-plan-offerings``)
and the zone reconciliation a ``POST /clusters`` answer reports."""

from __future__ import annotations

from pydantic import Field

from instantstart.models.common import ApiModel

PLAN_ARN_EXAMPLE = "arn:aws:sagemaker:us-west-2:123456789012:training-plan/p5-active"
TIME_EXAMPLE = "2026-11-29T17:04:05Z"


class ReservedCapacityView(ApiModel):
    """One reserved capacity of a training plan (SageMaker ``ReservedCapacitySummary``)."""

    instance_type: str = Field(description="Reserved instance type.", examples=["ml.p5.48xlarge"])
    total_instance_count: int = Field(description="Instances reserved.", examples=[4])
    status: str = Field(description="Status of the reserved capacity.", examples=["Active"])
    availability_zone: str | None = Field(
        default=None,
        description="Zone of the reserved capacity: a cluster using it runs there.",
        examples=["us-west-2a"],
    )
    start_time: str | None = Field(default=None, description="Start (ISO-8601 UTC).", examples=[TIME_EXAMPLE])
    end_time: str | None = Field(default=None, description="End (ISO-8601 UTC).", examples=[TIME_EXAMPLE])


class TrainingPlanView(ApiModel):
    """One training plan of the account (SageMaker ``TrainingPlanSummary``)."""

    training_plan_arn: str = Field(
        description="Use it as an instance group's trainingPlanArn.", examples=[PLAN_ARN_EXAMPLE]
    )
    training_plan_name: str = Field(description="Plan name.", examples=["p5-active"])
    status: str = Field(
        description="Pending, Active, Scheduled, Expired or Failed; a cluster can use an Active or Scheduled plan "
        "(a Scheduled plan's instances launch once it starts).",
        examples=["Active"],
    )
    instance_type: str | None = Field(
        default=None, description="Instance type of its reserved capacity.", examples=["ml.p5.48xlarge"]
    )
    total_instance_count: int | None = Field(default=None, description="Instances reserved.", examples=[4])
    available_instance_count: int | None = Field(
        default=None, description="Instances not used by any cluster yet.", examples=[4]
    )
    in_use_instance_count: int | None = Field(default=None, description="Instances used by clusters.", examples=[0])
    availability_zone: str | None = Field(
        default=None,
        description="Zone of its reserved capacity (the cluster's zone wins over it).",
        examples=["us-west-2a"],
    )
    start_time: str | None = Field(default=None, description="Start (ISO-8601 UTC).", examples=[TIME_EXAMPLE])
    end_time: str | None = Field(default=None, description="End (ISO-8601 UTC).", examples=[TIME_EXAMPLE])
    target_resources: list[str] = Field(
        default_factory=list, description="What it can be used by (hyperpod-cluster).", examples=[["hyperpod-cluster"]]
    )
    reserved_capacities: list[ReservedCapacityView] = Field(
        default_factory=list, description="Its reserved capacities (ReservedCapacitySummaries)."
    )


class TrainingPlanList(ApiModel):
    """Body of ``GET /catalog/training-plans``."""

    training_plans: list[TrainingPlanView] = Field(description="The account's training plans in this Region.")


class TrainingPlanOfferingView(ApiModel):
    """One purchasable training plan offering for HyperPod clusters (SageMaker ``TrainingPlanOffering``)."""

    training_plan_offering_id: str = Field(
        description="Offering id (SageMaker CreateTrainingPlan buys it).", examples=["tpo-0123456789abcdef"]
    )
    instance_type: str | None = Field(default=None, description="Instance type.", examples=["ml.p5.48xlarge"])
    instance_count: int | None = Field(default=None, description="Instances.", examples=[4])
    availability_zone: str | None = Field(
        default=None, description="Zone of the capacity (a cluster using the plan runs there).", examples=["us-west-2a"]
    )
    start_time: str | None = Field(default=None, description="Start (ISO-8601 UTC).", examples=[TIME_EXAMPLE])
    end_time: str | None = Field(default=None, description="End (ISO-8601 UTC).", examples=[TIME_EXAMPLE])
    duration_hours: int | None = Field(default=None, description="Duration in hours.", examples=[168])
    upfront_fee: str | None = Field(default=None, description="Upfront fee.", examples=["16517.76"])
    currency_code: str | None = Field(default=None, description="Currency of the fee.", examples=["USD"])


class TrainingPlanOfferingList(ApiModel):
    """Body of ``GET /catalog/training-plan-offerings``."""

    training_plan_offerings: list[TrainingPlanOfferingView] = Field(
        description="Offerings for target resource hyperpod-cluster that fit the search."
    )


class AvailabilityZoneChange(ApiModel):
    """How a create was moved to its training plan's zone (in the ``POST /clusters`` 202 answer)."""

    requested: str = Field(description="The availabilityZone of the request.", examples=["us-west-2c"])
    availability_zone: str = Field(description="The zone the cluster is created in.", examples=["us-west-2a"])
    reason: str = Field(
        description="Why, in words (names the training plan).",
        examples=["training plan p5-active reserves its ml.p5.48xlarge capacity in us-west-2a"],
    )
