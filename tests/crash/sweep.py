"""Crash anywhere: kill each step of the create and delete workflows after each of its AWS calls, and compare.

The sandbox's Lambda runtime kills an invocation right after its n-th AWS call returned
(:data:`instantstart_sandbox.lambdas.FAULTS`): the step's work up to that call stays done, nothing after it runs
(no record, no answer), and Step Functions sees Lambda's crash (``Runtime.ExitError``, or ``Lambda.Unknown`` as its
documentation names it) or, for a timeout, ``Sandbox.Timedout`` once the function's ``Timeout`` passed. The
workflow retries the step (``statemachines/build.py::CRASH_RETRY``); every step is idempotent, so the cluster ends
READY (then DELETED) with the records and the AWS resources of a clean run, no duplicate among them.

The step actions and how many AWS calls each makes come from a recorded clean run (the runtime's invocation log:
``(workflow, action, stage)`` -> the most calls one invocation made), never from a hand-kept list. A lifecycle
(create, then delete) of its own cluster tag carries one crash point of every step at once: lifecycle ``k`` kills
each step after its ``k``-th call (steps with fewer calls are not killed), so ``max(calls)`` lifecycles cover every
crash point, and they run concurrently in one sandbox.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import boto3
from botocore.exceptions import ClientError

from instantstart.naming import MANAGED_KEY, TAG_KEY
from instantstart.store.table import Store
from instantstart_client.api import InstantStartClient
from instantstart_sandbox import lambdas
from instantstart_sandbox.runner import Sandbox

ZONE = "us-west-2c"
GROUP = {"instanceGroupName": "accel", "instanceType": "ml.g6.4xlarge", "instanceCount": 1, "capacityType": "OnDemand"}
STEPS_FUNCTION = "ClusterStepsFunction"
CRASH_ERRORS = ("Runtime.ExitError", "Lambda.Unknown")
"""The two names a crash may reach Step Functions under (Lambda's errorType, Step Functions' documentation):
lifecycles alternate between them."""
OPERATION_WAIT_SECONDS = 900.0


@dataclass(frozen=True)
class StepAction:
    """One step action of a workflow, as the recorded run invoked it."""

    workflow: str
    """``create`` or ``delete``."""
    action: str
    stage: str | None
    calls: int
    """The most AWS calls one invocation of it made in the recorded run."""
    fewest: int = 0
    """The fewest AWS calls one invocation of it made (a point every invocation reaches)."""

    @property
    def name(self) -> str:
        """``<workflow> <action>[<stage>]``."""
        return f"{self.workflow} {self.action}" + (f"[{self.stage}]" if self.stage else "")

    def when(self, tag: str) -> dict[str, Any]:
        """The event fields an invocation of this step for cluster ``tag`` holds."""
        kind = "DELETE_CLUSTER" if self.workflow == "delete" else "CREATE_CLUSTER"
        return {
            "action": self.action,
            "clusterTag": tag,
            "operationType": kind,
            **({"stage": self.stage} if self.stage else {}),
        }


def recorded_steps(sandbox: Sandbox, tag: str) -> list[StepAction]:
    """Every step action the steps function ran for cluster ``tag`` (create and delete), with the most and the fewest
    AWS calls one invocation of it made."""
    function = sandbox.function_name(STEPS_FUNCTION)
    most: dict[tuple[str, str, str | None], int] = {}
    fewest: dict[tuple[str, str, str | None], int] = {}
    for invocation in lambdas.invocations():
        event = invocation["event"]
        if invocation["function"] != function or event.get("clusterTag") != tag or invocation["fault"]:
            continue
        workflow = "delete" if event.get("operationType") == "DELETE_CLUSTER" else "create"
        key = (workflow, str(event["action"]), event.get("stage"))
        most[key] = max(most.get(key, 0), int(invocation["calls"]))
        fewest[key] = min(fewest.get(key, most[key]), int(invocation["calls"]))
    ordered = sorted(most, key=lambda key: (key[0] != "create", key))
    return [StepAction(w, a, s, most[(w, a, s)], fewest[(w, a, s)]) for w, a, s in ordered]


# -- what a clean run leaves ------------------------------------------------------------------------------------
_IDS = re.compile(
    r"\b(?:vpc|subnet|rtb|rtbassoc|igw|nat|eipalloc|eipassoc|vpce|sg|eni|i)-[0-9a-f]{6,}\b"
    r"|arn:aws:[a-z0-9-]+:[a-z0-9-]*:\d{12}:[^\s\"']+"
    r"|\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"
)
_CIDR = re.compile(r"\b10\.\d{1,3}\.(\d{1,3}\.\d{1,3}/\d{1,2})\b")
_VOLATILE = re.compile(r"(At|Time|Date|Token|token)$|^(operationId|currentOperationId|executionArn|ttl|expiration)$")


def normalise(value: Any, tag: str) -> Any:
    """``value`` without what differs between two clean runs of different tags: the tag, AWS ids and ARNs, the
    VPC's /16, timestamps and tokens (keys ending ``At``/``Time``/``Token``), operation ids."""
    if isinstance(value, dict):
        return {k: normalise(v, tag) for k, v in sorted(value.items()) if not _VOLATILE.search(str(k))}
    if isinstance(value, list):
        return [normalise(v, tag) for v in value]
    if isinstance(value, str):
        text = _IDS.sub("<id>", value.replace(tag, "<tag>"))
        return _CIDR.sub(r"10.<vpc>.\1", text)
    return value


