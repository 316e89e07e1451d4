"""The per-cluster object store behind the emulated Kubernetes API.

:class:`KubeCluster` holds every object of one cluster behind one lock and implements the
semantics the HTTP layer (:mod:`instantstart_sandbox.kube.server`) exposes and that simulated controllers and
the AWS emulation use in-process: create/update/patch/apply/delete, resourceVersions and
generations, status subresources, finalizers, namespace and CRD cascades, owner-reference garbage
collection, CRD registration with schema pruning/defaulting/validation, and watch streams.
"""

from __future__ import annotations

import base64
import json
import logging
import queue
import random
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import yaml

from instantstart_sandbox.kube import limits as kube_limits
from instantstart_sandbox.kube import patches, schema
from instantstart_sandbox.kube.defaults import INITIAL_STATUS, PREPARE, Allocator
from instantstart_sandbox.kube.errors import KubeError, already_exists, bad_request, conflict, invalid, not_found
from instantstart_sandbox.kube.patches import clone
from instantstart_sandbox.kube.resources import Registry, ResourceType, ScalePaths
from instantstart_sandbox.kube.selectors import (
    FieldRequirement,
    Requirement,
    label_selector_to_string,
    match_fields,
    match_labels,
    parse_field_selector,
    parse_label_selector,
)

if TYPE_CHECKING:
    from instantstart_sandbox.clock import SimClock

log = logging.getLogger(__name__)

Obj = dict[str, Any]
Listener = Callable[[str, ResourceType, "Obj | None", "Obj | None"], None]
_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"
_CRD_KEY = ("apiextensions.k8s.io", "customresourcedefinitions")
_NS_KEY = ("", "namespaces")
DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


def rfc3339(epoch: float) -> str:
    """``2025-01-02T03:04:05Z`` for epoch seconds."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def _parse_time(value: str) -> float:
    """Epoch seconds of an RFC 3339 time (``Z`` or an offset, optional fraction); 400 when malformed."""
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError as exc:
        raise bad_request(f"invalid time {value!r}: want RFC 3339") from exc


def _get_path(obj: Any, dotted: str) -> Any:
    cur = obj
    for part in dotted.split("."):
        if not isinstance(cur, dict):
            return None
        cur = cur.get(part)
    return cur


def _set_path(obj: Obj, dotted: str, value: Any) -> None:
    parts = dotted.split(".")
    cur = obj
    for part in parts[:-1]:
        cur = cur.setdefault(part, {})
    cur[parts[-1]] = value


@dataclass
class Watcher:
    """One open watch: events for a resource (optionally one namespace, filtered by selectors)."""

    rt: ResourceType
    namespace: str | None
    labels: list[Requirement]
    fields: list[FieldRequirement]
    events: queue.Queue[tuple[str, Obj] | None] = field(default_factory=queue.Queue)
    closed: bool = False

    def _matches(self, obj: Obj | None) -> bool:
        if obj is None:
            return False
        meta = obj.get("metadata") or {}
        if self.namespace is not None and meta.get("namespace") != self.namespace:
            return False
        return match_labels(self.labels, meta.get("labels")) and match_fields(self.fields, obj)

    def offer(self, storage_key: tuple[str, str], etype: str, old: Obj | None, new: Obj | None) -> None:
        """Translate a store event into the watch event this watcher's client should see."""
        if self.closed or storage_key != self.rt.storage_key:
            return
        if etype == "DELETED":
            if self._matches(old):
                self.events.put(("DELETED", old))  # type: ignore[arg-type]
            return
        was, now = self._matches(old), self._matches(new)
        if now:
            self.events.put(("MODIFIED" if was else "ADDED", new))  # type: ignore[arg-type]
        elif was and new is not None:
            self.events.put(("DELETED", new))

    def put_error(self, status: Obj) -> None:
        """Queue an ``ERROR`` event carrying a Status."""
        self.events.put(("ERROR", status))

    def get(self, timeout: float) -> tuple[str, Obj] | None:
        """Next ``(type, object)`` or ``None`` on timeout/close."""
        try:
            return self.events.get(timeout=timeout)
        except queue.Empty:
            return None

    def close(self) -> None:
        """Stop delivering events and wake a waiting reader."""
        self.closed = True
        self.events.put(None)


@dataclass
class _ManagedEntry:
    manager: str
    operation: str
    subresource: str
    api_version: str
    time: str
    fields: set[patches.Path]


