"""No lost or duplicated operations under load: concurrent creates, deletes and stage retries against the sandbox API.

The driver sends bursts of SigV4-signed requests at once (one thread each, released together by a barrier) over
``tags`` cluster tags, in five phases:

A. per tag five creates (``Idempotency-Key`` k1 twice with the same body, k1 with another body, two other keys)
   and a DELETE racing them; then the cancel tags' creates are cancelled;
B. late replays, one at a time: k1 with its body again (the same answer) and with the other body (409
   ``IdempotencyKeyReused``);
C. retries racing retries (k1 twice, two other keys, k1 on another stage) and a DELETE racing them on the
   cancelled tags; on the delete tags three DELETEs (k1 twice, another key) racing two creates; two retries of a
   READY cluster on the steady tags;
D. the delete tags created again (k1 twice, another key): generation 2;
E. every live tag deleted (k1 twice, another key);
F. the winning creates of A and D sent again (keys the API still keeps: 24 simulated hours): the original answers,
   no cluster comes back.

After C, D and E every accepted operation must have ended and every tag be READY, FAILED with a reason or
DELETED, and AWS must match the records (:func:`check_tags`). At the end :func:`check_operations` matches the
2xx answers, the operation records and the Step Functions executions one to one. Every finding is a
``mismatch``; the figures are in :class:`Report`.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import boto3

from instantstart_client.api import ApiError, InstantStartClient

GROUP = {"instanceGroupName": "accel", "instanceType": "ml.g6.4xlarge", "instanceCount": 1, "capacityType": "OnDemand"}
OTHER_GROUP = {**GROUP, "instanceGroupName": "accel-b"}
ZONE = "us-west-2c"
OWNER_TAG = "instantstart:cluster-tag"
OPERATION_ENDED = ("SUCCEEDED", "FAILED", "CANCELLED")
ROLES = ("cancel", "delete", "steady", "delete")
"""Tag ``i`` plays ``ROLES[i % 4]``: cancelled then retried, deleted and created again, or left READY."""

REFUSALS = {
    "create": {(409, "ClusterAlreadyExists"), (409, "IdempotencyKeyReused")},
    "delete": {(404, "ClusterNotFound"), (409, "OperationInProgress"), (409, "Conflict")},
    "retry": {
        (409, "StageNotFailed"),
        (409, "OperationInProgress"),
        (409, "Conflict"),
        (409, "IdempotencyKeyReused"),
    },
    "cancel": set(),
}
"""The documented refusals of each kind of request when it loses a race (anything else is a mismatch). Only creates
and retries reuse a key with another body or route here; a delete's key is only ever repeated as is."""

KEY_KEPT_SECONDS = 24 * 3600
"""How long the API keeps an ``Idempotency-Key``'s answer (docs/api.md: 24 hours), in simulated seconds: on a busy
machine the sandbox's clock (480x) can pass it before phase F, after which a create with the key starts anew."""
KEY_SLACK_SECONDS = 3600
"""Phase F judges only keys younger than :data:`KEY_KEPT_SECONDS` less this (the send and the API's clock apart)."""

IN_PROGRESS_ATTEMPTS = 100
"""Attempts of one request while its key's first request is in progress (409 ``IdempotencyKeyInProgress``)."""


@dataclass
class Answer:
    """What the API answered one request (after the ``IdempotencyKeyInProgress`` answers, which are retried)."""

    phase: str
    kind: str
    tag: str
    key: str
    route: str
    variant: str
    status: int
    code: str | None = None
    operation_id: str | None = None
    in_progress: int = 0
    sent_at: float = 0.0
    """When it was sent, in the sandbox's simulated epoch seconds (wall epoch seconds without a clock)."""

    @property
    def accepted(self) -> bool:
        return 200 <= self.status < 300


