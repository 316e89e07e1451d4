"""Patch semantics of kube-apiserver: JSON patch, merge patch, strategic merge patch, server-side apply.

Server-side apply tracks ownership as sets of field paths in the ``FieldsV1`` vocabulary
(``f:<field>``, ``k:<json keys>`` for an item of an associative list, ``v:<json>`` for a set
member, ``.`` for the item itself) and stores them in ``metadata.managedFields``.
"""

from __future__ import annotations

import json
from typing import Any

from instantstart_sandbox.kube.errors import KubeError, bad_request


def clone(obj: Any) -> Any:
    """A deep copy of JSON-shaped data (dicts, lists, scalars), faster than ``copy.deepcopy``."""
    if type(obj) is dict:
        return {k: clone(v) for k, v in obj.items()}
    if type(obj) is list:
        return [clone(v) for v in obj]
    return obj


# --------------------------------------------------------------------------------------------
# List semantics: associative (map) lists, sets and atomic lists


_BUILTIN_MAP_KEYS: dict[str, tuple[str, ...]] = {
    "containers": ("name",),
    "initContainers": ("name",),
    "ephemeralContainers": ("name",),
    "volumes": ("name",),
    "env": ("name",),
    "volumeMounts": ("mountPath",),
    "volumeDevices": ("devicePath",),
    "imagePullSecrets": ("name",),
    "conditions": ("type",),
    "ownerReferences": ("uid",),
    "hostAliases": ("ip",),
    "topologySpreadConstraints": ("topologyKey", "whenUnsatisfiable"),
    "addresses": ("type",),
    "webhooks": ("name",),
    "resourceClaims": ("name",),
    "schedulingGates": ("name",),
}
_BUILTIN_SETS = frozenset({"finalizers"})


class Typer:
    """How lists below a node merge. Built-ins use field-name rules; custom resources their schema."""

    def __init__(self, schema: dict[str, Any] | None = None, builtin: bool = True) -> None:
        self.schema = schema
        self.builtin = builtin

    def child(self, key: str) -> Typer:
        """The typer of the map value at ``key``."""
        if self.builtin:
            return self
        node = self.schema or {}
        props = node.get("properties") or {}
        if key in props:
            return Typer(props[key], builtin=False)
        addl = node.get("additionalProperties")
        return Typer(addl if isinstance(addl, dict) else None, builtin=False)

    def item(self) -> Typer:
        """The typer of a list item."""
        if self.builtin:
            return self
        items = (self.schema or {}).get("items")
        return Typer(items if isinstance(items, dict) else None, builtin=False)

    def list_info(self, field: str, items: list[Any]) -> tuple[str, tuple[str, ...]]:
        """``("map", keys)``, ``("set", ())`` or ``("atomic", ())`` for the list held by this typer."""
        if not self.builtin:
            node = self.schema or {}
            lt = node.get("x-kubernetes-list-type")
            if lt == "map":
                return ("map", tuple(node.get("x-kubernetes-list-map-keys") or ()))
            if lt == "set":
                return ("set", ())
            return ("atomic", ())
        if field in _BUILTIN_SETS:
            return ("set", ())
        if field == "ports":
            dicts = [i for i in items if isinstance(i, dict)]
            if dicts and all("containerPort" in i for i in dicts):
                return ("map", ("containerPort",))
            if dicts and all("port" in i for i in dicts):
                return ("map", ("port",))
            return ("atomic", ())
        keys = _BUILTIN_MAP_KEYS.get(field)
        if keys and all(isinstance(i, dict) for i in items):
            return ("map", keys)
        return ("atomic", ())


def _item_key(item: Any, keys: tuple[str, ...]) -> tuple[Any, ...]:
    if not isinstance(item, dict):
        return (json.dumps(item, sort_keys=True),)
    return tuple(json.dumps(item.get(k), sort_keys=True) for k in keys)


