"""The HTTP endpoint of every long-running command: /metrics, /healthz and /readyz on --web.listen-address.

With `tls` (promop.host.webtls.WebTLS, `--web.enable-tls`) it serves HTTPS, the files reloaded
when they change; the TLS handshake runs in the connection's own thread, never in the accept loop.

/healthz answers 200 while the process serves HTTP, unless this replica leads
but has stopped renewing its lease (a liveness probe must not restart a standby). /readyz answers 200 once the caches have synced,
whether or not this replica leads, and 503 with the reason before that.
"""

from __future__ import annotations

import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from promop.host.webtls import Reloader, WebTLS

log = logging.getLogger("promop.host.web")

# () -> (ready, reason): reason says what is missing when not ready
Readiness = Callable[[], "tuple[bool, str]"]


class WebServer:
    """A small threaded HTTP server; `port` is the bound port (useful with port 0)."""

    def __init__(self, host: str, port: int, registry: CollectorRegistry, readiness: Readiness,
                 health: Readiness | None = None, tls: WebTLS | None = None) -> None:
        self.registry = registry
        self.readiness = readiness
        self.health = health or (lambda: (True, ""))
        handler = _make_handler(self)
        # TLSConfigError (a file that does not load) before the port is taken
        self.tls = Reloader(tls) if tls is not None and tls.active() else None
        if tls is not None and tls.enabled and self.tls is None:
            log.warning("server key and certificate not provided, TLS disabled")  # upstream's behaviour
        self._server = _TLSServer((host, port), handler, self.tls) if self.tls else ThreadingHTTPServer(
            (host, port), handler)
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        host = self._server.server_address[0]
        host = "127.0.0.1" if host in ("0.0.0.0", "") else host
        return f"{'https' if self.tls else 'http'}://{host}:{self.port}"

    def start(self) -> "WebServer":
        self._thread = threading.Thread(target=self._server.serve_forever, name="promop-web", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread:
            self._thread.join(timeout=5)


class _TLSServer(ThreadingHTTPServer):
    """Accepts plain sockets and wraps each with the current context; the handshake happens in the
    connection's thread (a slow or broken client never blocks the accept loop)."""

    handshake_timeout = 10.0

    def __init__(self, address: tuple[str, int], handler: type, tls: Reloader) -> None:
        self.tls = tls
        super().__init__(address, handler)

    def get_request(self):  # noqa: ANN201 (stdlib signature)
        sock, addr = self.socket.accept()
        return self.tls.context().wrap_socket(sock, server_side=True, do_handshake_on_connect=False), addr

    def finish_request(self, request, client_address) -> None:  # noqa: ANN001 (stdlib signature)
        request.settimeout(self.handshake_timeout)
        try:
            request.do_handshake()
        except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError: a refused client, not our error
            log.debug("TLS handshake failed", extra={"kv": {"client": client_address[0], "error": str(exc)}})
            return
        request.settimeout(None)
        super().finish_request(request, client_address)


def _make_handler(web: WebServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "promop"

        def do_GET(self) -> None:  # noqa: N802 (stdlib name)
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                self._send(200, generate_latest(web.registry), CONTENT_TYPE_LATEST)
            elif path == "/healthz":
                ok, reason = web.health()
                self._send(200 if ok else 503, b"ok\n" if ok else f"unhealthy: {reason}\n".encode())
            elif path == "/readyz":
                ready, reason = web.readiness()
                self._send(200 if ready else 503, (b"ok\n" if ready else f"not ready: {reason}\n".encode()))
            else:
                self._send(404, b"not found: try /metrics, /healthz or /readyz\n")

        def _send(self, code: int, body: bytes, ctype: str = "text/plain; charset=utf-8") -> None:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (stdlib signature)
            log.debug(format % args)

    return Handler