class KubeCluster:
    """All objects of one emulated Kubernetes cluster.

    Args:
        name: the cluster name (the EKS cluster name).
        clock: optional simulated clock for timestamps (wall clock when ``None``).
        kubernetes_version: ``major.minor`` reported by ``/version``.

    The in-process methods (:meth:`create`, :meth:`apply`, :meth:`get`, :meth:`list`,
    :meth:`patch_status`, :meth:`delete`) behave like the HTTP verbs and raise :class:`KubeError`.
    """

    def __init__(self, name: str, clock: SimClock | None = None, kubernetes_version: str = "1.32") -> None:
        self.name = name
        self.clock = clock
        self.kubernetes_version = kubernetes_version
        self.registry = Registry()
        self._lock = threading.RLock()
        self._objects: dict[tuple[str, str], dict[tuple[str, str], Obj]] = {}
        self._uids: set[str] = set()
        self._rv = 1000
        self._history: deque[tuple[int, tuple[str, str], str, Obj | None, Obj | None]] = deque(maxlen=4096)
        self._watchers: list[Watcher] = []
        self._listeners: list[Listener] = []
        self._pending: deque[tuple[str, ResourceType, Obj | None, Obj | None]] = deque()
        self._local = threading.local()
        self._alloc = Allocator()
        self._rand = random.Random()
        # (namespace, pod, container) -> [(simulated epoch seconds the line is written, line)]
        self._logs: dict[tuple[str, str, str], list[tuple[float, str]]] = {}
        for ns in DEFAULT_NAMESPACES:
            self.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
            self.create(
                {
                    "apiVersion": "v1",
                    "kind": "ServiceAccount",
                    "metadata": {"name": "default", "namespace": ns},
                }
            )

    # -- helpers ------------------------------------------------------------------------------
    def now(self) -> float:
        """Epoch seconds of the cluster's clock."""
        return self.clock.now() if self.clock else time.time()

    def timestamp(self) -> str:
        """RFC 3339 timestamp of :meth:`now`."""
        return rfc3339(self.now())

    def add_listener(self, fn: Listener) -> None:
        """Call ``fn(event_type, resource_type, old, new)`` after every change (outside the lock).

        Objects passed are snapshots that must not be mutated.
        """
        self._listeners.append(fn)

    def resource_type(self, api_version: str, kind: str) -> ResourceType:
        """The served resource for ``apiVersion``/``kind``; KubeError 404 when not served."""
        rt = self.registry.by_kind(api_version, kind)
        if rt is None:
            raise KubeError(
                404, f'the server could not find the requested resource (no kind "{kind}" in "{api_version}")'
            )
        return rt

    def _typer(self, rt: ResourceType) -> patches.Typer:
        return patches.Typer(rt.schema, builtin=False) if rt.crd else patches.Typer()

    def _bucket(self, rt: ResourceType) -> dict[tuple[str, str], Obj]:
        return self._objects.setdefault(rt.storage_key, {})

    def _raw(self, rt: ResourceType, namespace: str | None, name: str) -> Obj | None:
        return self._objects.get(rt.storage_key, {}).get((namespace or "" if rt.namespaced else "", name))

    @staticmethod
    def _key(rt: ResourceType, obj: Obj) -> tuple[str, str]:
        meta = obj["metadata"]
        return (meta.get("namespace", "") if rt.namespaced else "", meta["name"])

    @staticmethod
    def out(rt: ResourceType, obj: Obj) -> Obj:
        """A deep copy of a stored object as seen through ``rt`` (its apiVersion)."""
        res: Obj = clone(obj)
        res["apiVersion"] = rt.api_version
        res["kind"] = rt.kind
        return res

    def _storage_rt(self, key: tuple[str, str]) -> ResourceType | None:
        types = self.registry.storage_types(key)
        for rt in types:
            if rt.storage:
                return rt
        return types[0] if types else None

    # -- events -------------------------------------------------------------------------------
    def _emit(self, etype: str, rt: ResourceType, old: Obj | None, new: Obj | None) -> None:
        self._history.append((self._rv, rt.storage_key, etype, old, new))
        for w in self._watchers:
            w.offer(rt.storage_key, etype, old, new)
        if self._listeners:
            self._pending.append((etype, rt, old, new))

    def _drain(self) -> None:
        if getattr(self._local, "draining", False):
            return
        self._local.draining = True
        try:
            while True:
                with self._lock:
                    if not self._pending:
                        return
                    event = self._pending.popleft()
                for fn in list(self._listeners):
                    try:
                        fn(*event)
                    except Exception:
                        log.exception("kube listener failed on %s %s", event[0], event[1].kind)
        finally:
            self._local.draining = False

    def _commit(self, rt: ResourceType, old: Obj | None, new: Obj) -> Obj:
        self._rv += 1
        new["metadata"]["resourceVersion"] = str(self._rv)
        self._bucket(rt)[self._key(rt, new)] = new
        self._uids.add(new["metadata"]["uid"])
        self._emit("ADDED" if old is None else "MODIFIED", rt, old, new)
        if rt.storage_key == _CRD_KEY:
            self._register_crd(new)
        return new

    # -- validation / defaulting --------------------------------------------------------------
    def _check_kind(self, rt: ResourceType, obj: Any, require: bool = False) -> Obj:
        if not isinstance(obj, dict):
            raise bad_request("the request body must be a JSON object")
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if require and (not api_version or not kind):
            missing = "Kind" if not kind else "apiVersion"
            raise bad_request(f"Object '{missing}' is missing in '{json.dumps(obj)[:200]}'")
        if kind and kind != rt.kind:
            raise bad_request(f"the kind of the object ({kind}) does not match the resource ({rt.kind})")
        if api_version:
            group = api_version.rpartition("/")[0]
            if group != rt.group:
                raise bad_request(
                    f"the API version in the data ({api_version}) does not match the expected API "
                    f"version ({rt.api_version})"
                )
        if obj.get("metadata") is None:
            obj["metadata"] = {}
        elif not isinstance(obj["metadata"], dict):
            raise bad_request("metadata must be an object")
        return obj

    def _prepare_kind(
        self, rt: ResourceType, obj: Obj, old: Obj | None, warnings: list[str], field_validation: str | None
    ) -> None:
        causes = kube_limits.metadata_causes(obj["metadata"])
        if not rt.group:
            causes += kube_limits.data_causes(rt.kind, obj)
        hook = PREPARE.get(f"{rt.group}/{rt.kind}")
        if hook:
            causes += hook(obj, old, self._alloc)
        if rt.storage_key == _CRD_KEY:
            causes += self._prepare_crd(obj, old)
        if rt.crd and rt.schema:
            pruned: list[str] = []
            schema.prune(obj, rt.schema, "", pruned, root=True)
            if pruned:
                if field_validation == "Strict":
                    raise bad_request("strict decoding error: " + ", ".join(f'unknown field "{p}"' for p in pruned))
                if field_validation != "Ignore":
                    warnings += [f'unknown field "{p}"' for p in pruned]
            schema.apply_defaults(obj, rt.schema)
            causes += schema.validate(obj, rt.schema)
        if causes:
            raise invalid(rt.kind, obj["metadata"].get("name", ""), causes, rt.group)

    def _prepare_crd(self, crd: Obj, old: Obj | None) -> list[dict[str, str]]:
        causes = []
        spec = crd.setdefault("spec", {})
        names = spec.setdefault("names", {})
        group, plural, kind = spec.get("group"), names.get("plural"), names.get("kind")
        for fld, val in (("spec.group", group), ("spec.names.plural", plural), ("spec.names.kind", kind)):
            if not val:
                causes.append({"reason": "FieldValueRequired", "message": "Required value", "field": fld})
        if spec.get("scope") not in ("Namespaced", "Cluster"):
            causes.append(
                {
                    "reason": "FieldValueNotSupported",
                    "message": f'Unsupported value: "{spec.get("scope")}": supported values: "Cluster", "Namespaced"',
                    "field": "spec.scope",
                }
            )
        versions = spec.get("versions") or []
        if not versions:
            causes.append({"reason": "FieldValueRequired", "message": "Required value", "field": "spec.versions"})
        elif sum(1 for v in versions if v.get("storage")) != 1:
            causes.append(
                {
                    "reason": "FieldValueInvalid",
                    "message": "Invalid value: must have exactly one version marked as storage version",
                    "field": "spec.versions",
                }
            )
        name = crd["metadata"].get("name")
        if plural and group and name != f"{plural}.{group}":
            causes.append(
                {
                    "reason": "FieldValueInvalid",
                    "message": f'Invalid value: "{name}": must be spec.names.plural+"."+spec.group',
                    "field": "metadata.name",
                }
            )
        if old is not None:
            old_spec = old.get("spec", {})
            if old_spec.get("group") != group or old_spec.get("names", {}).get("plural") != plural:
                causes.append(
                    {
                        "reason": "FieldValueInvalid",
                        "message": "Invalid value: field is immutable",
                        "field": "spec.names.plural",
                    }
                )
        if causes:
            return causes
        names.setdefault("singular", str(kind).lower())
        names.setdefault("listKind", f"{kind}List")
        spec.setdefault("conversion", {"strategy": "None"})
        now = self.timestamp()
        prev = {c["type"]: c for c in ((old or {}).get("status") or {}).get("conditions") or []}

        def cond(ctype: str, status: str, reason: str, message: str) -> Obj:
            keep = prev.get(ctype)
            ts = keep["lastTransitionTime"] if keep and keep.get("status") == status else now
            return {
                "type": ctype,
                "status": status,
                "reason": reason,
                "message": message,
                "lastTransitionTime": ts,
            }

        conditions = [
            cond("NamesAccepted", "True", "NoConflicts", "no conflicts found"),
            cond("Established", "True", "InitialNamesAccepted", "the initial names have been accepted"),
        ]
        if crd["metadata"].get("deletionTimestamp"):
            conditions.append(
                cond(
                    "Terminating",
                    "True",
                    "InstanceDeletionInProgress",
                    "CustomResource deletion is in progress",
                )
            )
        stored = list(((old or {}).get("status") or {}).get("storedVersions") or [])
        storage = next(v["name"] for v in versions if v.get("storage"))
        if storage not in stored:
            stored.append(storage)
        crd["status"] = {
            "conditions": conditions,
            "acceptedNames": clone(names),
            "storedVersions": stored,
        }
        return []

    def _register_crd(self, crd: Obj) -> None:
        name = crd["metadata"]["name"]
        spec = crd["spec"]
        names = spec["names"]
        self.registry.remove_crd(name)
        for v in spec["versions"]:
            if not v.get("served", True):
                continue
            subs = v.get("subresources") or {}
            sub = set()
            scale = None
            if "status" in subs:
                sub.add("status")
            if "scale" in subs:
                sub.add("scale")
                sc = subs["scale"] or {}
                scale = ScalePaths(
                    str(sc.get("specReplicasPath", ".spec.replicas")).lstrip("."),
                    str(sc.get("statusReplicasPath", ".status.replicas")).lstrip("."),
                    str(sc.get("labelSelectorPath") or "").lstrip(".") or None,
                    True,
                )
            self.registry.add(
                ResourceType(
                    group=spec["group"],
                    version=v["name"],
                    plural=names["plural"],
                    kind=names["kind"],
                    namespaced=spec["scope"] == "Namespaced",
                    short_names=tuple(names.get("shortNames") or ()),
                    subresources=frozenset(sub),
                    categories=tuple(names.get("categories") or ()),
                    scale=scale,
                    crd=name,
                    schema=(v.get("schema") or {}).get("openAPIV3Schema"),
                    storage=bool(v.get("storage")),
                )
            )

    def _check_namespace(self, rt: ResourceType, namespace: str | None) -> None:
        if not rt.namespaced:
            return
        if not namespace:
            raise bad_request("a namespace must be specified for a namespaced resource")
        ns = self._objects.get(_NS_KEY, {}).get(("", namespace))
        if ns is None:
            raise not_found("namespaces", namespace)
        if ns["metadata"].get("deletionTimestamp"):
            raise KubeError(
                403,
                f'{rt.qualified} "" is forbidden: unable to create new content in namespace {namespace} '
                "because it is being terminated",
                "Forbidden",
            )

    # -- managed fields -----------------------------------------------------------------------
    def _entries(self, obj: Obj | None) -> list[_ManagedEntry]:
        out = []
        for e in ((obj or {}).get("metadata") or {}).get("managedFields") or []:
            out.append(
                _ManagedEntry(
                    e.get("manager", ""),
                    e.get("operation", "Update"),
                    e.get("subresource", ""),
                    e.get("apiVersion", ""),
                    e.get("time", ""),
                    patches.from_fields_v1(e.get("fieldsV1") or {}),
                )
            )
        return out

    @staticmethod
    def _store_entries(obj: Obj, entries: list[_ManagedEntry]) -> None:
        rendered = []
        for e in entries:
            if not e.fields:
                continue
            item: Obj = {
                "manager": e.manager,
                "operation": e.operation,
                "apiVersion": e.api_version,
                "time": e.time,
                "fieldsType": "FieldsV1",
                "fieldsV1": patches.to_fields_v1(e.fields),
            }
            if e.subresource:
                item["subresource"] = e.subresource
            rendered.append(item)
        if rendered:
            obj["metadata"]["managedFields"] = rendered
        else:
            obj["metadata"].pop("managedFields", None)

    def _track_update(self, rt: ResourceType, old: Obj | None, new: Obj, manager: str, subresource: str | None) -> None:
        typer = self._typer(rt)
        status_only = subresource == "status"
        entries = self._entries(old)
        new_set = patches.field_set(new, typer, status_only)
        if old is None:
            changed, removed = new_set, set()
        else:
            changed = {p for p in new_set if patches.paths_differ(old, new, p)}
            removed = patches.field_set(old, typer, status_only) - new_set
        if changed or removed:
            for e in entries:
                e.fields -= changed | removed
            mine = next(
                (
                    e
                    for e in entries
                    if e.manager == manager and e.operation == "Update" and e.subresource == (subresource or "")
                ),
                None,
            )
            if mine is None:
                mine = _ManagedEntry(manager, "Update", subresource or "", rt.api_version, "", set())
                entries.append(mine)
            mine.fields |= changed
            mine.time = self.timestamp()
            mine.api_version = rt.api_version
        self._store_entries(new, entries)

    # -- core operations ----------------------------------------------------------------------
    def _generate_name(self, rt: ResourceType, namespace: str | None, prefix: str) -> str:
        for _ in range(100):
            name = prefix + "".join(self._rand.choice(_NAME_CHARS) for _ in range(5))
            if self._raw(rt, namespace, name) is None:
                return name
        raise KubeError(500, "could not generate a unique name")

    def _prepare_create(
        self,
        rt: ResourceType,
        namespace: str | None,
        body: Any,
        warnings: list[str],
        field_validation: str | None,
    ) -> Obj:
        obj = self._check_kind(rt, clone(body))
        meta = obj["metadata"]
        if rt.namespaced:
            body_ns = meta.get("namespace")
            if body_ns and namespace and body_ns != namespace:
                raise bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            namespace = namespace or body_ns
            self._check_namespace(rt, namespace)
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
            namespace = None
        if not meta.get("name"):
            if not meta.get("generateName"):
                raise invalid(
                    rt.kind,
                    "",
                    [
                        {
                            "reason": "FieldValueRequired",
                            "field": "metadata.name",
                            "message": "Required value: name or generateName is required",
                        }
                    ],
                    rt.group,
                )
            meta["name"] = self._generate_name(rt, namespace, meta["generateName"])
        name = meta["name"]
        if causes := kube_limits.name_causes(str(name), rt.name_rule):
            raise invalid(rt.kind, str(name), causes, rt.group)
        if meta.get("resourceVersion"):
            raise bad_request("resourceVersion should not be set on objects to be created")
        if self._raw(rt, namespace, name) is not None:
            raise already_exists(rt.plural, name, rt.group)
        for k in ("uid", "deletionTimestamp", "deletionGracePeriodSeconds", "managedFields", "selfLink"):
            meta.pop(k, None)
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = self.timestamp()
        meta["generation"] = 1
        obj["apiVersion"], obj["kind"] = rt.api_version, rt.kind
        if "status" in rt.subresources and not rt.keep_status_on_create:
            obj.pop("status", None)
            initial = INITIAL_STATUS.get(f"{rt.group}/{rt.kind}")
            if initial is not None:
                obj["status"] = clone(initial)
        self._prepare_kind(rt, obj, None, warnings, field_validation)
        return obj

    @staticmethod
    def _spec_part(rt: ResourceType, obj: Obj) -> Obj:
        skip = {"metadata", "apiVersion", "kind"}
        if "status" in rt.subresources:
            skip.add("status")
        return {k: v for k, v in obj.items() if k not in skip}

    def _prepare_update(
        self,
        rt: ResourceType,
        old: Obj,
        body: Any,
        subresource: str | None,
        warnings: list[str],
        field_validation: str | None,
    ) -> Obj:
        new = self._check_kind(rt, clone(body))
        meta, old_meta = new["metadata"], old["metadata"]
        if meta.get("name") and meta["name"] != old_meta["name"]:
            raise bad_request(
                f"the name of the object ({meta['name']}) does not match the name on the URL ({old_meta['name']})"
            )
        if rt.namespaced and meta.get("namespace") and meta["namespace"] != old_meta.get("namespace"):
            raise bad_request("the namespace of the provided object does not match the namespace sent on the request")
        rv = meta.get("resourceVersion")
        if rv and rv != old_meta.get("resourceVersion"):
            raise conflict(rt.plural, old_meta["name"], rt.group)
        if subresource == "status":
            merged = clone(old)
            if "status" in new:
                merged["status"] = new["status"]
            else:
                merged.pop("status", None)
            new = merged
            meta = new["metadata"]
        else:
            for k in (
                "uid",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "name",
                "namespace",
                "generation",
            ):
                if k in old_meta:
                    meta[k] = old_meta[k]
                else:
                    meta.pop(k, None)
            if "status" in rt.subresources:
                if "status" in old:
                    new["status"] = clone(old["status"])
                else:
                    new.pop("status", None)
            if old_meta.get("deletionTimestamp"):
                added = set(meta.get("finalizers") or []) - set(old_meta.get("finalizers") or [])
                if added:
                    raise invalid(
                        rt.kind,
                        old_meta["name"],
                        [
                            {
                                "reason": "FieldValueForbidden",
                                "field": "metadata.finalizers",
                                "message": "Forbidden: no new finalizers can be added if the object is being deleted",
                            }
                        ],
                        rt.group,
                    )
        new["apiVersion"], new["kind"] = rt.api_version, rt.kind
        self._prepare_kind(rt, new, old, warnings, field_validation)
        if self._spec_part(rt, new) != self._spec_part(rt, old):
            meta["generation"] = int(old_meta.get("generation", 1)) + 1
        return new

    def _same(self, a: Obj, b: Obj) -> bool:
        def strip(o: Obj) -> Obj:
            # a write that changes nothing but timestamps of field ownership is a no-op
            m = {k: v for k, v in o["metadata"].items() if k not in ("resourceVersion", "managedFields")}
            owners = [{k: v for k, v in e.items() if k != "time"} for e in o["metadata"].get("managedFields") or []]
            return {**o, "metadata": m, "apiVersion": None, "owners": owners}

        return strip(a) == strip(b)

    def _update_locked(
        self,
        rt: ResourceType,
        old: Obj,
        body: Any,
        *,
        subresource: str | None,
        manager: str,
        warnings: list[str],
        field_validation: str | None,
        dry_run: bool,
        applied: tuple[set[patches.Path], set[patches.Path]] | None = None,
    ) -> Obj:
        new = self._prepare_update(rt, old, body, subresource, warnings, field_validation)
        if applied is None:
            self._track_update(rt, old, new, manager, subresource)
        else:
            applied_set, taken = applied
            entries = self._entries(old)
            for e in entries:
                if e.manager != manager or e.operation != "Apply":
                    e.fields -= taken
            mine = next(
                (
                    e
                    for e in entries
                    if e.manager == manager and e.operation == "Apply" and e.subresource == (subresource or "")
                ),
                None,
            )
            if mine is None:
                mine = _ManagedEntry(manager, "Apply", subresource or "", rt.api_version, "", set())
                entries.insert(0, mine)
            mine.fields = applied_set
            mine.time, mine.api_version = self.timestamp(), rt.api_version
            self._store_entries(new, entries)
        if self._same(new, old):
            return old
        if dry_run:
            return new
        if new["metadata"].get("deletionTimestamp") and not new["metadata"].get("finalizers"):
            self._commit(rt, old, new)
            self._remove(rt, new)
            return new
        return self._commit(rt, old, new)

    def _remove(self, rt: ResourceType, obj: Obj, orphan: bool = False) -> None:
        key = self._key(rt, obj)
        bucket = self._bucket(rt)
        if bucket.get(key) is not obj and key in bucket:
            obj = bucket[key]
        if bucket.pop(key, None) is None:
            return
        uid = obj["metadata"]["uid"]
        self._uids.discard(uid)
        self._rv += 1
        gone = clone(obj)
        gone["metadata"]["resourceVersion"] = str(self._rv)
        self._emit("DELETED", rt, gone, None)
        if rt.storage_key == ("", "pods"):
            for k in [k for k in self._logs if k[:2] == key]:
                del self._logs[k]
        if not orphan:
            self._collect_garbage(obj)
        ns = obj["metadata"].get("namespace")
        if rt.namespaced and ns:
            nsobj = self._objects.get(_NS_KEY, {}).get(("", ns))
            if nsobj is not None and nsobj["metadata"].get("deletionTimestamp"):
                self._maybe_finalize_namespace(nsobj)
        if rt.crd:
            crd = self._objects.get(_CRD_KEY, {}).get(("", rt.crd))
            if crd is not None and crd["metadata"].get("deletionTimestamp"):
                self._maybe_finalize_crd(crd)

    def _collect_garbage(self, owner: Obj) -> None:
        uid = owner["metadata"]["uid"]
        owner_ns = owner["metadata"].get("namespace")
        for key, bucket in list(self._objects.items()):
            rt = self._storage_rt(key)
            if rt is None:
                continue
            for obj in list(bucket.values()):
                refs = obj["metadata"].get("ownerReferences") or []
                if not refs or not any(r.get("uid") == uid for r in refs):
                    continue
                if owner_ns and obj["metadata"].get("namespace") != owner_ns:
                    continue
                if all(r.get("uid") not in self._uids for r in refs):
                    self._delete_locked(rt, obj)

    def _delete_locked(self, rt: ResourceType, obj: Obj, orphan: bool = False) -> tuple[Obj, bool]:
        """Delete ``obj``; returns ``(object, still_exists)``."""
        if rt.storage_key == _NS_KEY:
            return self._delete_namespace(obj)
        if rt.storage_key == _CRD_KEY:
            return self._delete_crd(obj)
        meta = obj["metadata"]
        if meta.get("finalizers"):
            if meta.get("deletionTimestamp"):
                return obj, True
            new = clone(obj)
            new["metadata"]["deletionTimestamp"] = self.timestamp()
            new["metadata"]["deletionGracePeriodSeconds"] = 0
            return self._commit(rt, obj, new), True
        self._remove(rt, obj, orphan)
        return obj, False

    def _mark_terminating(self, rt: ResourceType, obj: Obj, mutate: Callable[[Obj], None]) -> Obj:
        if obj["metadata"].get("deletionTimestamp"):
            return obj
        new = clone(obj)
        new["metadata"]["deletionTimestamp"] = self.timestamp()
        new["metadata"]["deletionGracePeriodSeconds"] = 0
        mutate(new)
        return self._commit(rt, obj, new)

    def _delete_namespace(self, nsobj: Obj) -> tuple[Obj, bool]:
        ns_rt = self.registry.by_path("", "v1", "namespaces")
        assert ns_rt is not None
        name = nsobj["metadata"]["name"]

        def terminating(o: Obj) -> None:
            o.setdefault("status", {})["phase"] = "Terminating"

        nsobj = self._mark_terminating(ns_rt, nsobj, terminating)
        for key, bucket in list(self._objects.items()):
            rt = self._storage_rt(key)
            if rt is None or not rt.namespaced:
                continue
            for obj in [o for o in bucket.values() if o["metadata"].get("namespace") == name]:
                if self._raw(rt, name, obj["metadata"]["name"]) is obj:
                    self._delete_locked(rt, obj)
        return self._maybe_finalize_namespace(nsobj)

    def _maybe_finalize_namespace(self, nsobj: Obj) -> tuple[Obj, bool]:
        name = nsobj["metadata"]["name"]
        for key, bucket in self._objects.items():
            rt = self._storage_rt(key)
            if rt is not None and rt.namespaced and any(k[0] == name for k in bucket):
                return nsobj, True
        ns_rt = self.registry.by_path("", "v1", "namespaces")
        assert ns_rt is not None
        current = self._objects.get(_NS_KEY, {}).get(("", name))
        if current is not None:
            self._remove(ns_rt, current)
        return nsobj, False

    def _delete_crd(self, crd: Obj) -> tuple[Obj, bool]:
        crd_rt = self.registry.by_path(*_CRD_KEY[:1], "v1", _CRD_KEY[1])
        assert crd_rt is not None

        def terminating(o: Obj) -> None:
            o.setdefault("status", {}).setdefault("conditions", []).append(
                {
                    "type": "Terminating",
                    "status": "True",
                    "reason": "InstanceDeletionInProgress",
                    "message": "CustomResource deletion is in progress",
                    "lastTransitionTime": self.timestamp(),
                }
            )

        crd = self._mark_terminating(crd_rt, crd, terminating)
        key = (crd["spec"]["group"], crd["spec"]["names"]["plural"])
        rt = self._storage_rt(key)
        if rt is not None:
            for obj in list(self._objects.get(key, {}).values()):
                self._delete_locked(rt, obj)
        return self._maybe_finalize_crd(crd)

    def _maybe_finalize_crd(self, crd: Obj) -> tuple[Obj, bool]:
        key = (crd["spec"]["group"], crd["spec"]["names"]["plural"])
        if self._objects.get(key):
            return crd, True
        crd_rt = self.registry.by_path(_CRD_KEY[0], "v1", _CRD_KEY[1])
        assert crd_rt is not None
        current = self._objects.get(_CRD_KEY, {}).get(("", crd["metadata"]["name"]))
        if current is not None:
            self._remove(crd_rt, current)
        self.registry.remove_crd(crd["metadata"]["name"])
        self._objects.pop(key, None)
        return crd, False

    # -- request-level API (used by the HTTP server) ------------------------------------------
    def create_object(
        self,
        rt: ResourceType,
        namespace: str | None,
        body: Any,
        *,
        field_manager: str = "sandbox",
        dry_run: bool = False,
        field_validation: str | None = None,
    ) -> tuple[Obj, list[str]]:
        """POST: create ``body``; returns ``(object, warnings)``. 409 when it exists, 404 when the
        namespace is missing, 422 when invalid."""
        warnings: list[str] = []
        if rt.review:
            return self._review(rt, body), warnings
        with self._lock:
            obj = self._prepare_create(rt, namespace, body, warnings, field_validation)
            self._track_update(rt, None, obj, field_manager, None)
            if not dry_run:
                self._commit(rt, None, obj)
            result = self.out(rt, obj)
        self._drain()
        return result, warnings

    def _review(self, rt: ResourceType, body: Any) -> Obj:
        review = self._check_kind(rt, clone(body))
        review["apiVersion"], review["kind"] = rt.api_version, rt.kind
        review["metadata"].setdefault("creationTimestamp", None)
        if rt.kind == "SelfSubjectAccessReview":
            review["status"] = {"allowed": True, "reason": "sandbox: authenticated users are cluster admins"}
        elif rt.kind == "SelfSubjectRulesReview":
            review["status"] = {
                "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
                "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
                "incomplete": False,
            }
        else:
            review["status"] = {
                "userInfo": {"username": "kubernetes-admin", "groups": ["system:masters", "system:authenticated"]}
            }
        return review

    def get_object(self, rt: ResourceType, namespace: str | None, name: str) -> Obj:
        """GET one object; KubeError 404 when absent."""
        with self._lock:
            obj = self._raw(rt, namespace, name)
            if obj is None:
                raise not_found(rt.plural, name, rt.group)
            return self.out(rt, obj)

    def list_objects(
        self,
        rt: ResourceType,
        namespace: str | None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        continue_token: str | None = None,
    ) -> Obj:
        """LIST: a ``{Kind}List`` with ``metadata.resourceVersion`` (and ``continue`` when paged)."""
        labels = parse_label_selector(label_selector)
        fields = parse_field_selector(field_selector, rt.field_selectors, rt.kind)
        start: list[str] | None = None
        if continue_token:
            try:
                start = json.loads(base64.urlsafe_b64decode(continue_token.encode()))["start"]
            except (ValueError, KeyError, TypeError) as exc:
                raise bad_request("continue key is not valid") from exc
        with self._lock:
            rv = str(self._rv)
            items = [
                o
                for k, o in sorted(self._objects.get(rt.storage_key, {}).items())
                if (namespace is None or not rt.namespaced or k[0] == namespace)
                and (start is None or list(k) > start)
                and match_labels(labels, o["metadata"].get("labels"))
                and match_fields(fields, o)
            ]
            meta: Obj = {"resourceVersion": rv}
            if limit and limit > 0 and len(items) > limit:
                last = items[limit - 1]["metadata"]
                token = {
                    "start": [last.get("namespace", "") if rt.namespaced else "", last["name"]],
                    "rv": rv,
                }
                meta["continue"] = base64.urlsafe_b64encode(json.dumps(token).encode()).decode()
                meta["remainingItemCount"] = len(items) - limit
                items = items[:limit]
            return {
                "apiVersion": rt.api_version,
                "kind": rt.list_kind,
                "metadata": meta,
                "items": [self.out(rt, o) for o in items],
            }

    def replace_object(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        body: Any,
        *,
        subresource: str | None = None,
        field_manager: str = "sandbox",
        dry_run: bool = False,
        field_validation: str | None = None,
    ) -> tuple[Obj, list[str]]:
        """PUT (main resource or ``status``): 409 on a stale resourceVersion, 404 when absent."""
        warnings: list[str] = []
        with self._lock:
            old = self._raw(rt, namespace, name)
            if old is None:
                raise not_found(rt.plural, name, rt.group)
            obj = self._update_locked(
                rt,
                old,
                body,
                subresource=subresource,
                manager=field_manager,
                warnings=warnings,
                field_validation=field_validation,
                dry_run=dry_run,
            )
            result = self.out(rt, obj)
        self._drain()
        return result, warnings

    def patch_object(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        patch_type: str,
        body: bytes | str | Any,
        *,
        subresource: str | None = None,
        field_manager: str | None = "sandbox",
        force: bool = False,
        dry_run: bool = False,
        field_validation: str | None = None,
    ) -> tuple[Obj, list[str], bool]:
        """PATCH with ``patch_type`` json | merge | strategic | apply; returns ``(obj, warnings, created)``.

        Raises:
            KubeError: 415 strategic merge on a custom resource, 400 apply without field manager or
                with a malformed body, 404 when absent (apply creates instead), 409 apply conflicts.
        """
        if patch_type == "apply":
            return self._apply(rt, namespace, name, body, subresource, field_manager, force, dry_run, field_validation)
        parsed = self._parse_body(body, yaml_ok=False)
        if patch_type == "strategic" and rt.crd:
            raise KubeError(
                415,
                "the body of the request was in an unknown format - accepted media types include: "
                "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
                "UnsupportedMediaType",
            )
        warnings: list[str] = []
        with self._lock:
            old = self._raw(rt, namespace, name)
            if old is None:
                raise not_found(rt.plural, name, rt.group)
            current = self.out(rt, old)
            if patch_type == "json":
                new = patches.json_patch(current, parsed)
            elif patch_type == "merge":
                if not isinstance(parsed, dict):
                    raise bad_request("merge patch must be a JSON object")
                new = patches.merge_patch(current, parsed)
            elif patch_type == "strategic":
                if not isinstance(parsed, dict):
                    raise bad_request("strategic merge patch must be a JSON object")
                new = patches.strategic_merge(current, parsed, patches.Typer())
            else:
                raise KubeError(415, f"unsupported patch type {patch_type!r}", "UnsupportedMediaType")
            obj = self._update_locked(
                rt,
                old,
                new,
                subresource=subresource,
                manager=field_manager or "sandbox",
                warnings=warnings,
                field_validation=field_validation,
                dry_run=dry_run,
            )
            result = self.out(rt, obj)
        self._drain()
        return result, warnings, False

    @staticmethod
    def _parse_body(body: bytes | str | Any, yaml_ok: bool) -> Any:
        if isinstance(body, bytes | str):
            text = body.decode() if isinstance(body, bytes) else body
            try:
                return json.loads(text)
            except ValueError as exc:
                if not yaml_ok:
                    raise bad_request(f"couldn't decode the patch body as JSON: {exc}") from exc
                try:
                    return yaml.safe_load(text)
                except yaml.YAMLError as yexc:
                    raise bad_request(f"error decoding YAML: {yexc}") from yexc
        return body

    def _apply(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        body: Any,
        subresource: str | None,
        manager: str | None,
        force: bool,
        dry_run: bool,
        field_validation: str | None,
    ) -> tuple[Obj, list[str], bool]:
        if not manager:
            raise bad_request("PATCH, application/apply-patch+yaml requires fieldManager to be set")
        applied = self._check_kind(rt, clone(self._parse_body(body, yaml_ok=True)), require=True)
        meta = applied["metadata"]
        if meta.get("name") and meta["name"] != name:
            raise bad_request(f"the name of the object ({meta['name']}) does not match the name on the URL ({name})")
        meta["name"] = name
        if rt.namespaced:
            if meta.get("namespace") and namespace and meta["namespace"] != namespace:
                raise bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            namespace = namespace or meta.get("namespace")
            meta["namespace"] = namespace
        typer = self._typer(rt)
        applied_set = patches.field_set(applied, typer, status_only=subresource == "status")
        warnings: list[str] = []
        with self._lock:
            old = self._raw(rt, namespace, name)
            if old is None:
                if subresource:
                    raise not_found(rt.plural, name, rt.group)
                obj = self._prepare_create(rt, namespace, applied, warnings, field_validation)
                entry = _ManagedEntry(manager, "Apply", "", rt.api_version, self.timestamp(), applied_set)
                self._store_entries(obj, [entry])
                if not dry_run:
                    self._commit(rt, None, obj)
                result, created = self.out(rt, obj), True
            else:
                entries = self._entries(old)
                conflicts: list[tuple[str, patches.Path]] = []
                others: set[patches.Path] = set()
                for e in entries:
                    if e.subresource != (subresource or ""):
                        continue
                    if e.manager == manager and e.operation == "Apply":
                        continue
                    others |= e.fields
                    if e.manager == manager:
                        continue
                    for p in applied_set & e.fields:
                        if patches.paths_differ(old, applied, p):
                            conflicts.append((e.manager, p))
                if conflicts and not force:
                    causes = [
                        {
                            "reason": "FieldManagerConflict",
                            "message": f'conflict with "{m}"',
                            "field": patches.describe_path(p),
                        }
                        for m, p in sorted(conflicts)
                    ]
                    lines = "\n".join(f"- {c['message']}: {c['field']}" for c in causes)
                    err = conflict(
                        rt.plural,
                        name,
                        rt.group,
                        f"Apply failed with {len(conflicts)} conflict{'s' if len(conflicts) > 1 else ''}: " + lines,
                    )
                    assert err.details is not None
                    err.details["causes"] = causes
                    raise err
                current = self.out(rt, old)
                merged = patches.apply_merge(current, applied, typer)
                prev = next(
                    (
                        e.fields
                        for e in entries
                        if e.manager == manager and e.operation == "Apply" and e.subresource == (subresource or "")
                    ),
                    set(),
                )
                for p in sorted(prev - applied_set - others, key=len, reverse=True):
                    patches.remove_path(merged, p)
                merged["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
                taken = {p for _, p in conflicts}
                obj = self._update_locked(
                    rt,
                    old,
                    merged,
                    subresource=subresource,
                    manager=manager,
                    warnings=warnings,
                    field_validation=field_validation,
                    dry_run=dry_run,
                    applied=(applied_set, taken),
                )
                result, created = self.out(rt, obj), False
        self._drain()
        return result, warnings, created

    def delete_object(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        *,
        dry_run: bool = False,
        propagation_policy: str | None = None,
        preconditions: Obj | None = None,
    ) -> tuple[Obj, bool]:
        """DELETE; returns ``(last object state, still_exists)`` (finalizers keep it, terminating)."""
        with self._lock:
            obj = self._raw(rt, namespace, name)
            if obj is None:
                raise not_found(rt.plural, name, rt.group)
            pre = preconditions or {}
            if pre.get("uid") and pre["uid"] != obj["metadata"]["uid"]:
                raise conflict(
                    rt.plural,
                    name,
                    rt.group,
                    f"Precondition failed: UID in precondition: "
                    f"{pre['uid']}, UID in object meta: {obj['metadata']['uid']}",
                )
            if pre.get("resourceVersion") and pre["resourceVersion"] != obj["metadata"]["resourceVersion"]:
                raise conflict(rt.plural, name, rt.group)
            if dry_run:
                return self.out(rt, obj), False
            last, exists = self._delete_locked(rt, obj, orphan=propagation_policy == "Orphan")
            result = self.out(rt, last)
        self._drain()
        return result, exists

    def delete_collection(
        self,
        rt: ResourceType,
        namespace: str | None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> int:
        """DELETE on a collection; returns how many objects were deleted or marked terminating."""
        items = self.list_objects(rt, namespace, label_selector, field_selector)["items"]
        count = 0
        with self._lock:
            for item in items:
                obj = self._raw(rt, item["metadata"].get("namespace"), item["metadata"]["name"])
                if obj is not None:
                    self._delete_locked(rt, obj)
                    count += 1
        self._drain()
        return count

    def watch(
        self,
        rt: ResourceType,
        namespace: str | None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        resource_version: str | None = None,
    ) -> Watcher:
        """Open a watch. Without a resourceVersion (or "0") current objects arrive as ADDED first;
        with one, changes after it are replayed (an ERROR 410 Expired when it is too old)."""
        w = Watcher(
            rt,
            namespace if rt.namespaced else None,
            parse_label_selector(label_selector),
            parse_field_selector(field_selector, rt.field_selectors, rt.kind),
        )
        with self._lock:
            if not resource_version or resource_version == "0":
                for _, obj in sorted(self._objects.get(rt.storage_key, {}).items()):
                    w.offer(rt.storage_key, "ADDED", None, obj)
            else:
                try:
                    since = int(resource_version)
                except ValueError as exc:
                    raise bad_request(f"invalid resource version {resource_version!r}") from exc
                oldest = self._history[0][0] if self._history else self._rv
                if self._history and len(self._history) == self._history.maxlen and since < oldest - 1:
                    w.put_error(KubeError(410, f"too old resource version: {since} ({oldest})", "Expired").status())
                else:
                    for rv, key, etype, old, new in self._history:
                        if rv > since:
                            w.offer(key, etype, old, new)
            self._watchers.append(w)
        return w

    def stop_watch(self, watcher: Watcher) -> None:
        """Close and forget ``watcher``."""
        watcher.close()
        with self._lock:
            if watcher in self._watchers:
                self._watchers.remove(watcher)

    def close(self) -> None:
        """Close every open watch (the server is stopping or the cluster is removed)."""
        with self._lock:
            watchers, self._watchers = self._watchers, []
        for w in watchers:
            w.close()

    # -- scale and logs -----------------------------------------------------------------------
    def get_scale(self, rt: ResourceType, namespace: str | None, name: str) -> Obj:
        """The ``autoscaling/v1 Scale`` view of a scalable object."""
        if rt.scale is None:
            raise not_found(f"{rt.plural}/scale", name, rt.group)
        obj = self.get_object(rt, namespace, name)
        sel = _get_path(obj, rt.scale.selector) if rt.scale.selector else None
        meta = obj["metadata"]
        scale: Obj = {
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": {
                k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp") if k in meta
            },
            "spec": {"replicas": int(_get_path(obj, rt.scale.spec_replicas) or 0)},
            "status": {"replicas": int(_get_path(obj, rt.scale.status_replicas) or 0)},
        }
        if sel:
            scale["status"]["selector"] = sel if rt.scale.selector_is_string else label_selector_to_string(sel)
        return scale

    def update_scale(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        scale: Obj,
        *,
        field_manager: str = "sandbox",
        dry_run: bool = False,
    ) -> Obj:
        """Set the replica count from a Scale body (PUT or an already-patched Scale)."""
        if rt.scale is None:
            raise not_found(f"{rt.plural}/scale", name, rt.group)
        replicas = (scale.get("spec") or {}).get("replicas")
        if not isinstance(replicas, int) or replicas < 0:
            raise invalid(
                "Scale",
                name,
                [
                    {
                        "reason": "FieldValueInvalid",
                        "field": "spec.replicas",
                        "message": f"Invalid value: {replicas!r}: must be greater than or equal to 0",
                    }
                ],
                "autoscaling",
            )
        with self._lock:
            old = self._raw(rt, namespace, name)
            if old is None:
                raise not_found(rt.plural, name, rt.group)
            rv = (scale.get("metadata") or {}).get("resourceVersion")
            if rv and rv != old["metadata"]["resourceVersion"]:
                raise conflict(rt.plural, name, rt.group)
            new = self.out(rt, old)
            _set_path(new, rt.scale.spec_replicas, replicas)
            self._update_locked(
                rt,
                old,
                new,
                subresource=None,
                manager=field_manager,
                warnings=[],
                field_validation=None,
                dry_run=dry_run,
            )
        self._drain()
        return self.get_scale(rt, namespace, name)

    def set_pod_log(self, namespace: str, pod: str, container: str, lines: list[str]) -> None:
        """Replace the log lines ``container`` of ``pod`` returns (simulated workloads), written now."""
        now = self.now()
        with self._lock:
            self._logs[(namespace, pod, container)] = [(now, line) for line in lines]

    def set_pod_log_entries(self, namespace: str, pod: str, container: str, entries: list[tuple[float, str]]) -> None:
        """Replace a container's log with timed lines: ``(simulated epoch seconds, line)`` each.

        A line is served only once the cluster clock reaches its time, so a simulated workload can
        write its whole future log up front (``sinceSeconds`` and ``timestamps`` use these times).
        """
        with self._lock:
            self._logs[(namespace, pod, container)] = sorted(entries, key=lambda e: e[0])

    def truncate_pod_log(self, namespace: str, pod: str, container: str, after: float) -> None:
        """Drop a container's lines timed after ``after`` (a workload that stopped early)."""
        with self._lock:
            key = (namespace, pod, container)
            if key in self._logs:
                self._logs[key] = [e for e in self._logs[key] if e[0] <= after]

    def append_pod_log(self, namespace: str, pod: str, container: str, line: str) -> None:
        """Append one line to a container's log, written now."""
        now = self.now()
        with self._lock:
            self._logs.setdefault((namespace, pod, container), []).append((now, line))

    def pod_log(
        self,
        namespace: str,
        name: str,
        container: str | None = None,
        *,
        tail_lines: int | None = None,
        timestamps: bool = False,
        limit_bytes: int | None = None,
        since_seconds: int | None = None,
        since_time: str | None = None,
    ) -> str:
        """The log text of one container (``pods/log``), as ``read_namespaced_pod_log`` reads it.

        ``since_seconds`` / ``since_time`` (RFC 3339) keep the lines written at or after that time,
        then ``tail_lines`` keeps the last lines, then ``limit_bytes`` cuts the text; ``timestamps``
        prefixes each line with its RFC 3339 write time.

        Raises:
            KubeError: 404 unknown pod; 400 when a multi-container pod gets no container name, the
                container is unknown, or it has not started.
        """
        now = self.now()
        with self._lock:
            pod = self._raw(self.resource_type("v1", "Pod"), namespace, name)
            if pod is None:
                raise not_found("pods", name)
            spec, status = pod.get("spec") or {}, pod.get("status") or {}
            names = [c["name"] for c in spec.get("containers") or []]
            init_names = [c["name"] for c in spec.get("initContainers") or []]
            if container is None:
                if len(names) != 1:
                    raise bad_request(
                        f"a container name must be specified for pod {name}, choose one of: [{' '.join(names)}]"
                    )
                container = names[0]
            elif container not in names and container not in init_names:
                raise bad_request(f"container {container} is not valid for pod {name}")
            if status.get("phase") in (None, "Pending"):
                raise bad_request(f'container "{container}" in pod "{name}" is waiting to start: ContainerCreating')
            stored = self._logs.get((namespace, name, container))
            if stored is None:
                started = _parse_time(status.get("startTime") or pod["metadata"]["creationTimestamp"])
                image = next(
                    (
                        c.get("image", "")
                        for c in [*spec.get("containers", []), *spec.get("initContainers", [])]
                        if c["name"] == container
                    ),
                    "",
                )
                stored = [
                    (started, f"[sandbox] pulled image {image}"),
                    (
                        started,
                        f"[sandbox] started container {container} in pod {namespace}/{name} on node "
                        f"{spec.get('nodeName', '')}",
                    ),
                    (started, f"[sandbox] container {container} is running"),
                ]
                if status.get("phase") in ("Succeeded", "Failed"):
                    cs: Obj = next((c for c in status.get("containerStatuses") or [] if c.get("name") == container), {})
                    code = ((cs.get("state") or {}).get("terminated") or {}).get("exitCode", 0)
                    stored.append((started, f"[sandbox] container {container} exited with code {code}"))
            entries = [e for e in stored if e[0] <= now]
        if since_seconds is not None:
            entries = [e for e in entries if e[0] >= now - since_seconds]
        if since_time:
            since = _parse_time(since_time)
            entries = [e for e in entries if e[0] >= since]
        lines = [f"{rfc3339(t)} {line}" if timestamps else line for t, line in entries]
        if tail_lines is not None and tail_lines >= 0:
            lines = lines[len(lines) - tail_lines :] if tail_lines else []
        text = "".join(line + "\n" for line in lines)
        if limit_bytes is not None and limit_bytes >= 0:
            text = text.encode()[:limit_bytes].decode(errors="ignore")
        return text

    # -- in-process convenience API -----------------------------------------------------------
    def _rt_of(self, obj: Obj) -> ResourceType:
        if not isinstance(obj, dict) or not obj.get("apiVersion") or not obj.get("kind"):
            raise bad_request("object must have apiVersion and kind")
        return self.resource_type(obj["apiVersion"], obj["kind"])

    @staticmethod
    def _ns_of(rt: ResourceType, obj: Obj) -> str | None:
        if not rt.namespaced:
            return None
        return str((obj.get("metadata") or {}).get("namespace") or "default")

    def create(self, obj: Obj, field_manager: str = "sandbox") -> Obj:
        """Create ``obj`` like a POST (namespace defaults to ``default``); KubeError 409 when it exists."""
        rt = self._rt_of(obj)
        return self.create_object(rt, self._ns_of(rt, obj), obj, field_manager=field_manager)[0]

    def apply(self, obj: Obj, field_manager: str = "sandbox") -> Obj:
        """Create-or-merge ``obj`` with server-side apply (forcing ownership of the fields it sets)."""
        rt = self._rt_of(obj)
        name = (obj.get("metadata") or {}).get("name")
        if not name:
            raise bad_request("apply needs metadata.name")
        return self.patch_object(rt, self._ns_of(rt, obj), name, "apply", obj, field_manager=field_manager, force=True)[
            0
        ]

    def replace(self, obj: Obj, field_manager: str = "sandbox") -> Obj:
        """Replace ``obj`` like a PUT (409 when ``metadata.resourceVersion`` is stale)."""
        rt = self._rt_of(obj)
        meta = obj.get("metadata") or {}
        return self.replace_object(rt, self._ns_of(rt, obj), meta.get("name", ""), obj, field_manager=field_manager)[0]

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> Obj | None:
        """The object, or ``None`` when it does not exist."""
        rt = self.resource_type(api_version, kind)
        try:
            return self.get_object(rt, namespace or ("default" if rt.namespaced else None), name)
        except KubeError as exc:
            if exc.code == 404:
                return None
            raise

    def peek(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> Obj | None:
        """Like :meth:`get` but returns the stored object itself: a read-only snapshot that must not be
        mutated (stored objects are replaced, never changed in place). For simulated controllers."""
        rt = self.resource_type(api_version, kind)
        with self._lock:
            return self._raw(rt, namespace or ("default" if rt.namespaced else None), name)

    def peek_list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> list[Obj]:
        """Like :meth:`list` but returns read-only stored snapshots (no copies)."""
        rt = self.resource_type(api_version, kind)
        labels = parse_label_selector(label_selector)
        fields = parse_field_selector(field_selector, rt.field_selectors, rt.kind)
        with self._lock:
            return [
                o
                for k, o in sorted(self._objects.get(rt.storage_key, {}).items())
                if (namespace is None or not rt.namespaced or k[0] == namespace)
                and match_labels(labels, o["metadata"].get("labels"))
                and match_fields(fields, o)
            ]

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> list[Obj]:
        """Objects of a kind (all namespaces when ``namespace`` is None), filtered by selectors."""
        rt = self.resource_type(api_version, kind)
        items: list[Obj] = self.list_objects(rt, namespace, label_selector, field_selector)["items"]
        return items

    def patch(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str | None,
        patch: Any,
        patch_type: str = "merge",
        field_manager: str = "sandbox",
        subresource: str | None = None,
    ) -> Obj:
        """Patch an object (``patch_type`` json | merge | strategic); KubeError 404 when absent."""
        rt = self.resource_type(api_version, kind)
        ns = namespace or ("default" if rt.namespaced else None)
        return self.patch_object(rt, ns, name, patch_type, patch, subresource=subresource, field_manager=field_manager)[
            0
        ]

    def patch_status(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str | None,
        status: Obj,
        field_manager: str = "sandbox",
    ) -> Obj:
        """Merge ``status`` into the object's status (through the status subresource when it has one)."""
        rt = self.resource_type(api_version, kind)
        sub = "status" if "status" in rt.subresources else None
        return self.patch(api_version, kind, name, namespace, {"status": status}, "merge", field_manager, sub)

    def delete(
        self, api_version: str, kind: str, name: str, namespace: str | None = None, missing_ok: bool = False
    ) -> None:
        """Delete an object (finalizers keep it terminating); KubeError 404 unless ``missing_ok``."""
        rt = self.resource_type(api_version, kind)
        try:
            self.delete_object(rt, namespace or ("default" if rt.namespaced else None), name)
        except KubeError as exc:
            if not (missing_ok and exc.code == 404):
                raise