WAIT_STATE = {"waits", "wait_rounds", "waits_satisfied"}


def records(store: Store, tag: str, operation_ids: Iterable[str]) -> dict[str, Any]:
    """The cluster record, its stage records and the given operations' records, normalised."""
    cluster = store.get_cluster(tag)
    assert cluster is not None, f"no record of cluster {tag}"
    stages = store.get_stages(tag, cluster.generation)
    ops = [store.get_operation(o) for o in operation_ids]
    out: dict[str, Any] = {
        "cluster": cluster.model_dump(mode="json", by_alias=True, exclude={"hyper_pod", "eks", "nodes", "storage"}),
        # a wait's token and its timed-out rounds depend on timing, not on what the steps did
        "stages": [s.model_dump(mode="json", by_alias=True, exclude=WAIT_STATE) for s in stages],
        "operations": [o.model_dump(mode="json", by_alias=True) for o in ops if o],
    }
    for stage in out["stages"]:
        # what the last check of an add-on saw while it waited for nodes (CREATING or DEGRADED) depends on timing
        addons = [v for k, v in stage["resources"].items() if k.startswith("addon:") and isinstance(v, dict)]
        for addon in addons:
            if addon.get("status") in WAITING_ADDON:
                addon["status"] = "waiting for nodes"
    return dict(normalise(out, tag))


WAITING_ADDON = ("CREATING", "DEGRADED")


@dataclass
class Aws:
    """boto3 clients of the sandbox's AWS."""

    sandbox: Sandbox
    clients: dict[str, Any] = field(default_factory=dict)

    def __call__(self, service: str) -> Any:
        if service not in self.clients:
            self.clients[service] = boto3.client(
                service, endpoint_url=self.sandbox.aws_endpoint_url, region_name=self.sandbox.region
            )
        return self.clients[service]


def _owned(tag: str) -> list[dict[str, Any]]:
    return [{"Name": f"tag:{TAG_KEY}", "Values": [tag]}, {"Name": f"tag:{MANAGED_KEY}", "Values": ["true"]}]


def _tags(resource: dict[str, Any]) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in resource.get("Tags", [])}


