"""The adapter's HTTP(S) server: the three metrics APIs, discovery, health, /metrics.

Routes (custom-metrics-apiserver, metrics-server):
  /apis/custom.metrics.k8s.io/{v1beta1,v1beta2}[/namespaces/{ns}]/{resource}/{name|*}/{metric}
  /apis/custom.metrics.k8s.io/{v}/namespaces/{ns}/metrics/{metric}
  /apis/external.metrics.k8s.io/v1beta1/namespaces/{ns}/{metric}
  /apis/metrics.k8s.io/v1beta1/nodes[/{name}], [/namespaces/{ns}]/pods[/{name}]
plus /apis, /apis/{group}, /apis/{group}/{version}, /healthz, /livez, /readyz, /metrics.
"""

from __future__ import annotations

import logging
import socket
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import orjson
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from promop.adapter import discovery
from promop.adapter.app import Adapter
from promop.adapter.auth import AuthError, Authenticator, Authorizer, RequestAttributes, with_authenticated_group
from promop.kube import discovery as disco
from promop.adapter.provider import CUSTOM, EXTERNAL, RESOURCE, ApiError, Provider, State, not_found

log = logging.getLogger("promop.adapter")

CUSTOM_VERSIONS = ("v1beta2", "v1beta1")
ALWAYS_ALLOW_PATHS = ("/healthz", "/livez", "/readyz")


class AdapterServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    block_on_close = False
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], adapter: Adapter, provider: Provider,
                 authenticator: Authenticator | None = None, authorizer: Authorizer | None = None,
                 tls: ssl.SSLContext | None = None, always_allow_paths: tuple[str, ...] = ALWAYS_ALLOW_PATHS) -> None:
        self.adapter = adapter
        self.provider = provider
        self.authenticator = authenticator
        self.authorizer = authorizer
        self.tls = tls
        self.always_allow_paths = always_allow_paths
        super().__init__(address, Handler)

    def get_request(self) -> tuple[socket.socket, Any]:
        sock, addr = super().get_request()
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.tls is not None:
            # The handshake happens in the handler thread (do_handshake_on_connect is lazy on first read).
            sock = self.tls.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return sock, addr

    @property
    def port(self) -> int:
        return self.server_address[1]

    def serve_in_background(self) -> threading.Thread:
        t = threading.Thread(target=self.serve_forever, name="adapter-http", daemon=True)
        t.start()
        return t

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if isinstance(sys.exc_info()[1], (OSError, ssl.SSLError, ValueError)):
            return
        log.exception("connection failed client=%s", client_address)