@dataclass
class Report:
    """The figures of a run and what did not hold (``mismatches``)."""

    tags: int = 0
    answers: list[Answer] = field(default_factory=list)
    operations: int = 0
    executions: int = 0
    end_states: dict[str, Counter[str]] = field(default_factory=dict)
    aws_checked: int = 0
    late_replays: int = 0
    """Phase F's replays sent and judged (keys younger than :data:`KEY_KEPT_SECONDS` less its slack)."""
    keys_expired: int = 0
    """Phase F's keys older than the API keeps them (not sent: such a key starts anew, as documented)."""
    wall_seconds: float = 0.0
    mismatches: list[str] = field(default_factory=list)

    def statuses(self) -> Counter[str]:
        """Answers by ``kind status code`` (``create 202``, ``create 409 ClusterAlreadyExists``, ...)."""
        return Counter(f"{a.kind} {a.status}" + (f" {a.code}" if a.code else "") for a in self.answers)

    def replays(self) -> int:
        """2xx answers that repeated an operation already answered (same key, same request)."""
        accepted = [a.operation_id for a in self.answers if a.accepted and a.kind != "cancel"]
        return len(accepted) - len(set(accepted))

    def lines(self) -> list[str]:
        """The figures, one per line."""
        requests = [a for a in self.answers if a.kind != "cancel"]
        kinds = ", ".join(f"{n} {k}" for k, n in sorted(Counter(a.kind for a in requests).items()))
        out = [
            f"load: {self.tags} tags, {len(requests)} requests ({kinds}) and "
            f"{sum(1 for a in self.answers if a.kind == 'cancel')} cancels, "
            f"{sum(a.in_progress for a in self.answers)} answers 409 IdempotencyKeyInProgress retried, "
            f"{self.wall_seconds:.0f} s wall",
            "answers: " + ", ".join(f"{k}: {v}" for k, v in sorted(self.statuses().items())),
            f"accepted operations: {self.operations}, Step Functions executions: {self.executions}, "
            f"replays: {self.replays()}",
        ]
        for phase, states in self.end_states.items():
            out.append(f"end states after {phase}: " + ", ".join(f"{k}: {v}" for k, v in sorted(states.items())))
        out.append(
            f"AWS checks (EKS, HyperPod, VPC, subnets, security groups, NAT gateways, bucket): {self.aws_checked}"
        )
        out.append(f"late replays after the deletes: {self.late_replays} judged, {self.keys_expired} keys expired")
        out.append(f"mismatches: {len(self.mismatches)}")
        out.extend(f"  - {m}" for m in self.mismatches)
        return out


