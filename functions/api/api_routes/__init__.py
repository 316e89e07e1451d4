"""The HTTP API's routes, one Powertools router per area (clusters, operations, capacity, features, mlflow, catalog,
nodes, governance, training, inference, endpoints), each imported by the first request of its area.

A Lambda cold start imports none of them (``make cold-start``): the handler reads the request's path, imports the
module of its section (:data:`ROUTE_MODULES`, :func:`module_of`) and includes its router before resolving. The
OpenAPI document includes them all (:func:`module_names`). A unit test checks that every route's path names its
own module's section.
"""

from __future__ import annotations

ROUTE_MODULES: dict[str, str] = {
    "clusters": "api_routes.clusters",
    "stages": "api_routes.clusters",
    "events": "api_routes.clusters",
    "reconcile": "api_routes.clusters",
    "operations": "api_routes.operations",
    "instance-groups": "api_routes.capacity",
    "autoscaling": "api_routes.capacity",
    "features": "api_routes.features",
    "mlflow": "api_routes.mlflow",
    "catalog": "api_routes.catalog",
    "nodes": "api_routes.nodes",
    "software-update": "api_routes.nodes",
    "health-checks": "api_routes.nodes",
    "hyperpod-operations": "api_routes.nodes",
    "scheduler-config": "api_routes.governance",
    "compute-quotas": "api_routes.governance",
    "training-jobs": "api_routes.training",
    "models": "api_routes.inference",
    "inference/deployments": "api_routes.inference",
    "inference/endpoints": "api_routes.endpoints",
}
"""The route module of each section of the API's paths (see :func:`section`)."""


def section(path: str) -> str:
    """The section of a request path: the word after ``/clusters/{clusterTag}/``, else the first one; under
    ``inference`` the next word too.

    ``/clusters``, ``/clusters/import`` and ``/clusters/{clusterTag}`` are ``clusters``; ``/operations/{id}`` is
    ``operations``; ``/clusters/{clusterTag}/training-jobs/...`` is ``training-jobs``;
    ``/clusters/{clusterTag}/inference/endpoints/...`` is ``inference/endpoints``.
    """
    words = path.strip("/").split("/")
    if words[0] == "clusters" and len(words) > 2:
        return "/".join(words[2:4]) if words[2] == "inference" else words[2]
    return words[0]


def module_of(path: str) -> str | None:
    """The route module answering ``path`` (``None``: no route of the API has this section)."""
    return ROUTE_MODULES.get(section(path))


def module_names() -> list[str]:
    """Every route module, in the order of the API's reference (clusters first)."""
    return list(dict.fromkeys(ROUTE_MODULES.values()))
