"""The client's public surface is the one recorded in ``client_signatures_before.json``.

``instantstart_client.api`` was split from one module into a package (the transport core and one mixin per area,
combined into ``InstantStartClient``); this test holds every public method's name, kind, signature and docstring,
and the module's public names, to what they were before the split. A deliberate change regenerates the file:
``.venv/bin/python tests/unit/test_client_signatures.py``.
"""

from __future__ import annotations

import inspect
import json
import types
from pathlib import Path
from typing import Any

from instantstart_client import api
from instantstart_client.api import InstantStartClient

RECORDED = Path(__file__).with_name("client_signatures_before.json")
DUNDERS = ("__init__", "__enter__", "__exit__")


def _member(name: str) -> dict[str, Any]:
    raw = inspect.getattr_static(InstantStartClient, name)
    if isinstance(raw, property):
        assert raw.fget is not None
        return {"kind": "property", "signature": str(inspect.signature(raw.fget)), "doc": inspect.getdoc(raw)}
    kind = (
        "staticmethod" if isinstance(raw, staticmethod) else "classmethod" if isinstance(raw, classmethod) else "method"
    )
    function = getattr(InstantStartClient, name)
    return {"kind": kind, "signature": str(inspect.signature(function)), "doc": inspect.getdoc(function)}


def _defined_by_api(value: object, name: str) -> bool:
    """A class or function of ``api`` (not one it imports), or one of its constants (``API_URL_ENV``, ...)."""
    if isinstance(value, types.ModuleType):
        return False
    if inspect.isclass(value) or inspect.isfunction(value):
        return str(getattr(value, "__module__", "")).startswith(api.__name__)
    return name.isupper() and isinstance(value, str | int | frozenset)


def client_surface() -> dict[str, Any]:
    """The public methods and properties of ``InstantStartClient`` and the public names of ``api``."""
    names = sorted(name for name in dir(InstantStartClient) if not name.startswith("_")) + list(DUNDERS)
    module_names = sorted(
        name for name in dir(api) if not name.startswith("_") and _defined_by_api(getattr(api, name), name)
    )
    return {
        "methods": {name: _member(name) for name in names},
        "module": {name: type(getattr(api, name)).__name__ for name in module_names},
    }


def test_the_client_methods_are_the_recorded_ones() -> None:
    recorded = json.loads(RECORDED.read_text())
    current = client_surface()
    assert sorted(current["methods"]) == sorted(recorded["methods"])
    for name, member in recorded["methods"].items():
        assert current["methods"][name] == member, f"InstantStartClient.{name} changed"


def test_every_public_name_of_the_module_is_still_importable() -> None:
    recorded = json.loads(RECORDED.read_text())
    current = client_surface()["module"]
    missing = sorted(set(recorded["module"]) - set(current))
    assert not missing, f"no longer importable from instantstart_client.api: {missing}"
    for name, kind in recorded["module"].items():
        assert current[name] == kind, name


if __name__ == "__main__":
    RECORDED.write_text(json.dumps(client_surface(), indent=1) + "\n")