def aws_state(aws: Aws, tag: str) -> dict[str, Any]:
    """What AWS holds of cluster ``tag``, by its ownership tag and names, without ids: every network resource (with
    CIDRs relative to the VPC, routes, associations, DNS attributes, security group rules), the EKS cluster, add-ons,
    access entries, pod identity associations, the HyperPod cluster, IAM roles with their inline policies, the
    bucket (tags, public access block, objects) and the lifecycle scripts."""
    ec2, eks, sm, iam, s3 = aws("ec2"), aws("eks"), aws("sagemaker"), aws("iam"), aws("s3")
    state: dict[str, Any] = {}
    vpcs = ec2.describe_vpcs(Filters=_owned(tag))["Vpcs"]
    state["vpcs"] = len(vpcs)
    subnets = {s["SubnetId"]: s for s in ec2.describe_subnets(Filters=_owned(tag))["Subnets"]}
    state["subnets"] = len(subnets)
    if vpcs:
        vpc_id, base = vpcs[0]["VpcId"], ipaddress.ip_network(vpcs[0]["CidrBlock"])

        def rel(cidr: str) -> str:
            net = ipaddress.ip_network(cidr)
            if not net.subnet_of(base):  # type: ignore[arg-type]
                return cidr
            return f"+{int(net.network_address) - int(base.network_address)}/{net.prefixlen}"

        in_vpc = [{"Name": "vpc-id", "Values": [vpc_id]}]
        state["dns"] = [
            ec2.describe_vpc_attribute(VpcId=vpc_id, Attribute=a)[k]["Value"]
            for a, k in (("enableDnsSupport", "EnableDnsSupport"), ("enableDnsHostnames", "EnableDnsHostnames"))
        ]
        state["subnet_layout"] = sorted(
            (_tags(s).get("Name", "").replace(tag, "<tag>"), rel(s["CidrBlock"]), s["AvailabilityZone"])
            for s in subnets.values()
        )
        tables = ec2.describe_route_tables(Filters=in_vpc)["RouteTables"]
        all_subnets = {s["SubnetId"]: s for s in ec2.describe_subnets(Filters=in_vpc)["Subnets"]}
        state["route_tables"] = sorted(
            (
                _tags(t).get("Name", "main").replace(tag, "<tag>"),
                sorted(
                    rel(all_subnets[a["SubnetId"]]["CidrBlock"]) for a in t.get("Associations", []) if "SubnetId" in a
                ),
                sorted(
                    (rel(r["DestinationCidrBlock"]), "nat" if r.get("NatGatewayId") else r.get("GatewayId", "")[:4])
                    for r in t.get("Routes", [])
                    if r.get("DestinationCidrBlock")
                ),
            )
            for t in tables
        )
        state["security_groups"] = sorted(
            (
                re.sub(r"-[0-9a-f]{10}$", "-<id>", g["GroupName"]),  # EKS's cluster security group
                sorted(
                    (r["IpProtocol"], len(r.get("UserIdGroupPairs", [])), len(r.get("IpRanges", [])))
                    for r in g["IpPermissions"]
                ),
            )
            for g in ec2.describe_security_groups(Filters=in_vpc)["SecurityGroups"]
            if g["GroupName"] != "default"
        )
        endpoints = [e for e in ec2.describe_vpc_endpoints(Filters=in_vpc)["VpcEndpoints"] if e["State"] != "deleted"]
        state["endpoints"] = sorted((e["ServiceName"], len(e.get("RouteTableIds", []))) for e in endpoints)
    state["owned_route_tables"] = len(ec2.describe_route_tables(Filters=_owned(tag))["RouteTables"])
    state["owned_security_groups"] = len(ec2.describe_security_groups(Filters=_owned(tag))["SecurityGroups"])
    state["internet_gateways"] = sorted(
        len(g.get("Attachments", [])) for g in ec2.describe_internet_gateways(Filters=_owned(tag))["InternetGateways"]
    )
    state["nat_gateways"] = sorted(
        n["State"]
        for n in ec2.describe_nat_gateways()["NatGateways"]
        if _tags(n).get(TAG_KEY) == tag and n["State"] not in ("deleted", "deleting")
    )
    state["elastic_ips"] = len(ec2.describe_addresses(Filters=_owned(tag))["Addresses"])
    state["owned_endpoints"] = len(
        [e for e in ec2.describe_vpc_endpoints(Filters=_owned(tag))["VpcEndpoints"] if e["State"] != "deleted"]
    )

    name = f"eks-cluster-{tag}"
    state["eks_clusters"] = [c for c in eks.list_clusters()["clusters"] if c == name]
    if state["eks_clusters"]:
        state["eks"] = eks.describe_cluster(name=name)["cluster"]["status"]
        state["addons"] = sorted(
            (a, eks.describe_addon(clusterName=name, addonName=a)["addon"]["status"])
            for a in eks.list_addons(clusterName=name)["addons"]
        )
        entries = eks.list_access_entries(clusterName=name)["accessEntries"]
        state["access_entries"] = sorted(
            (
                e.split("/")[-1],
                sorted(
                    p["policyArn"].split("/")[-1]
                    for p in eks.list_associated_access_policies(clusterName=name, principalArn=e)[
                        "associatedAccessPolicies"
                    ]
                ),
                sorted(eks.describe_access_entry(clusterName=name, principalArn=e)["accessEntry"]["kubernetesGroups"]),
            )
            for e in entries
        )
        state["pod_identity_associations"] = sorted(
            (a["namespace"], a["serviceAccount"])
            for a in eks.list_pod_identity_associations(clusterName=name)["associations"]
        )
    hyperpod = [c for c in sm.list_clusters()["ClusterSummaries"] if c["ClusterName"] == f"hp-cluster-{tag}"]
    state["hyperpod_clusters"] = sorted(c["ClusterStatus"] for c in hyperpod)
    roles = [r for r in iam.list_roles(MaxItems=1000)["Roles"] if r["RoleName"].startswith(f"instantstart-{tag}-")]
    state["iam_roles"] = sorted(
        (r["RoleName"].replace(tag, "<tag>"), sorted(iam.list_role_policies(RoleName=r["RoleName"])["PolicyNames"]))
        for r in roles
    )
    buckets = [b["Name"] for b in s3.list_buckets()["Buckets"] if b["Name"].startswith(f"instantstart-{tag}-")]
    state["buckets"] = []
    for bucket in buckets:
        try:
            tags = {t["Key"]: t["Value"] for t in s3.get_bucket_tagging(Bucket=bucket)["TagSet"]}
        except ClientError:
            tags = {}
        try:
            block = s3.get_public_access_block(Bucket=bucket)["PublicAccessBlockConfiguration"]
        except ClientError:
            block = {}
        keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])]
        state["buckets"].append((tags.get(TAG_KEY) == tag, sorted(block.values()), sorted(keys)))
    lifecycle = os.environ.get("LIFECYCLE_BUCKET")
    if lifecycle:
        listed = s3.list_objects_v2(Bucket=lifecycle, Prefix=f"clusters/{tag}/").get("Contents", [])
        state["lifecycle_objects"] = sorted(o["Key"].replace(tag, "<tag>") for o in listed)
    return dict(normalise(json.loads(json.dumps(state)), tag))