# --------------------------------------------------------------------------------------------
# JSON patch (RFC 6902)


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise KubeError(422, f"invalid JSON pointer {path!r}", "Invalid")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _resolve(doc: Any, tokens: list[str], path: str) -> Any:
    cur = doc
    for tok in tokens:
        if isinstance(cur, dict) and tok in cur:
            cur = cur[tok]
        elif isinstance(cur, list) and tok.isdigit() and int(tok) < len(cur):
            cur = cur[int(tok)]
        else:
            raise KubeError(422, f"jsonpatch: path {path!r} not found", "Invalid")
    return cur


def _jp_add(doc: Any, tokens: list[str], value: Any, path: str) -> Any:
    if not tokens:
        return value
    parent = _resolve(doc, tokens[:-1], path)
    last = tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        if last == "-":
            parent.append(value)
        elif last.isdigit() and int(last) <= len(parent):
            parent.insert(int(last), value)
        else:
            raise KubeError(422, f"jsonpatch: index out of range at {path!r}", "Invalid")
    else:
        raise KubeError(422, f"jsonpatch: cannot add at {path!r}", "Invalid")
    return doc


def _jp_remove(doc: Any, tokens: list[str], path: str) -> Any:
    if not tokens:
        raise KubeError(422, "jsonpatch: cannot remove the whole document", "Invalid")
    parent = _resolve(doc, tokens[:-1], path)
    last = tokens[-1]
    if isinstance(parent, dict) and last in parent:
        return parent.pop(last)
    if isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        return parent.pop(int(last))
    raise KubeError(422, f"jsonpatch: unable to remove nonexistent key at {path!r}", "Invalid")


def json_patch(doc: dict[str, Any], ops: Any) -> dict[str, Any]:
    """Apply RFC 6902 ``ops`` (add, remove, replace, move, copy, test) to a copy of ``doc``.

    Raises:
        KubeError: 400 when ``ops`` is not a list of operations, 422 when an operation fails.
    """
    if not isinstance(ops, list):
        raise bad_request("json patch must be a list of operations")
    out: Any = clone(doc)
    for op in ops:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise bad_request(f"invalid json patch operation: {op!r}")
        name, path = op["op"], op["path"]
        tokens = _pointer(path)
        if name == "add":
            out = _jp_add(out, tokens, clone(op.get("value")), path)
        elif name == "remove":
            _jp_remove(out, tokens, path)
        elif name == "replace":
            _resolve(out, tokens, path)
            if tokens:
                _jp_remove(out, tokens, path)
            out = _jp_add(out, tokens, clone(op.get("value")), path)
        elif name in ("move", "copy"):
            src = op.get("from", "")
            stokens = _pointer(src)
            value = clone(_resolve(out, stokens, src))
            if name == "move":
                _jp_remove(out, stokens, src)
            out = _jp_add(out, tokens, value, path)
        elif name == "test":
            if _resolve(out, tokens, path) != op.get("value"):
                raise KubeError(422, f"jsonpatch: test operation failed at {path!r}", "Invalid")
        else:
            raise bad_request(f"unknown json patch operation {name!r}")
    if not isinstance(out, dict):
        raise KubeError(422, "jsonpatch: result is not an object", "Invalid")
    return dict(out)