class LoadRun:
    """One run of the phases against a running sandbox (``api``: a client of its HTTP API).

    Args:
        api: the sandbox API client; its requests are sent here with one attempt each (no client retries).
        endpoint_url: the emulated AWS endpoint (for the checks against AWS).
        region: the emulated Region.
        tags: how many cluster tags; ``prefix`` names them (``<prefix>0`` ...).
        timeout: wall seconds each wait for operations to end may take.
        clock: the sandbox's simulated clock (``Sandbox.clock``): paused while the cancels are aimed at running
            creates, so no create can end between the driver seeing it run and its cancel (None: not paused).
    """

    def __init__(
        self,
        api: InstantStartClient,
        endpoint_url: str,
        region: str,
        *,
        tags: int,
        prefix: str,
        timeout: float,
        clock: Any | None = None,
    ) -> None:
        self.api = InstantStartClient(api.api_url, region=api.region, max_attempts=1, timeout=60)
        self.api._http.event_hooks["response"].extend(api._http.event_hooks["response"])
        self.tags = [f"{prefix}{i}" for i in range(tags)]
        self.roles = {tag: ROLES[i % len(ROLES)] for i, tag in enumerate(self.tags)}
        self.timeout = timeout
        self.clock = clock
        self.report = Report(tags=tags)
        self._lock = threading.Lock()
        self._keys: dict[tuple[str, str], str] = {}
        self._aws = {
            name: boto3.client(name, endpoint_url=endpoint_url, region_name=region)
            for name in ("ec2", "eks", "sagemaker", "s3", "stepfunctions")
        }

    # -- requests ---------------------------------------------------------------------------------------------
    def key(self, tag: str, name: str) -> str:
        """The Idempotency-Key ``name`` (k1, ...) of ``tag`` in this run (a random UUID, made once)."""
        with self._lock:
            return self._keys.setdefault((tag, name), str(uuid.uuid4()))

    def send(self, phase: str, kind: str, tag: str, key: str, *, variant: str = "", stage: str = "") -> Answer:
        """One request, retried while the API answers 409 ``IdempotencyKeyInProgress`` (as the client does)."""
        if kind == "create":
            method, path = "POST", "/clusters"
            body: Any = {
                "clusterTag": tag,
                "availabilityZone": ZONE,
                "instanceGroups": [OTHER_GROUP if variant == "other" else GROUP],
            }
        elif kind == "delete":
            method, path, body = "DELETE", f"/clusters/{tag}", None
        elif kind == "retry":
            method, path, body = "POST", f"/clusters/{tag}/stages/{stage}/retry", None
        else:
            method, path, body = "POST", f"/operations/{variant}/cancel", None
        answer = Answer(phase, kind, tag, key, f"{method} {path}", variant or stage, 0, sent_at=self.now())
        for _ in range(IN_PROGRESS_ATTEMPTS):
            try:
                out = self.api.request(method, path, body=body, headers={"Idempotency-Key": key})
            except ApiError as exc:
                if exc.code == "IdempotencyKeyInProgress":
                    answer.in_progress += 1
                    time.sleep(0.1)
                    continue
                answer.status, answer.code = exc.status, exc.code
                break
            answer.status, answer.operation_id = 202, str(out["operationId"])
            break
        with self._lock:
            self.report.answers.append(answer)
        return answer

    def now(self) -> float:
        """The sandbox's simulated epoch seconds (wall epoch seconds without a clock)."""
        return float(self.clock.now()) if self.clock is not None else time.time()

    def burst(self, phase: str, requests: Iterable[dict[str, Any]]) -> list[Answer]:
        """Send ``requests`` (keyword arguments of :meth:`send`) at once: one thread each, released together."""
        todo = list(requests)
        if not todo:
            return []
        gate = threading.Barrier(len(todo))

        def one(kwargs: dict[str, Any]) -> Answer:
            gate.wait()
            return self.send(phase, **kwargs)

        with ThreadPoolExecutor(max_workers=len(todo)) as pool:
            return list(pool.map(one, todo))

    def mismatch(self, text: str) -> None:
        with self._lock:
            self.report.mismatches.append(text)

    # -- reads ------------------------------------------------------------------------------------------------
    def cluster(self, tag: str) -> dict[str, Any] | None:
        """``GET /clusters/{tag}``, None when 404."""
        try:
            return dict(self.api.get_cluster(tag))
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise

    def operations(self, tag: str) -> list[dict[str, Any]]:
        """Every operation of ``tag`` (all generations), oldest first."""
        out: list[dict[str, Any]] = []
        token = None
        while True:
            page = self.api.list_cluster_operations(tag, max_results=100, next_token=token)
            out.extend(page["operations"])
            token = page.get("nextToken")
            if not token:
                return out[::-1]

    def wait_ended(self, operation_ids: Iterable[str]) -> None:
        """Poll until every operation ended (a mismatch for each still running after ``timeout``)."""
        waiting = set(operation_ids)
        deadline = time.monotonic() + self.timeout
        while waiting and time.monotonic() < deadline:
            waiting = {o for o in waiting if self.api.get_operation(o)["status"] not in OPERATION_ENDED}
            if waiting:
                time.sleep(0.5)
        for op in sorted(waiting):
            self.mismatch(f"operation {op} did not end within {self.timeout:.0f} s")

    def wait_until(self, tag: str, ok: Callable[[dict[str, Any]], bool], timeout: float = 60) -> None:
        """Poll ``GET /clusters/{tag}`` until ``ok`` holds (or ``timeout`` s pass)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            cluster = self.cluster(tag)
            if cluster is None or ok(cluster):
                return
            time.sleep(0.2)

    def winners(self, answers: Iterable[Answer], kinds: tuple[str, ...] = ("create", "delete", "retry")) -> set[str]:
        """The operations accepted among ``answers``."""
        return {a.operation_id for a in answers if a.accepted and a.kind in kinds and a.operation_id}

    def expect_one(self, what: str, tag: str, answers: list[Answer], kinds: tuple[str, ...]) -> str | None:
        """Exactly one operation accepted for ``tag`` among ``answers`` (else a mismatch); its id."""
        won = self.winners([a for a in answers if a.tag == tag], kinds)
        if len(won) != 1:
            self.mismatch(f"{what} on {tag}: {len(won)} operations accepted ({sorted(won)}), expected exactly one")
        return next(iter(won), None)

    # -- phases -----------------------------------------------------------------------------------------------
    def run(self) -> Report:
        """Every phase and check; the report."""
        started = time.monotonic()
        try:
            self._phases()
        finally:
            self.report.wall_seconds = time.monotonic() - started
        return self.report

    def _phases(self) -> None:
        tags, roles = self.tags, self.roles
        a = self.burst(
            "A",
            [
                req
                for tag in tags
                for req in (
                    {"kind": "create", "tag": tag, "key": self.key(tag, "c1"), "variant": "same"},
                    {"kind": "create", "tag": tag, "key": self.key(tag, "c1"), "variant": "same"},
                    {"kind": "create", "tag": tag, "key": self.key(tag, "c1"), "variant": "other"},
                    {"kind": "create", "tag": tag, "key": self.key(tag, "c2"), "variant": "same"},
                    {"kind": "create", "tag": tag, "key": self.key(tag, "c3"), "variant": "same"},
                    {"kind": "delete", "tag": tag, "key": self.key(tag, "d0")},
                )
            ],
        )
        created = {tag: self.expect_one("create burst", tag, a, ("create", "delete")) for tag in tags}
        to_cancel = {tag: op for tag, op in created.items() if op and roles[tag] == "cancel"}
        # The simulated clock stands still from here to the cancels: a create's stages start and run their AWS calls,
        # but none of its waits (EKS ACTIVE, ...) passes, so no create ends between being seen running and its cancel,
        # however slowly this driver's polls come back on a busy machine.
        with self.clock.paused() if self.clock is not None else contextlib.nullcontext():
            for tag in to_cancel:  # cancelled once a stage runs: that stage is then CANCELLED, and retryable
                self.wait_until(
                    tag, lambda c: any(s["status"] == "RUNNING" for s in c["stages"]) or c["status"] != "CREATING"
                )
            cancels = [
                {"kind": "cancel", "tag": tag, "key": str(uuid.uuid4()), "variant": op}
                for tag, op in to_cancel.items()
                for _ in range(2)
            ]
            answers = self.burst("A", cancels)
        for answer in answers:
            if not answer.accepted and answer.code != "OperationAlreadyEnded":
                self.mismatch(f"cancel of {answer.variant} answered {answer.status} {answer.code}")
        self._late_replays(a)
        self.wait_ended(op for op in created.values() if op)

        c = self.burst("C", [req for tag in tags for req in self._phase_c(tag)])
        c_won = {
            tag: self.expect_one(f"{roles[tag]} race", tag, c, ("delete", "retry"))
            for tag in tags
            if roles[tag] != "steady"
        }
        for tag in tags:
            if roles[tag] == "steady" and self.winners(x for x in c if x.tag == tag):
                self.mismatch(f"a retry of READY cluster {tag} was accepted")
            if roles[tag] == "delete" and self.winners(x for x in c if x.tag == tag and x.kind == "create"):
                self.mismatch(f"a create of {tag} was accepted while it was being deleted")
        self.wait_ended(op for op in c_won.values() if op)
        self.check_tags("C")

        d_tags = [t for t in tags if roles[t] == "delete" and self.cluster(t) is None]
        d = self.burst(
            "D",
            [
                req
                for tag in d_tags
                for req in (
                    {"kind": "create", "tag": tag, "key": self.key(tag, "c4"), "variant": "same"},
                    {"kind": "create", "tag": tag, "key": self.key(tag, "c4"), "variant": "same"},
                    {"kind": "create", "tag": tag, "key": self.key(tag, "c5"), "variant": "same"},
                )
            ],
        )
        self.wait_ended(op for tag in d_tags if (op := self.expect_one("create again", tag, d, ("create",))))
        self.check_tags("D")

        live = [t for t in tags if self.cluster(t) is not None]
        e = self.burst(
            "E",
            [
                req
                for tag in live
                for req in (
                    {"kind": "delete", "tag": tag, "key": self.key(tag, "d9")},
                    {"kind": "delete", "tag": tag, "key": self.key(tag, "d9")},
                    {"kind": "delete", "tag": tag, "key": str(uuid.uuid4())},
                )
            ],
        )
        self.wait_ended(op for tag in live if (op := self.expect_one("final delete", tag, e, ("delete",))))
        self.check_tags("E")
        self._replays_after_delete(a, d)
        self.check_answers()
        self.check_operations()

    def _replays_after_delete(self, *bursts: list[Answer]) -> None:
        """F: the winning creates of ``bursts`` (A's, and D's of the tags created again) sent again once every tag is
        DELETED: a client retrying that late gets the original answer (the key's stored result), and no cluster comes
        back. A key older than the API keeps it (:data:`KEY_KEPT_SECONDS` of simulated time: a busy machine's clock
        passes it) is not sent and is counted as expired; D's keys are an hour old at most, so at least one late replay
        is always judged."""
        winners = {x.key: x for burst in bursts for x in burst if x.accepted and x.kind == "create"}
        now = self.now()
        fresh = [x for x in winners.values() if now - x.sent_at < KEY_KEPT_SECONDS - KEY_SLACK_SECONDS]
        self.report.keys_expired = len(winners) - len(fresh)
        self.report.late_replays = len(fresh)
        if not fresh:
            self.mismatch(f"no late replay could be judged: all {len(winners)} winning create keys had expired")
        for x in self.burst("F", [{"kind": "create", "tag": w.tag, "key": w.key, "variant": w.variant} for w in fresh]):
            if x.operation_id != winners[x.key].operation_id:
                self.mismatch(f"a late replay of {x.tag}'s create answered {x.status} {x.code} {x.operation_id}")
        for tag in sorted({x.tag for x in fresh}):
            if self.cluster(tag) is not None:
                self.mismatch(f"a late replay of {tag}'s create brought the cluster back")

    def _late_replays(self, burst: list[Answer]) -> None:
        """k1 again, one request at a time: the same body replays k1's answer, another body is refused; and the
        request that won the burst once more: its answer again."""
        for tag in self.tags:
            winner = next((x for x in burst if x.tag == tag and x.accepted), None)
            if winner is not None:
                again = self.send("B", winner.kind, tag, winner.key, variant=winner.variant)
                if again.operation_id != winner.operation_id:
                    self.mismatch(f"replay of {tag}'s winning {winner.kind} answered {again.status} {again.code}")
            first = [x for x in burst if x.tag == tag and x.kind == "create" and x.key == self.key(tag, "c1")]
            won = {x.operation_id for x in first if x.accepted}
            same = self.send("B", "create", tag, self.key(tag, "c1"), variant="same")
            other = self.send("B", "create", tag, self.key(tag, "c1"), variant="other")
            accepted_variant = {x.variant for x in first if x.accepted}
            if accepted_variant == {"same"}:
                if not same.accepted or {same.operation_id} != won:
                    self.mismatch(
                        f"replay of {tag}'s create answered {same.status} {same.code} {same.operation_id}, "
                        f"first answer {won}"
                    )
                if (other.status, other.code) != (409, "IdempotencyKeyReused"):
                    self.mismatch(f"{tag}'s key with another body answered {other.status} {other.code}")
            elif accepted_variant == {"other"}:
                if (same.status, same.code) != (409, "IdempotencyKeyReused") or {other.operation_id} != won:
                    self.mismatch(f"{tag}'s key reused: {same.status} {same.code}, {other.status} {other.code}")
            elif same.accepted or other.accepted:
                self.mismatch(f"{tag}: a late request with k1 started a new create ({same.code}, {other.code})")

    def _phase_c(self, tag: str) -> list[dict[str, Any]]:
        role = self.roles[tag]
        if role == "delete":
            return [
                {"kind": "delete", "tag": tag, "key": self.key(tag, "d1")},
                {"kind": "delete", "tag": tag, "key": self.key(tag, "d1")},
                {"kind": "delete", "tag": tag, "key": self.key(tag, "d2")},
                {"kind": "create", "tag": tag, "key": str(uuid.uuid4()), "variant": "same"},
                {"kind": "create", "tag": tag, "key": str(uuid.uuid4()), "variant": "same"},
            ]
        cluster = self.cluster(tag)
        stages = [s["name"] for s in (cluster or {}).get("stages", []) if s["status"] in ("FAILED", "CANCELLED")]
        if role == "steady":
            return [{"kind": "retry", "tag": tag, "key": str(uuid.uuid4()), "stage": "verify"} for _ in range(2)]
        if not stages:
            self.mismatch(f"cancelled {tag} has no FAILED or CANCELLED stage: {cluster and cluster['status']}")
            return []
        stage = stages[0]
        other = "verify" if stage != "verify" else "storage"
        return [
            {"kind": "retry", "tag": tag, "key": self.key(tag, "r1"), "stage": stage},
            {"kind": "retry", "tag": tag, "key": self.key(tag, "r1"), "stage": stage},
            {"kind": "retry", "tag": tag, "key": self.key(tag, "r1"), "stage": other},
            {"kind": "retry", "tag": tag, "key": self.key(tag, "r2"), "stage": stage},
            {"kind": "retry", "tag": tag, "key": self.key(tag, "r3"), "stage": stage},
            {"kind": "delete", "tag": tag, "key": self.key(tag, "d1")},
        ]

    # -- checks -----------------------------------------------------------------------------------------------
    def check_answers(self) -> None:
        """Every answer a 2xx or a documented refusal; one operation per (route, key), never shared between keys."""
        by_key: dict[tuple[str, str], set[str]] = defaultdict(set)
        keys_of: dict[str, set[tuple[str, str]]] = defaultdict(set)
        for x in self.report.answers:
            if x.kind == "cancel":
                continue
            if not x.accepted and (x.status, x.code) not in REFUSALS[x.kind]:
                self.mismatch(f"{x.phase} {x.kind} {x.tag} answered {x.status} {x.code}")
            if x.accepted and x.operation_id:
                by_key[(x.tag, x.key)].add(x.operation_id)
                keys_of[x.operation_id].add((x.tag, x.key))
        for (tag, key), ops in by_key.items():
            if len(ops) > 1:
                self.mismatch(f"Idempotency-Key {key} of {tag} answered {len(ops)} operations: {sorted(ops)}")
        for op, owners in keys_of.items():
            if len(owners) > 1:
                self.mismatch(f"operation {op} answered to {len(owners)} keys")

    def check_operations(self) -> None:
        """Accepted operations, operation records and executions one to one, and one operation at a time per tag."""
        accepted: dict[str, Answer] = {}
        for x in self.report.answers:
            if x.accepted and x.kind != "cancel" and x.operation_id:
                accepted.setdefault(x.operation_id, x)
        self.report.operations = len(accepted)
        kinds = {"CREATE_CLUSTER": "create", "DELETE_CLUSTER": "delete", "RETRY_STAGE": "retry"}
        recorded: dict[str, dict[str, Any]] = {}
        for tag in self.tags:
            ops = self.operations(tag)
            previous_end = ""
            for op in ops:
                recorded[op["operationId"]] = op
                if op["operationId"] not in accepted:
                    self.mismatch(
                        f"operation {op['operationId']} ({op['type']} {op['status']}) of {tag} answers no "
                        "accepted request"
                    )
                if op["createdAt"] < previous_end:
                    self.mismatch(f"{tag}: operation {op['operationId']} began before the previous one ended")
                previous_end = op.get("endedAt") or "9999"
        for op_id, x in accepted.items():
            op = recorded.get(op_id)
            if op is None:
                self.mismatch(f"accepted {x.kind} {op_id} of {x.tag} has no operation record")
            elif op["clusterTag"] != x.tag or kinds.get(op["type"]) != x.kind:
                self.mismatch(f"operation {op_id} is {op['type']} of {op['clusterTag']}, answered {x.kind} of {x.tag}")
        deadline = time.monotonic() + 30  # an execution ends a moment after its last step ended the operation
        while True:
            executions = self._executions()
            ours = {name: e for name, e in executions.items() if e["tag"] in self.tags}
            if time.monotonic() > deadline or all(e["status"] != "RUNNING" for e in ours.values()):
                break
            time.sleep(0.5)
        self.report.executions = sum(len(e["arns"]) for e in ours.values())
        for name, e in ours.items():
            if name not in accepted:
                self.mismatch(f"execution {name} of {e['tag']} answers no accepted request")
            if len(e["arns"]) != 1:
                self.mismatch(f"{len(e['arns'])} executions named {name}")
            if e["status"] == "RUNNING":
                self.mismatch(f"execution {name} still RUNNING after its operation ended")
            op = recorded.get(name)
            if op and (op["status"] == "CANCELLED") != (e["status"] == "ABORTED"):
                self.mismatch(f"operation {name} {op['status']} but its execution {e['status']}")
        for op_id in accepted:
            if op_id not in executions:
                self.mismatch(f"accepted operation {op_id} has no Step Functions execution")

    def _executions(self) -> dict[str, dict[str, Any]]:
        """Every execution of every state machine by name: its ARNs, tag (from its input) and last status."""
        sfn = self._aws["stepfunctions"]
        out: dict[str, dict[str, Any]] = {}
        for machine in sfn.list_state_machines()["stateMachines"]:
            for page in sfn.get_paginator("list_executions").paginate(stateMachineArn=machine["stateMachineArn"]):
                for ex in page["executions"]:
                    described = sfn.describe_execution(executionArn=ex["executionArn"])
                    tag = json.loads(described.get("input") or "{}").get("clusterTag", "")
                    entry = out.setdefault(ex["name"], {"arns": [], "tag": tag, "status": ex["status"]})
                    entry["arns"].append(ex["executionArn"])
        return out

    def check_tags(self, phase: str) -> None:
        """Each tag READY, FAILED with a reason, or DELETED, with no operation running, and AWS agreeing."""
        states: Counter[str] = Counter()
        for tag in self.tags:
            cluster = self.cluster(tag)
            state = cluster["status"] if cluster else "DELETED"
            states[state] += 1
            if state not in ("READY", "FAILED", "DELETED"):
                self.mismatch(f"after {phase}: {tag} is {state}")
            if cluster and state == "FAILED" and not any(s.get("error") for s in cluster["stages"]):
                current = self.api.get_operation(cluster["currentOperationId"])
                if not current.get("error"):
                    self.mismatch(f"after {phase}: {tag} FAILED with no stage or operation error")
            self._check_aws(phase, tag, cluster)
        self.report.end_states[phase] = states

    def _check_aws(self, phase: str, tag: str, cluster: dict[str, Any] | None) -> None:
        ec2, eks, sm, s3 = (self._aws[n] for n in ("ec2", "eks", "sagemaker", "s3"))
        owned = [{"Name": f"tag:{OWNER_TAG}", "Values": [tag]}]
        vpcs = [v["VpcId"] for v in ec2.describe_vpcs(Filters=owned)["Vpcs"]]
        subnets = ec2.describe_subnets(Filters=owned)["Subnets"]
        groups = ec2.describe_security_groups(Filters=owned)["SecurityGroups"]
        nats = [  # filtered here: moto's DescribeNatGateways ignores tag filters
            n
            for n in ec2.describe_nat_gateways()["NatGateways"]
            if n["State"] != "deleted" and {"Key": OWNER_TAG, "Value": tag} in n.get("Tags", [])
        ]
        eks_names = eks.list_clusters()["clusters"]
        hp = [c for c in sm.list_clusters()["ClusterSummaries"] if c["ClusterName"] == f"hp-cluster-{tag}"]
        buckets = [b["Name"] for b in s3.list_buckets()["Buckets"] if b["Name"].startswith(f"instantstart-{tag}-")]
        self.report.aws_checked += 1
        where = f"after {phase}: {tag}"
        if cluster is None:
            leftovers = {
                "VPCs": vpcs,
                "subnets": [s["SubnetId"] for s in subnets],
                "security groups": [g["GroupId"] for g in groups],
                "NAT gateways": [n["NatGatewayId"] for n in nats],
                "EKS": [n for n in eks_names if n == f"eks-cluster-{tag}"],
                "HyperPod": hp,
                "buckets": buckets,
            }
            for what, found in leftovers.items():
                if found:
                    self.mismatch(f"{where} is DELETED but {what} remain: {found}")
            return
        network = next(s for s in cluster["stages"] if s["name"] == "network")
        recorded_vpc = (network.get("resources") or {}).get("vpcId")
        if len(vpcs) > 1:
            self.mismatch(f"{where} owns {len(vpcs)} VPCs: {vpcs}")
        if recorded_vpc and vpcs != [recorded_vpc]:
            self.mismatch(f"{where} recorded VPC {recorded_vpc}, AWS has {vpcs}")
        if len(hp) > 1:
            self.mismatch(f"{where} has {len(hp)} HyperPod clusters")
        if cluster["status"] == "READY":
            if f"eks-cluster-{tag}" not in eks_names:
                self.mismatch(f"{where} is READY but EKS cluster eks-cluster-{tag} does not exist")
            if [c["ClusterStatus"] for c in hp] != ["InService"]:
                self.mismatch(f"{where} is READY but HyperPod says {[c['ClusterStatus'] for c in hp]}")
            if len(buckets) != 1:
                self.mismatch(f"{where} is READY with {len(buckets)} buckets")


def api_function_name() -> str:
    """The deployed name of the HTTP API's function (handler ``api_app.lambda_handler``)."""
    from instantstart_sandbox import lambdas

    return next(name for name, code in lambdas.REGISTRY.items() if code.handler.startswith("api_app."))


def run_load(
    api: InstantStartClient,
    sandbox: Any,
    *,
    tags: int,
    prefix: str,
    timeout: float = 300,
    environments: int = 8,
    every_function: bool = False,
    say: Callable[[str], None] = print,
) -> Report:
    """Run the phases and print the figures.

    The API function runs up to ``environments`` invocations at once (Lambda scaling out: the concurrent
    requests really race on the records), with ``every_function`` the workflow steps and event functions too;
    afterwards every function is back to the sandbox's setting.
    """
    from instantstart_sandbox import lambdas

    lambdas.set_environments(environments, None if every_function else api_function_name())
    try:
        run = LoadRun(
            api,
            sandbox.aws_endpoint_url,
            sandbox.region,
            tags=tags,
            prefix=prefix,
            timeout=timeout,
            clock=getattr(sandbox, "clock", None),
        )
        report = run.run()
    finally:
        lambdas.set_environments(getattr(sandbox, "lambda_environments", 1))
    for line in report.lines():
        say(line)
    return report