def request_attributes(method: str, path: str) -> RequestAttributes:
    """What a SubjectAccessReview asks about, as the apiserver's RequestInfo derives it."""
    parts = [p for p in path.strip("/").split("/") if p]
    verb = {"GET": "get", "HEAD": "get", "POST": "create"}.get(method, method.lower())
    if len(parts) < 4 or parts[0] != "apis":
        return RequestAttributes(verb=verb, path=path)
    group, version, rest = parts[1], parts[2], parts[3:]
    namespace = ""
    if rest[0] == "namespaces" and len(rest) >= 3:
        namespace, rest = rest[1], rest[2:]
    elif rest[0] == "namespaces" and len(rest) == 2 and group != CUSTOM:
        return RequestAttributes(verb=verb, group=group, version=version, resource="namespaces", name=rest[1])
    resource = rest[0]
    name = rest[1] if len(rest) > 1 else ""
    sub = rest[2] if len(rest) > 2 else ""
    if group == EXTERNAL:  # /namespaces/{ns}/{metric}: the metric is the resource
        name = ""
    if verb == "get" and not name:
        verb = "list"
    return RequestAttributes(verb=verb, group=group, version=version, namespace=namespace, resource=resource,
                             subresource=sub, name=name, resource_request=True)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: AdapterServer
    wbufsize = 1 << 16

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def setup(self) -> None:
        if isinstance(self.request, ssl.SSLSocket):
            self.request.settimeout(10)
            self.request.do_handshake()
            self.request.settimeout(None)
        super().setup()

    def do_GET(self) -> None:  # noqa: N802
        self._handle("GET")

    def _send(self, code: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-cache, private")
        self.end_headers()
        self.wfile.write(body)

    def _handle(self, method: str) -> None:
        started = time.perf_counter()
        url = urlsplit(self.path)
        path = url.path
        api = "other"
        code = 500
        try:
            if path in self.server.always_allow_paths:
                code = self._health(path)
                return
            user = self._authenticate()
            if self.server.authorizer is not None:
                self.server.authorizer.authorize(user, request_attributes(method, path))
            if path == "/metrics":
                body = generate_latest(self.server.adapter.metrics.registry)
                code = 200
                self._send(200, body, CONTENT_TYPE_LATEST)
                return
            if path in ("/openapi/v2", "/openapi/v3"):
                # The aggregator downloads every backend's OpenAPI; an empty document keeps it quiet.
                code = 200
                doc = ({"swagger": "2.0", "info": {"title": "promop-adapter", "version": "v1"}, "paths": {}}
                       if path.endswith("v2") else {"paths": {}})
                self._send(200, orjson.dumps(doc))
                return
            params = parse_qs(url.query, keep_blank_values=True)
            content_type = self._negotiate_discovery(path)
            api, doc = self._route(path, params, content_type)
            code = 200
            self._send(200, orjson.dumps(doc), content_type or "application/json")
        except ApiError as exc:
            code = exc.code
            self._send(exc.code, orjson.dumps(exc.body()))
        except AuthError as exc:
            code = exc.code
            self._send(exc.code, orjson.dumps(exc.body()))
        except (BrokenPipeError, ConnectionResetError):
            code = 499
            self.close_connection = True
        except Exception as exc:  # a bug: answer like an apiserver would
            log.exception("request failed path=%s", self.path)
            code = 500
            err = ApiError(500, "InternalError", f"Internal error occurred: {exc!r}")
            self._send(500, orjson.dumps(err.body()))
        finally:
            m = self.server.adapter.metrics
            m.requests.labels(api, str(code)).inc()
            m.latency.labels(api).observe(time.perf_counter() - started)

    def _health(self, path: str) -> int:
        adapter = self.server.adapter
        if path == "/readyz" and not adapter.ready.is_set():
            self._send(503, b"not ready: the first series discovery has not succeeded yet", "text/plain")
            return 503
        self._send(200, b"ok", "text/plain")
        return 200

    def _authenticate(self) -> Any:
        auth = self.server.authenticator
        if auth is None:
            return None
        cert = der = None
        if isinstance(self.connection, ssl.SSLSocket):
            cert = self.connection.getpeercert()
            der = self.connection.getpeercert(binary_form=True) if cert else None
        return with_authenticated_group(auth.authenticate(cert, self.headers, der))

    def _negotiate_discovery(self, path: str) -> str | None:
        """For `/apis`, `/apis/<group>` and `/apis/<group>/<version>`: the aggregated media type to answer
        `/apis` with (None: the legacy document), or a 406 when the Accept header allows neither, as the
        apiserver's negotiation answers (kube-aggregator falls back to legacy discovery on that 406)."""
        parts = [p for p in path.strip("/").split("/") if p]
        if not parts or parts[0] != "apis" or len(parts) > 3:
            return None
        accept = self.headers.get("Accept")
        answer = disco.negotiate(accept, aggregated=len(parts) == 1)
        if answer == disco.NOT_ACCEPTABLE:
            served = ["application/json"] + ([disco.media_type(v) for v in disco.VERSIONS] if len(parts) == 1 else [])
            raise ApiError(406, "NotAcceptable",
                           f"only the following media types are accepted: {', '.join(served)} (asked for {accept!r})")
        return None if answer == disco.LEGACY else disco.media_type(answer)

    def _route(self, path: str, params: dict, aggregated: str | None = None) -> tuple[str, dict]:
        state: State = self.server.adapter.state
        provider = self.server.provider
        parts = [unquote(p) for p in path.strip("/").split("/") if p]

        def q(name: str) -> str | None:
            v = params.get(name)
            return v[0] if v else None

        groups = self._groups(state)
        if parts == ["apis"]:
            if aggregated is not None:
                return "discovery", discovery.aggregated(groups, lambda g, v: self._resource_list(state, g, v),
                                                         disco.content_type_version(aggregated) or "v2")
            return "discovery", discovery.group_list(groups)
        if len(parts) < 2 or parts[0] != "apis" or parts[1] not in groups:
            raise not_found("the server could not find the requested resource")
        group = parts[1]
        if len(parts) == 2:
            return "discovery", {"kind": "APIGroup", "apiVersion": "v1", **discovery.group_doc(group, groups[group])}
        version = parts[2]
        if version not in groups[group]:
            raise not_found("the server could not find the requested resource")
        rest = parts[3:]
        if not rest:
            return "discovery", self._resource_list(state, group, version)
        if group == CUSTOM:
            if len(rest) == 4 and rest[0] == "namespaces" and rest[2] == "metrics":
                return "custom", provider.custom(state, version, "namespaces", None, rest[1], rest[3],
                                                 q("metricLabelSelector"), q("labelSelector"))
            if len(rest) == 5 and rest[0] == "namespaces":
                return "custom", provider.custom(state, version, rest[2], rest[1], rest[3], rest[4],
                                                 q("metricLabelSelector"), q("labelSelector"))
            if len(rest) == 3:
                return "custom", provider.custom(state, version, rest[0], None, rest[1], rest[2],
                                                 q("metricLabelSelector"), q("labelSelector"))
        elif group == EXTERNAL:
            if len(rest) == 3 and rest[0] == "namespaces":
                return "external", provider.external(state, rest[1], rest[2], q("labelSelector"))
        elif group == RESOURCE:
            if rest[0] == "nodes" and len(rest) <= 2:
                return "resource", provider.node_metrics(state, rest[1] if len(rest) == 2 else None,
                                                         q("labelSelector"))
            if rest[0] == "pods" and len(rest) == 1:
                return "resource", provider.pod_metrics(state, None, None, q("labelSelector"))
            if rest[0] == "namespaces" and len(rest) in (3, 4) and rest[2] == "pods":
                return "resource", provider.pod_metrics(state, rest[1], rest[3] if len(rest) == 4 else None,
                                                        q("labelSelector"))
        raise not_found("the server could not find the requested resource")

    def _resource_list(self, state: State, group: str, version: str) -> dict:
        """The APIResourceList of one served group-version."""
        provider = self.server.provider
        if group == CUSTOM:
            return provider.custom_discovery(state, version)
        if group == EXTERNAL:
            return provider.external_discovery(state)
        return provider.resource_discovery()

    @staticmethod
    def _groups(state: State) -> dict[str, tuple[str, ...]]:
        # All three groups always answer discovery, with empty lists when their rules are not configured:
        # upstream leaves the group out, which makes its APIService unavailable and breaks discovery for
        # every client (`kubectl api-resources`, namespace deletion). Data requests then 404 saying why.
        return {CUSTOM: CUSTOM_VERSIONS, EXTERNAL: ("v1beta1",), RESOURCE: ("v1beta1",)}