# --------------------------------------------------------------------------------------------
# JSON merge patch (RFC 7386)


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 merge patch: maps merge recursively, ``null`` deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return clone(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


# --------------------------------------------------------------------------------------------
# Strategic merge patch


def _strip_directives(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_directives(v) for k, v in value.items() if not k.startswith("$") and k != "$patch"}
    if isinstance(value, list):
        return [_strip_directives(v) for v in value if not (isinstance(v, dict) and "$patch" in v)]
    return value


def strategic_merge(target: Any, patch: Any, typer: Typer | None = None) -> Any:
    """Strategic merge patch with patch-merge keys for built-in lists and the ``$patch``,
    ``$deleteFromPrimitiveList/``, ``$retainKeys`` and ``$setElementOrder/`` directives.

    Returns ``None`` when the patch deletes the map (``$patch: delete``).
    """
    typer = typer or Typer()
    if not isinstance(patch, dict):
        return clone(patch)
    directive = patch.get("$patch")
    if directive == "replace":
        return _strip_directives({k: v for k, v in patch.items() if k != "$patch"})
    if directive == "delete":
        return None
    out = clone(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key in ("$patch", "$retainKeys") or key.startswith("$setElementOrder/"):
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            drop = value if isinstance(value, list) else [value]
            out[field] = [x for x in out.get(field) or [] if x not in drop]
            continue
        if value is None:
            out.pop(key, None)
        elif isinstance(value, list):
            out[key] = _smp_list(out.get(key), value, key, typer.child(key))
        elif isinstance(value, dict):
            merged = strategic_merge(out.get(key), value, typer.child(key))
            if merged is None:
                out.pop(key, None)
            else:
                out[key] = merged
        else:
            out[key] = value
    retain = patch.get("$retainKeys")
    if isinstance(retain, list):
        out = {k: v for k, v in out.items() if k in retain or k in patch}
    return out


def _smp_list(live: Any, patch: list[Any], field: str, typer: Typer) -> list[Any]:
    if any(isinstance(i, dict) and i.get("$patch") == "replace" for i in patch):
        return list(_strip_directives(patch))
    live_list = list(live) if isinstance(live, list) else []
    kind, keys = typer.list_info(field, [*live_list, *patch])
    if kind == "set":
        out = list(live_list)
        for item in patch:
            if item not in out:
                out.append(clone(item))
        return out
    if kind != "map":
        return list(_strip_directives(patch))
    out = list(clone(live_list))
    for item in patch:
        if not isinstance(item, dict):
            raise bad_request(f"strategic merge patch: list item {item!r} of {field} is not an object")
        key = _item_key(item, keys)
        idx = next((i for i, cur in enumerate(out) if _item_key(cur, keys) == key), None)
        if item.get("$patch") == "delete":
            if idx is not None:
                out.pop(idx)
            continue
        if idx is None:
            out.append(_strip_directives(item))
        else:
            out[idx] = strategic_merge(out[idx], item, typer.item())
    return out


# --------------------------------------------------------------------------------------------
# Server-side apply: field sets

Path = tuple[str, ...]

# Top-level fields never tracked; metadata fields tracked
_UNTRACKED_TOP = frozenset({"apiVersion", "kind", "metadata", "status"})
_TRACKED_META = ("labels", "annotations", "finalizers", "ownerReferences")


def _key_segment(item: dict[str, Any], keys: tuple[str, ...]) -> str:
    return "k:" + json.dumps({k: item.get(k) for k in keys}, separators=(",", ":"), sort_keys=True)


def _collect(value: Any, typer: Typer, field: str, path: Path, out: set[Path]) -> None:
    if isinstance(value, dict):
        if not value:
            out.add(path)
        for key, sub in value.items():
            _collect(sub, typer.child(key), key, (*path, f"f:{key}"), out)
    elif isinstance(value, list):
        kind, keys = typer.list_info(field, value)
        if kind == "map" and value:
            for item in value:
                seg = _key_segment(item, keys)
                out.add((*path, seg, "."))
                _collect(item, typer.item(), field, (*path, seg), out)
        elif kind == "set" and value:
            for item in value:
                out.add((*path, "v:" + json.dumps(item, separators=(",", ":"), sort_keys=True)))
        else:
            out.add(path)
    else:
        out.add(path)


def field_set(obj: dict[str, Any], typer: Typer, status_only: bool = False) -> set[Path]:
    """Paths of the fields set in ``obj`` (main resource: all but status; status writes: status)."""
    out: set[Path] = set()
    if status_only:
        if "status" in obj:
            _collect(obj["status"], typer.child("status"), "status", ("f:status",), out)
        return out
    meta = obj.get("metadata") or {}
    for key in _TRACKED_META:
        if key in meta:
            mt = typer.child("metadata").child(key)
            _collect(meta[key], mt, key, ("f:metadata", f"f:{key}"), out)
    for key, value in obj.items():
        if key not in _UNTRACKED_TOP:
            _collect(value, typer.child(key), key, (f"f:{key}",), out)
    return out


def to_fields_v1(paths: set[Path]) -> dict[str, Any]:
    """Render a path set as a ``FieldsV1`` trie."""
    root: dict[str, Any] = {}
    for path in sorted(paths):
        node = root
        for seg in path:
            node = node.setdefault(seg, {})
    return root


def from_fields_v1(trie: dict[str, Any], prefix: Path = ()) -> set[Path]:
    """Parse a ``FieldsV1`` trie back into a path set."""
    out: set[Path] = set()
    for seg, sub in trie.items():
        path = (*prefix, seg)
        if isinstance(sub, dict) and sub:
            out |= from_fields_v1(sub, path)
        else:
            out.add(path)
    return out


_MISSING = object()


def value_at(obj: Any, path: Path) -> Any:
    """The value at ``path`` in ``obj``, or a private MISSING sentinel."""
    cur = obj
    for seg in path:
        if seg == ".":
            return cur
        if seg.startswith("f:"):
            if not isinstance(cur, dict) or seg[2:] not in cur:
                return _MISSING
            cur = cur[seg[2:]]
        elif seg.startswith("k:"):
            want = json.loads(seg[2:])
            if not isinstance(cur, list):
                return _MISSING
            cur = next(
                (i for i in cur if isinstance(i, dict) and all(i.get(k) == v for k, v in want.items())),
                _MISSING,
            )
            if cur is _MISSING:
                return _MISSING
        elif seg.startswith("v:"):
            member = json.loads(seg[2:])
            return member if isinstance(cur, list) and member in cur else _MISSING
    return cur


def remove_path(obj: Any, path: Path) -> None:
    """Remove the field, associative-list item or set member at ``path`` (no-op when absent)."""
    if not path:
        return
    if path[-1] == ".":
        path = path[:-1]
    parent = value_at(obj, path[:-1]) if len(path) > 1 else obj
    last = path[-1]
    if parent is _MISSING:
        return
    if last.startswith("f:") and isinstance(parent, dict):
        parent.pop(last[2:], None)
    elif last.startswith("k:") and isinstance(parent, list):
        want = json.loads(last[2:])
        parent[:] = [i for i in parent if not (isinstance(i, dict) and all(i.get(k) == v for k, v in want.items()))]
    elif last.startswith("v:") and isinstance(parent, list):
        member = json.loads(last[2:])
        parent[:] = [i for i in parent if i != member]


def apply_merge(live: Any, applied: Any, typer: Typer, field: str = "") -> Any:
    """Merge an applied configuration into the live object: maps merge, associative lists merge by
    key, sets union, atomic lists and scalars are replaced."""
    if isinstance(live, dict) and isinstance(applied, dict):
        out = dict(live)
        for key, value in applied.items():
            out[key] = apply_merge(live[key], value, typer.child(key), key) if key in live else clone(value)
        return out
    if isinstance(live, list) and isinstance(applied, list):
        kind, keys = typer.list_info(field, [*live, *applied])
        if kind == "map":
            out_list = clone(live)
            for item in applied:
                key = _item_key(item, keys)
                idx = next((i for i, cur in enumerate(out_list) if _item_key(cur, keys) == key), None)
                if idx is None:
                    out_list.append(clone(item))
                else:
                    out_list[idx] = apply_merge(out_list[idx], item, typer.item(), field)
            return out_list
        if kind == "set":
            return [*clone(live), *[clone(i) for i in applied if i not in live]]
    return clone(applied)


def paths_differ(a: Any, b: Any, path: Path) -> bool:
    """Whether ``a`` and ``b`` hold different values at ``path``."""
    if path and path[-1] == ".":
        return False
    return bool(value_at(a, path) != value_at(b, path))


def is_missing(value: Any) -> bool:
    """Whether ``value`` is the MISSING sentinel returned by :func:`value_at`."""
    return value is _MISSING


def describe_path(path: Path) -> str:
    """Render a path like the real conflict messages (``.spec.replicas``)."""
    parts = []
    for seg in path:
        if seg.startswith("f:"):
            parts.append("." + seg[2:])
        elif seg.startswith(("k:", "v:")):
            parts.append("[" + seg[2:] + "]")
    return "".join(parts)
