"""CustomResourceDefinition structural schemas: pruning, defaulting and validation with jsonschema."""

from __future__ import annotations

import json
from typing import Any

import jsonschema

from instantstart_sandbox.kube.patches import clone

_ROOT_KEEP = ("apiVersion", "kind", "metadata")


def to_json_schema(node: Any) -> Any:
    """Translate an OpenAPI v3 (Kubernetes structural) schema into a JSON Schema draft 4 document.

    ``nullable: true`` allows ``null``; ``x-kubernetes-int-or-string`` allows integers or strings;
    ``x-kubernetes-*`` extensions are dropped.
    """
    if isinstance(node, list):
        return [to_json_schema(n) for n in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key.startswith("x-kubernetes-") or key in ("nullable", "default", "example", "externalDocs"):
            continue
        if key == "properties" and isinstance(value, dict):
            out[key] = {k: to_json_schema(v) for k, v in value.items()}
        elif key in ("allOf", "anyOf", "oneOf", "items", "additionalProperties", "not"):
            out[key] = to_json_schema(value)
        else:
            out[key] = value
    if node.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out = {"anyOf": [{"type": "integer"}, {"type": "string"}], **out}
    if node.get("nullable"):
        typ = out.get("type")
        if isinstance(typ, str):
            out["type"] = [typ, "null"]
        if "enum" in out and None not in out["enum"]:
            out["enum"] = [*out["enum"], None]
        if "type" not in out:
            out = {"anyOf": [{"type": "null"}, out]}
    return out


def prune(value: Any, schema: dict[str, Any] | None, path: str, pruned: list[str], root: bool = False) -> None:
    """Remove fields not specified by ``schema`` (in place); record their dotted paths in ``pruned``."""
    if not isinstance(schema, dict):
        return
    preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
    embedded = bool(schema.get("x-kubernetes-embedded-resource"))
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        addl = schema.get("additionalProperties")
        for key in list(value):
            sub_path = f"{path}.{key}" if path else key
            if (root or embedded) and key in _ROOT_KEEP:
                if key != "metadata" and key in props:
                    prune(value[key], props[key], sub_path, pruned)
                continue
            if key in props:
                prune(value[key], props[key], sub_path, pruned)
            elif isinstance(addl, dict):
                prune(value[key], addl, sub_path, pruned)
            elif addl is True or preserve:
                continue
            else:
                del value[key]
                pruned.append(sub_path)
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for i, item in enumerate(value):
                prune(item, items, f"{path}[{i}]", pruned)


def apply_defaults(value: Any, schema: dict[str, Any] | None) -> None:
    """Fill schema ``default`` values into ``value`` (in place), like the API server does on write."""
    if not isinstance(schema, dict):
        return
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        for key, sub in props.items():
            if key not in value and isinstance(sub, dict) and "default" in sub:
                value[key] = clone(sub["default"])
            if key in value:
                apply_defaults(value[key], sub)
        addl = schema.get("additionalProperties")
        if isinstance(addl, dict):
            for key in value:
                if key not in props:
                    apply_defaults(value[key], addl)
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for item in value:
                apply_defaults(item, items)


def _field(path: Any) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _show(value: Any) -> str:
    return json.dumps(value) if not isinstance(value, dict | list) else '"object"'


def _type_name(value: Any) -> str:
    return value if isinstance(value, str) else str(value[0])


def validate(obj: dict[str, Any], schema: dict[str, Any]) -> list[dict[str, str]]:
    """Validate ``obj`` (without ``metadata``) against ``schema``; returns ``StatusCause`` dicts."""
    js = to_json_schema(schema)
    if isinstance(js, dict) and isinstance(js.get("properties"), dict):
        js = {**js, "properties": {k: v for k, v in js["properties"].items() if k != "metadata"}}
        if isinstance(js.get("required"), list):
            js["required"] = [r for r in js["required"] if r != "metadata"]
    instance = {k: v for k, v in obj.items() if k != "metadata"}
    causes: list[dict[str, str]] = []
    validator = jsonschema.Draft4Validator(js)
    for err in sorted(validator.iter_errors(instance), key=lambda e: list(map(str, e.absolute_path))):
        field = _field(err.absolute_path)
        if err.validator == "required":
            missing = str(err.message).split("'")[1] if "'" in err.message else ""
            full = f"{field}.{missing}" if field else missing
            causes.append({"reason": "FieldValueRequired", "message": "Required value", "field": full})
        elif err.validator == "enum":
            allowed = ", ".join(_show(v) for v in err.validator_value)
            causes.append(
                {
                    "reason": "FieldValueNotSupported",
                    "message": f"Unsupported value: {_show(err.instance)}: supported values: {allowed}",
                    "field": field,
                }
            )
        elif err.validator == "type":
            causes.append(
                {
                    "reason": "FieldValueTypeInvalid",
                    "message": f"Invalid value: {_show(err.instance)}: {field} in body must be of type "
                    f"{_type_name(err.validator_value)}: {_show(err.instance)}",
                    "field": field,
                }
            )
        else:
            causes.append(
                {
                    "reason": "FieldValueInvalid",
                    "message": f"Invalid value: {_show(err.instance)}: {field} in body {err.message}",
                    "field": field,
                }
            )
    return causes
