"""HTTP endpoints of the sidecar: /metrics and /healthz."""
from __future__ import annotations

import socket
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from .specs import split_address
from .webconfig import WebConfig

HEALTHY = b'{"status":"up"}'
HANDSHAKE_TIMEOUT = 10.0


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    dual_stack = False
    tls: ssl.SSLContext | None = None

    def finish_request(self, request: Any, client_address: Any) -> None:
        # TLS handshakes happen here, in the connection's own thread, never in accept().
        if self.tls is not None:
            request.settimeout(HANDSHAKE_TIMEOUT)
            request = self.tls.wrap_socket(request, server_side=True)
        super().finish_request(request, client_address)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that fails the handshake or hangs up is not our error; keep stderr for logs.
        return

    def server_bind(self) -> None:
        if self.dual_stack:
            self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        super().server_bind()


def _handler(registry: CollectorRegistry, web: WebConfig) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server naming)
            if not web.authorized(self.headers.get("Authorization")):
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="promop-config-reloader"')
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                self._reply(200, CONTENT_TYPE_LATEST, generate_latest(registry))
            elif path == "/healthz":
                self._reply(200, "application/json", HEALTHY)
            else:
                self._reply(404, "text/plain; charset=utf-8", b"not found; try /metrics or /healthz\n")

        def _reply(self, code: int, ctype: str, body: bytes) -> None:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:  # silence access logs
            return

    return Handler


def start(address: str, registry: CollectorRegistry, web: WebConfig | None = None) -> ThreadingHTTPServer:
    """Bind and serve in a daemon thread; an empty host means every interface."""
    web = web or WebConfig()
    host, port = split_address(address)
    handler = _handler(registry, web)
    if host == "":
        try:
            server_cls = type("DualStack", (_Server,), {"address_family": socket.AF_INET6, "dual_stack": True})
            server: ThreadingHTTPServer = server_cls(("::", port), handler)
        except OSError:
            server = _Server(("0.0.0.0", port), handler)
    elif ":" in host:
        server = type("V6", (_Server,), {"address_family": socket.AF_INET6})((host, port), handler)
    else:
        server = _Server((host, port), handler)
    server.tls = web.tls
    threading.Thread(target=server.serve_forever, name="metrics-server", daemon=True).start()
    return server


def bound_port(server: ThreadingHTTPServer) -> int:
    return int(server.server_address[1])
