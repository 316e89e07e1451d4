"""The emulated Kubernetes API server: HTTPS, one path prefix per cluster (``/clusters/<name>-<id>``).

The official ``kubernetes`` client (typed APIs, ``CustomObjectsApi``, ``DynamicClient``) talks to
it exactly as to an EKS endpoint: ``Configuration.host`` is the endpoint returned by
:meth:`KubeApiServer.add_cluster`, ``ssl_ca_cert`` holds :attr:`KubeApiServer.ca_pem`, and the
bearer token is checked by the ``token_validator``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import socket
import ssl
import tempfile
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, unquote, urlsplit

import yaml

from instantstart_sandbox.kube import certs, proxy
from instantstart_sandbox.kube import limits as kube_limits
from instantstart_sandbox.kube.controllers import SimulatedControllers
from instantstart_sandbox.kube.errors import KubeError, bad_request
from instantstart_sandbox.kube.inference import InferenceControllers, LustreSide, SageMakerSide
from instantstart_sandbox.kube.resources import ResourceType
from instantstart_sandbox.kube.store import KubeCluster
from instantstart_sandbox.kube.training import TrainingControllers

if TYPE_CHECKING:
    from instantstart_sandbox.clock import SimClock

log = logging.getLogger(__name__)

TokenValidator = Callable[[str, str], bool]
AccessGate = Callable[[str, str, str], "tuple[int, str] | None"]
_PATCH_TYPES = {
    "application/json-patch+json": "json",
    "application/merge-patch+json": "merge",
    "application/strategic-merge-patch+json": "strategic",
    "application/apply-patch+yaml": "apply",
}
_PUBLIC = (["version"], ["healthz"], ["livez"], ["readyz"])
_WATCH_DEFAULT_SECONDS = 1800.0


class KubeApiServer:
    """A threaded HTTPS server hosting any number of emulated clusters.

    Args:
        token_validator: ``(cluster_name, bearer_token) -> bool``; ``None`` accepts any non-empty
            bearer token (a token is still required).
        clock: simulated clock for timestamps and controller delays (immediate when ``None``).
    """

    def __init__(self, token_validator: TokenValidator | None = None, clock: SimClock | None = None) -> None:
        self.token_validator = token_validator
        self.access_gate: AccessGate | None = None
        """``(cluster, method, path) -> (status, message) | None``, asked after a token is accepted:
        a status (401/403) answers the request instead (the EKS emulator's access-entry propagation)."""
        self.entry_groups: Callable[[str], set[str]] | None = None
        """``cluster -> the kubernetesGroups of its access entries`` (the EKS emulator's), for the RBAC check of the
        service proxy (:mod:`instantstart_sandbox.kube.proxy`); None: no EKS, no check."""
        self.clock = clock
        self._clusters: dict[str, KubeCluster] = {}
        self._segments: dict[str, str] = {}
        """Cluster name -> the path segment of its endpoint (``<name>-<id>``, new for each creation)."""
        self._controllers: dict[str, SimulatedControllers] = {}
        self._training: dict[str, TrainingControllers] = {}
        self._inference: dict[str, InferenceControllers] = {}
        self.sagemaker: SageMakerSide | None = None
        """The AWS side the inference operator and model downloads call (set by the sandbox's AWS extension)."""
        self.lustre: LustreSide | None = None
        """FSx for Lustre, which downloads to an fsx claim write onto (set by the sandbox's AWS extension)."""
        self._lock = threading.Lock()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._ca_pem = ""
        self._host = "127.0.0.1"
        self._port = 0

    # -- lifecycle ----------------------------------------------------------------------------
    def start(self, host: str = "127.0.0.1", port: int = 0) -> None:
        """Generate a CA and server certificate and serve HTTPS on ``host:port`` (0 = a free port)."""
        if self._httpd is not None:
            return
        advertised = "127.0.0.1" if host in ("", "0.0.0.0", "::") else host
        names = tuple(dict.fromkeys(("127.0.0.1", "localhost", advertised)))
        creds = certs.generate(names)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        with tempfile.TemporaryDirectory() as tmp:
            cert_file, key_file = os.path.join(tmp, "tls.crt"), os.path.join(tmp, "tls.key")
            with open(cert_file, "w") as fh:
                fh.write(creds.cert_pem)
            with open(key_file, "w") as fh:
                fh.write(creds.key_pem)
            ctx.load_cert_chain(cert_file, key_file)
        ctx.set_alpn_protocols(["http/1.1"])
        httpd = _HTTPServer((host, port), _Handler, self)
        httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True, do_handshake_on_connect=False)
        self._httpd = httpd
        self._ca_pem = creds.ca_pem
        self._host = advertised
        self._port = httpd.server_address[1]
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="kube-apiserver", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop serving: end watches, close connections, release the port."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        httpd.stopping.set()
        for cluster in list(self._clusters.values()):
            cluster.close()
        httpd.shutdown()
        httpd.close_connections()
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    @property
    def ca_pem(self) -> str:
        """PEM of the CA that signed the server certificate (empty before :meth:`start`)."""
        return self._ca_pem

    @property
    def port(self) -> int:
        """The bound TCP port (0 before :meth:`start`)."""
        return self._port

    # -- clusters -----------------------------------------------------------------------------
    def endpoint(self, name: str) -> str:
        """``https://127.0.0.1:<port>/clusters/<name>-<id>``.

        As an EKS endpoint is, it is unique to one creation of the cluster: ``<id>`` is 16 random hex digits, and a
        cluster removed and added again under the same name answers at a new endpoint while the old one answers 404.
        Caches keyed by endpoint (the Kubernetes client's API discovery) therefore never outlive their cluster. An
        unknown name gets ``/clusters/<name>``, which answers 404."""
        return f"https://{self._host}:{self._port}/clusters/{self._segments.get(name, name)}"

    def add_cluster(self, name: str) -> str:
        """Create the cluster ``name`` (idempotent) with its default namespaces and service accounts,
        and start its simulated controllers; returns its endpoint URL (meaningful after :meth:`start`).

        The reported Kubernetes version defaults to 1.32; set ``cluster(name).kubernetes_version``
        to match the EKS cluster."""
        with self._lock:
            if name not in self._clusters:
                cluster = KubeCluster(name, clock=self.clock)
                self._controllers[name] = SimulatedControllers(cluster, self.clock)
                self._training[name] = TrainingControllers(cluster, self._controllers[name])
                self._inference[name] = InferenceControllers(
                    cluster, self._controllers[name], lambda: self.sagemaker, lambda: self.lustre
                )
                self._clusters[name] = cluster
                self._segments[name] = f"{name}-{secrets.token_hex(8)}"
        return self.endpoint(name)

    def remove_cluster(self, name: str) -> None:
        """Forget the cluster ``name`` (its open watches end); unknown names are ignored."""
        with self._lock:
            cluster = self._clusters.pop(name, None)
            self._segments.pop(name, None)
            controllers = self._controllers.pop(name, None)
            self._training.pop(name, None)
            self._inference.pop(name, None)
        if controllers is not None:
            controllers.stop()
        if cluster is not None:
            cluster.close()

    def training(self, name: str) -> TrainingControllers:
        """The training operators of cluster ``name`` (``fail_pod`` hook); ``KeyError`` when unknown."""
        return self._training[name]

    def inference(self, name: str) -> InferenceControllers:
        """The inference operator, model downloads and engine pods of cluster ``name`` (fault hooks
        ``stall``, ``fail_image_pull``, ``fail_download``); ``KeyError`` when unknown."""
        return self._inference[name]

    def cluster(self, name: str) -> KubeCluster:
        """The cluster ``name``; ``KeyError`` when unknown."""
        return self._clusters[name]

    def clusters(self) -> list[str]:
        """Names of the hosted clusters."""
        return list(self._clusters)

    def _at(self, segment: str) -> tuple[str, KubeCluster] | None:
        """``(name, cluster)`` served at the endpoint path segment ``segment`` (``<name>-<id>``), or None."""
        name = segment.rpartition("-")[0]
        cluster = self._clusters.get(name) if self._segments.get(name) == segment else None
        return (name, cluster) if cluster is not None else None


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, addr: tuple[str, int], handler: type[BaseHTTPRequestHandler], api: KubeApiServer) -> None:
        self.api = api
        self.stopping = threading.Event()
        self._conns: set[socket.socket] = set()
        self._conns_lock = threading.Lock()
        super().__init__(addr, handler)

    def track(self, conn: socket.socket, add: bool) -> None:
        with self._conns_lock:
            if add:
                self._conns.add(conn)
            else:
                self._conns.discard(conn)

    def close_connections(self) -> None:
        with self._conns_lock:
            conns = list(self._conns)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        log.debug("kube-apiserver connection error from %s", client_address, exc_info=True)