COUNTED = (
    "vpcs",
    "subnets",
    "owned_route_tables",
    "owned_security_groups",
    "internet_gateways",
    "nat_gateways",
    "elastic_ips",
    "owned_endpoints",
    "eks_clusters",
    "addons",
    "access_entries",
    "pod_identity_associations",
    "hyperpod_clusters",
    "iam_roles",
    "buckets",
    "lifecycle_objects",
)
"""The kinds of resource counted for duplicates (beyond a clean run's count)."""


def duplicates(state: dict[str, Any], clean: dict[str, Any]) -> dict[str, int]:
    """How many resources of each kind ``state`` holds beyond the clean run's ``clean`` (only kinds with extras)."""
    out = {}
    for kind in COUNTED:
        have, want = state.get(kind, 0), clean.get(kind, 0)
        n = (have if isinstance(have, int) else len(have)) - (want if isinstance(want, int) else len(want))
        if n > 0:
            out[kind] = n
    return out


def differences(found: Any, clean: Any, path: str = "") -> list[str]:
    """Where ``found`` differs from ``clean`` (dotted paths with both values), at most a few per subtree."""
    if isinstance(found, dict) and isinstance(clean, dict):
        out = []
        for key in sorted(set(found) | set(clean)):
            out += differences(found.get(key), clean.get(key), f"{path}.{key}")
        return out
    if isinstance(found, list) and isinstance(clean, list) and len(found) == len(clean):
        return [d for i, (a, b) in enumerate(zip(found, clean, strict=True)) for d in differences(a, b, f"{path}[{i}]")]
    return (
        []
        if found == clean
        else [f"{path}: {json.dumps(found, default=str)[:300]} (clean: {json.dumps(clean, default=str)[:300]})"]
    )


# -- one lifecycle ----------------------------------------------------------------------------------------------
@dataclass
class Lifecycle:
    """What one create-then-delete of a cluster tag showed."""

    tag: str
    planned: list[tuple[StepAction, int, str]]
    """``(step, after_calls, kind)`` of each fault armed for it."""
    create: str = ""
    delete: str = ""
    ready_records: dict[str, Any] = field(default_factory=dict)
    ready_aws: dict[str, Any] = field(default_factory=dict)
    deleted_records: dict[str, Any] = field(default_factory=dict)
    deleted_aws: dict[str, Any] = field(default_factory=dict)
    error: str = ""
    seconds: float = 0.0