def _discovery_resource(rt: ResourceType) -> list[dict[str, Any]]:
    entry: dict[str, Any] = {
        "name": rt.plural,
        "singularName": rt.singular,
        "namespaced": rt.namespaced,
        "kind": rt.kind,
        "verbs": list(rt.verbs),
    }
    if rt.short_names:
        entry["shortNames"] = list(rt.short_names)
    if rt.categories:
        entry["categories"] = list(rt.categories)
    out = [entry]
    sub_verbs = ["get", "patch", "update"]
    if "status" in rt.subresources:
        out.append(
            {
                "name": f"{rt.plural}/status",
                "singularName": "",
                "namespaced": rt.namespaced,
                "kind": rt.kind,
                "verbs": sub_verbs,
            }
        )
    if "scale" in rt.subresources:
        out.append(
            {
                "name": f"{rt.plural}/scale",
                "singularName": "",
                "namespaced": rt.namespaced,
                "group": "autoscaling",
                "version": "v1",
                "kind": "Scale",
                "verbs": sub_verbs,
            }
        )
    if "log" in rt.subresources:
        out.append(
            {
                "name": f"{rt.plural}/log",
                "singularName": "",
                "namespaced": rt.namespaced,
                "kind": rt.kind,
                "verbs": ["get"],
            }
        )
    return out


def _flag(params: dict[str, str], name: str) -> bool:
    return params.get(name, "").lower() in ("true", "1")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server_version = "sandbox-kube-apiserver"
    timeout = 300
    server: _HTTPServer

    def setup(self) -> None:
        if isinstance(self.request, ssl.SSLSocket):
            self.request.settimeout(30)
            self.request.do_handshake()
        self.server.track(self.request, True)
        super().setup()

    def finish(self) -> None:
        self.server.track(self.request, False)
        with contextlib.suppress(OSError):
            super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("kube-apiserver: " + format, *args)

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_PATCH(self) -> None:
        self._dispatch("PATCH")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    # -- plumbing -----------------------------------------------------------------------------
    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            return self.rfile.read(length)
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(chunks)
        return b""

    def _send(self, code: int, payload: bytes, content_type: str, warnings: list[str] | None = None) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("Cache-Control", "no-cache, private")
        for w in warnings or []:
            self.send_header("Warning", f'299 - "{w}"'.replace("\n", " "))
        # one TLS record for headers and body (end_headers flushes the buffer)
        buffer: list[bytes] = self.__dict__.setdefault("_headers_buffer", [])
        buffer.append(b"\r\n" + payload)
        self.wfile.write(b"".join(buffer))
        buffer.clear()

    def _json(self, code: int, obj: Any, warnings: list[str] | None = None) -> None:
        self._send(code, json.dumps(obj, separators=(",", ":")).encode(), "application/json", warnings)

    def _dispatch(self, method: str) -> None:
        try:
            body = self._read_body()
            kube_limits.check_request_body(body)
            url = urlsplit(self.path)
            params = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
            parts = [unquote(p) for p in url.path.split("/") if p]
            if len(parts) < 2 or parts[0] != "clusters":
                raise KubeError(404, "the server could not find the requested resource", "NotFound")
            found = self.server.api._at(parts[1])
            if found is None:
                raise KubeError(404, f'cluster "{parts[1]}" not found', "NotFound")
            name, cluster = found
            rest = parts[2:]
            if rest not in _PUBLIC:
                self._authenticate(name, parts[1])
            self._route(method, cluster, rest, params, body)
        except KubeError as exc:
            self._json(exc.code, exc.status())
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, TimeoutError):
            self.close_connection = True
        except Exception as exc:
            log.exception("kube-apiserver: %s %s failed", method, self.path)
            self._json(500, KubeError(500, f"Internal error occurred: {exc}").status())

    def _authenticate(self, cluster_name: str, segment: str) -> None:
        header = self.headers.get("Authorization") or ""
        scheme, _, token = header.partition(" ")
        token = token.strip()
        ok = scheme.lower() == "bearer" and bool(token)
        validator = self.server.api.token_validator
        if ok and validator is not None:
            try:
                ok = bool(validator(cluster_name, token))
            except Exception:  # noqa: BLE001 - a broken token is an unauthorized request
                ok = False
        if not ok:
            raise KubeError(401, "Unauthorized", "Unauthorized")
        gate = self.server.api.access_gate
        path = urlsplit(self.path).path.removeprefix(f"/clusters/{segment}") or "/"
        denied = gate(cluster_name, self.command, path) if gate is not None else None
        if denied is not None:
            code, message = denied
            raise KubeError(code, message, "Unauthorized" if code == 401 else "Forbidden")

    def _manager(self, params: dict[str, str]) -> str:
        if params.get("fieldManager"):
            return params["fieldManager"]
        agent = self.headers.get("User-Agent") or "unknown"
        return agent.split("/")[0] or "unknown"

    def _decode(self, body: bytes) -> Any:
        ctype = (self.headers.get("Content-Type") or "application/json").split(";")[0].strip().lower()
        if not body:
            raise bad_request("the request body is empty")
        try:
            if ctype in ("application/yaml", "text/yaml"):
                return yaml.safe_load(body)
            if ctype in ("application/json", "*/*", ""):
                return json.loads(body)
        except (ValueError, yaml.YAMLError) as exc:
            raise bad_request(f"couldn't decode the request body: {exc}") from exc
        raise KubeError(
            415,
            f"the body of the request was in an unknown format - accepted media types "
            f'include: application/json, application/yaml (got "{ctype}")',
            "UnsupportedMediaType",
        )

    # -- routing ------------------------------------------------------------------------------
    def _route(self, method: str, cluster: KubeCluster, rest: list[str], params: dict[str, str], body: bytes) -> None:
        reg = cluster.registry
        if rest == ["version"]:
            self._json(200, self._version(cluster))
            return
        if rest in (["healthz"], ["livez"], ["readyz"]):
            self._send(200, b"ok", "text/plain; charset=utf-8")
            return
        discovery = len(rest) <= 1 or (rest[0] == "api" and len(rest) == 2) or (rest[0] == "apis" and len(rest) <= 3)
        if discovery and method != "GET":
            raise KubeError(405, "the server does not allow this method on the requested resource", "MethodNotAllowed")
        if rest == ["api"]:
            api = self.server.api
            self._json(
                200,
                {
                    "kind": "APIVersions",
                    "versions": ["v1"],
                    "serverAddressByClientCIDRs": [
                        {"clientCIDR": "0.0.0.0/0", "serverAddress": f"{api._host}:{api._port}"}
                    ],
                },
            )
            return
        groups = reg.group_versions()
        if rest == ["apis"]:
            self._json(
                200,
                {
                    "kind": "APIGroupList",
                    "apiVersion": "v1",
                    "groups": [self._group(g, vs) for g, vs in groups.items() if g],
                },
            )
            return
        if rest[:1] == ["api"] and len(rest) >= 2:
            group, version, tail = "", rest[1], rest[2:]
        elif rest[:1] == ["apis"] and len(rest) >= 2:
            if len(rest) == 2:
                if rest[1] not in groups:
                    raise KubeError(404, "the server could not find the requested resource", "NotFound")
                self._json(200, {"kind": "APIGroup", "apiVersion": "v1", **self._group(rest[1], groups[rest[1]])})
                return
            group, version, tail = rest[1], rest[2], rest[3:]
        else:
            raise KubeError(404, "the server could not find the requested resource", "NotFound")
        if version not in groups.get(group, []):
            raise KubeError(404, "the server could not find the requested resource", "NotFound")
        gv = f"{group}/{version}" if group else version
        if not tail:
            resources = [e for rt in reg.in_group_version(group, version) for e in _discovery_resource(rt)]
            self._json(
                200,
                {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources},
            )
            return
        watch = _flag(params, "watch")
        if tail[0] == "watch":
            watch, tail = True, tail[1:]
        namespace: str | None = None
        if len(tail) >= 3 and tail[0] == "namespaces":
            candidate = reg.by_path(group, version, tail[2])
            if candidate is not None and candidate.namespaced:
                namespace, tail = tail[1], tail[2:]
        if not group and namespace is not None and len(tail) >= 3 and tail[0] == "services" and tail[2] == "proxy":
            api = self.server.api
            entry_groups = api.entry_groups(cluster.name) if api.entry_groups is not None else None
            status, ctype, payload = proxy.service_proxy(
                cluster, entry_groups, namespace, tail[1], method, "/".join(tail[3:]), body
            )
            self._send(status, payload, ctype)
            return
        if not tail or len(tail) > 3:
            raise KubeError(404, "the server could not find the requested resource", "NotFound")
        rt = reg.by_path(group, version, tail[0])
        if rt is None:
            raise KubeError(404, "the server could not find the requested resource", "NotFound")
        name = tail[1] if len(tail) > 1 else None
        sub = tail[2] if len(tail) > 2 else None
        if sub is not None and sub not in rt.subresources:
            raise KubeError(404, "the server could not find the requested resource", "NotFound")
        if rt.review and (method != "POST" or name is not None):
            raise KubeError(405, "the server does not allow this method on the requested resource", "MethodNotAllowed")
        if name is None:
            self._collection(method, cluster, rt, namespace, params, body, watch)
        else:
            if rt.namespaced and namespace is None:
                raise KubeError(404, "the server could not find the requested resource", "NotFound")
            self._item(method, cluster, rt, namespace, name, sub, params, body)

    @staticmethod
    def _group(group: str, versions: list[str]) -> dict[str, Any]:
        entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        return {"name": group, "versions": entries, "preferredVersion": entries[0]}

    def _version(self, cluster: KubeCluster) -> dict[str, Any]:
        major, _, minor = cluster.kubernetes_version.partition(".")
        return {
            "major": major,
            "minor": minor,
            "gitVersion": f"v{cluster.kubernetes_version}.0-eks-sandbox",
            "gitCommit": "0000000000000000000000000000000000000000",
            "gitTreeState": "clean",
            "buildDate": "2025-01-01T00:00:00Z",
            "goVersion": "go1.23.0",
            "compiler": "gc",
            "platform": "linux/amd64",
        }

    def _collection(
        self,
        method: str,
        cluster: KubeCluster,
        rt: ResourceType,
        namespace: str | None,
        params: dict[str, str],
        body: bytes,
        watch: bool,
    ) -> None:
        if method == "GET":
            if watch:
                self._watch(cluster, rt, namespace, params)
                return
            limit = int(params["limit"]) if params.get("limit", "").isdigit() else None
            self._json(
                200,
                cluster.list_objects(
                    rt,
                    namespace,
                    params.get("labelSelector"),
                    params.get("fieldSelector"),
                    limit,
                    params.get("continue"),
                ),
            )
        elif method == "POST":
            if rt.namespaced and namespace is None:
                raise KubeError(
                    405, "the server does not allow this method on the requested resource", "MethodNotAllowed"
                )
            obj, warnings = cluster.create_object(
                rt,
                namespace,
                self._decode(body),
                field_manager=self._manager(params),
                dry_run=params.get("dryRun") == "All",
                field_validation=params.get("fieldValidation"),
            )
            self._json(201, obj, warnings)
        elif method == "DELETE":
            count = cluster.delete_collection(rt, namespace, params.get("labelSelector"), params.get("fieldSelector"))
            self._json(
                200,
                {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "metadata": {},
                    "status": "Success",
                    "details": {"group": rt.group, "kind": rt.plural, "causes": []},
                    "message": f"deleted {count} {rt.plural}",
                },
            )
        else:
            raise KubeError(405, "the server does not allow this method on the requested resource", "MethodNotAllowed")

    def _item(
        self,
        method: str,
        cluster: KubeCluster,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        sub: str | None,
        params: dict[str, str],
        body: bytes,
    ) -> None:
        dry_run = params.get("dryRun") == "All"
        fv = params.get("fieldValidation")
        if sub == "log":
            if method != "GET":
                raise KubeError(
                    405, "the server does not allow this method on the requested resource", "MethodNotAllowed"
                )
            tail = params.get("tailLines")
            limit = params.get("limitBytes")
            since = params.get("sinceSeconds")
            if since is not None and not (since.isdigit() and int(since) > 0):
                raise bad_request("sinceSeconds: Invalid value: must be greater than 0")
            if since is not None and params.get("sinceTime"):
                raise bad_request("at most one of sinceTime or sinceSeconds may be specified")
            text = cluster.pod_log(
                namespace or "",
                name,
                params.get("container") or None,
                tail_lines=int(tail) if tail and tail.lstrip("-").isdigit() else None,
                timestamps=_flag(params, "timestamps"),
                limit_bytes=int(limit) if limit and limit.isdigit() else None,
                since_seconds=int(since) if since is not None else None,
                since_time=params.get("sinceTime") or None,
            )
            self._send(200, text.encode(), "text/plain")
            return
        if sub == "scale":
            self._scale(method, cluster, rt, namespace, name, params, body)
            return
        if method == "GET":
            self._json(200, cluster.get_object(rt, namespace, name))
        elif method == "PUT":
            obj, warnings = cluster.replace_object(
                rt,
                namespace,
                name,
                self._decode(body),
                subresource=sub,
                field_manager=self._manager(params),
                dry_run=dry_run,
                field_validation=fv,
            )
            self._json(200, obj, warnings)
        elif method == "PATCH":
            ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
            ptype = _PATCH_TYPES.get(ctype)
            if ptype is None:
                raise KubeError(
                    415,
                    "the body of the request was in an unknown format - accepted media types "
                    "include: application/json-patch+json, application/merge-patch+json, "
                    "application/apply-patch+yaml",
                    "UnsupportedMediaType",
                )
            if not body:
                raise bad_request("the request body is empty")
            manager = params.get("fieldManager") or (None if ptype == "apply" else self._manager(params))
            obj, warnings, created = cluster.patch_object(
                rt,
                namespace,
                name,
                ptype,
                body,
                subresource=sub,
                field_manager=manager,
                force=_flag(params, "force"),
                dry_run=dry_run,
                field_validation=fv,
            )
            self._json(201 if created else 200, obj, warnings)
        elif method == "DELETE":
            opts: dict[str, Any] = {}
            if body:
                with contextlib.suppress(ValueError):
                    opts = json.loads(body) or {}
            policy = params.get("propagationPolicy") or opts.get("propagationPolicy")
            if _flag(params, "orphanDependents") or opts.get("orphanDependents") is True:
                policy = "Orphan"
            dry_run = dry_run or "All" in (opts.get("dryRun") or [])
            obj, exists = cluster.delete_object(
                rt,
                namespace,
                name,
                dry_run=dry_run,
                propagation_policy=policy,
                preconditions=opts.get("preconditions"),
            )
            if exists or rt.delete_returns_object or rt.plural == "namespaces":
                self._json(202 if exists and rt.plural != "namespaces" else 200, obj)
            else:
                self._json(
                    200,
                    {
                        "kind": "Status",
                        "apiVersion": "v1",
                        "metadata": {},
                        "status": "Success",
                        "details": {
                            "name": name,
                            "group": rt.group,
                            "kind": rt.plural,
                            "uid": obj["metadata"].get("uid"),
                        },
                    },
                )
        else:
            raise KubeError(405, "the server does not allow this method on the requested resource", "MethodNotAllowed")

    def _scale(
        self,
        method: str,
        cluster: KubeCluster,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        params: dict[str, str],
        body: bytes,
    ) -> None:
        from instantstart_sandbox.kube import patches

        dry_run = params.get("dryRun") == "All"
        manager = self._manager(params)
        if method == "GET":
            self._json(200, cluster.get_scale(rt, namespace, name))
        elif method == "PUT":
            scale = self._decode(body)
            self._json(200, cluster.update_scale(rt, namespace, name, scale, field_manager=manager, dry_run=dry_run))
        elif method == "PATCH":
            current = cluster.get_scale(rt, namespace, name)
            ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
            ptype = _PATCH_TYPES.get(ctype)
            parsed = KubeCluster._parse_body(body, yaml_ok=ptype == "apply")
            if ptype == "json":
                scale = patches.json_patch(current, parsed)
            elif ptype in ("merge", "strategic", "apply"):
                scale = patches.merge_patch(current, parsed)
                scale["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            else:
                raise KubeError(415, "unsupported patch type", "UnsupportedMediaType")
            self._json(200, cluster.update_scale(rt, namespace, name, scale, field_manager=manager, dry_run=dry_run))
        else:
            raise KubeError(405, "the server does not allow this method on the requested resource", "MethodNotAllowed")

    def _watch(self, cluster: KubeCluster, rt: ResourceType, namespace: str | None, params: dict[str, str]) -> None:
        try:
            timeout = float(params.get("timeoutSeconds") or _WATCH_DEFAULT_SECONDS)
        except ValueError:
            timeout = _WATCH_DEFAULT_SECONDS
        watcher = cluster.watch(
            rt,
            namespace,
            params.get("labelSelector"),
            params.get("fieldSelector"),
            params.get("resourceVersion"),
        )
        deadline = time.monotonic() + timeout
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Cache-Control", "no-cache, private")
            self.end_headers()
            while not self.server.stopping.is_set():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                event = watcher.get(min(remaining, 5.0))
                if event is None:
                    if watcher.closed:
                        break
                    continue
                etype, obj = event
                if etype != "ERROR":
                    obj = {**obj, "apiVersion": rt.api_version, "kind": rt.kind}
                line = json.dumps({"type": etype, "object": obj}, separators=(",", ":")).encode() + b"\n"
                self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                self.wfile.flush()
                if etype == "ERROR":
                    break
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            self.close_connection = True
        finally:
            cluster.stop_watch(watcher)