def _wait_operation(api: InstantStartClient, operation_id: str, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = str(api.get_operation(operation_id)["status"])
        if status in ("SUCCEEDED", "FAILED", "CANCELLED"):
            return status
        time.sleep(1.0)
    return "TIMED OUT (test)"


def run_lifecycle(
    sandbox: Sandbox, api: InstantStartClient, store: Store, aws: Aws, tag: str, plan: list[tuple[StepAction, int, str]]
) -> Lifecycle:
    """Arm ``plan`` (crash or timeout of each step after its n-th call) for ``tag``, create the cluster and wait for
    the operation to end, record what it left, delete it and wait, record again."""
    started = time.monotonic()
    out = Lifecycle(tag, plan)
    function = sandbox.function_name(STEPS_FUNCTION)
    for step, n, kind in plan:
        if kind == "timeout":
            sandbox.lambda_faults.timeout(function, after_calls=n, when=step.when(tag))
        else:
            sandbox.lambda_faults.crash(function, after_calls=n, when=step.when(tag), error_type=kind)
    try:
        create = api.create_cluster(tag, ZONE, [GROUP])
        out.create = _wait_operation(api, create["operationId"], OPERATION_WAIT_SECONDS)
        out.ready_records = records(store, tag, [create["operationId"]])
        out.ready_aws = aws_state(aws, tag)
        if out.create != "SUCCEEDED":
            return out
        delete = api.delete_cluster(tag)
        out.delete = _wait_operation(api, delete["operationId"], OPERATION_WAIT_SECONDS)
        out.deleted_records = records(store, tag, [create["operationId"], delete["operationId"]])
        out.deleted_aws = aws_state(aws, tag)
    except Exception as exc:  # noqa: BLE001 - reported with the lifecycle
        out.error = f"{type(exc).__name__}: {exc}"
    finally:
        out.seconds = time.monotonic() - started
    return out


def store_of(sandbox: Sandbox) -> Store:
    """The control plane's table, read directly (a deleted cluster's records are not served by the API)."""
    client = boto3.client("dynamodb", endpoint_url=sandbox.aws_endpoint_url, region_name=sandbox.region)
    return Store(client, os.environ["TABLE_NAME"])


def run_all(
    sandbox: Sandbox,
    api: InstantStartClient,
    store: Store,
    aws: Aws,
    plans: dict[str, list[tuple[StepAction, int, str]]],
    workers: int,
    progress: Callable[[Lifecycle], None] = lambda _: None,
) -> list[Lifecycle]:
    """Run every lifecycle of ``plans`` (tag -> faults), ``workers`` at a time."""
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(run_lifecycle, sandbox, api, store, aws, tag, plan) for tag, plan in plans.items()]
        done = []
        for future in futures:
            done.append(future.result())
            progress(done[-1])
    return done


@dataclass
class Verdict:
    """How one lifecycle compares with the clean run."""

    lifecycle: Lifecycle
    problems: list[str]
    extra: dict[str, int]
    """Resources beyond the clean run's, per kind (create and delete summed)."""

    @property
    def converged(self) -> bool:
        """READY then DELETED, the records and AWS as the clean run left them."""
        return not self.problems


def judge(life: Lifecycle, clean: Lifecycle) -> Verdict:
    """Compare ``life`` with the clean run ``clean`` (records and AWS after the create and after the delete)."""
    problems = []
    if life.error:
        problems.append(life.error)
    if life.create != "SUCCEEDED":
        problems.append(f"create ended {life.create}: {json.dumps(life.ready_records.get('operations'))[:600]}")
    elif life.delete != "SUCCEEDED":
        problems.append(f"delete ended {life.delete}: {json.dumps(life.deleted_records.get('operations'))[:600]}")
    problems += [f"ready records{d}" for d in differences(life.ready_records, clean.ready_records)]
    problems += [f"ready AWS{d}" for d in differences(life.ready_aws, clean.ready_aws)]
    if life.delete:
        problems += [f"deleted records{d}" for d in differences(life.deleted_records, clean.deleted_records)]
        problems += [f"deleted AWS{d}" for d in differences(life.deleted_aws, clean.deleted_aws)]
    extra = duplicates(life.ready_aws, clean.ready_aws)
    for kind, n in duplicates(life.deleted_aws, clean.deleted_aws).items():
        extra[kind] = extra.get(kind, 0) + n
    return Verdict(life, problems, extra)


def fired(sandbox: Sandbox) -> dict[tuple[str, str], int]:
    """``(clusterTag, step name) -> invocations killed`` by the faults added so far."""
    out: dict[tuple[str, str], int] = {}
    for fault in sandbox.lambda_faults.faults():
        for kill in fault.fired:
            event = kill["event"]
            workflow = "delete" if event.get("operationType") == "DELETE_CLUSTER" else "create"
            name = f"{workflow} {event['action']}" + (f"[{event['stage']}]" if event.get("stage") else "")
            out[(str(event["clusterTag"]), name)] = out.get((str(event["clusterTag"]), name), 0) + 1
    return out
