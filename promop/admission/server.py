"""The webhook's HTTP(S) server: upstream's paths, /healthz and /metrics.

POST /admission-prometheusrules/validate, /admission-prometheusrules/mutate,
/admission-alertmanagerconfigs/validate (AdmissionReview v1) and /convert
(ConversionReview v1). A body that is not a review gets 400 with the reason;
a review always gets a review back (HTTP 200), the refusal inside it.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest

from promop.admission import amconfig, conversion, keda, review, rules
from promop.admission.tls import ReloadingContext
from promop.host.logs import fields

log = logging.getLogger("promop.admission")

MAX_BODY = 3 * 1024 * 1024  # the apiserver's own request size limit


@dataclass
class Options:
    name_validation_scheme: str = "utf8"
    keda_lister: Any = None        # promop.admission.keda.Lister: the namespace's ScaledObjects and HPAs


class Metrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.requests = Counter("promop_admission_webhook_requests_total",
                                "Reviews answered, by path and outcome (allowed, denied, converted, failed, "
                                "bad_request).", ("path", "outcome"), registry=registry)
        self.duration = Histogram("promop_admission_webhook_request_duration_seconds",
                                  "Time to answer one review, by path.", ("path",), registry=registry)
        self.reloads = Counter("promop_admission_webhook_certificate_reloads_total",
                               "Serving certificate reloads, by result (success, failure).", ("result",),
                               registry=registry)


def _admission(handler: Callable[[Mapping[str, Any]], dict]) -> Callable[[bytes], tuple[dict, str]]:
    def run(body: bytes) -> tuple[dict, str]:
        request = review.parse_review(body)["request"]
        response = handler(request)
        return review.envelope(response), "allowed" if response["allowed"] else "denied"
    return run


def _convert(body: bytes) -> tuple[dict, str]:
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise review.ReviewError(f"the body is not JSON: {exc}") from None
    try:
        out = conversion.review(data)
    except conversion.ConversionError as exc:
        raise review.ReviewError(str(exc)) from None
    return out, "converted" if out["response"]["result"]["status"] == "Success" else "failed"


def routes(options: Options) -> dict[str, Callable[[bytes], tuple[dict, str]]]:
    return {
        "/admission-prometheusrules/validate": _admission(lambda r: rules.validate(r, options.name_validation_scheme)),
        "/admission-prometheusrules/mutate": _admission(rules.mutate),
        "/admission-alertmanagerconfigs/validate": _admission(amconfig.validate),
        keda.PATH: _admission(lambda r: keda.validate(r, options.keda_lister)),
        "/convert": _convert,
    }


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    tls: ReloadingContext | None = None

    def get_request(self) -> tuple[socket.socket, Any]:
        sock, addr = super().get_request()
        if self.tls is not None:  # the handshake runs in the handler's thread, with the current certificate
            sock = self.tls.context().wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return sock, addr

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A failed handshake or a client gone mid-request: one log line, not a traceback."""
        import sys

        log.info("connection failed", **fields(client=client_address[0], err=str(sys.exc_info()[1])))


class WebhookServer:
    def __init__(self, host: str, port: int, tls: ReloadingContext | None, options: Options | None = None,
                 registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self.metrics = Metrics(self.registry)
        if tls is not None:
            tls.on_reload = lambda ok: self.metrics.reloads.labels("success" if ok else "failure").inc()
        self.routes = routes(options or Options())
        self._server = _Server((host, port), _make_handler(self))
        self._server.tls = tls
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> "WebhookServer":
        self._thread = threading.Thread(target=self._server.serve_forever, name="promop-admission", daemon=True)
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self._server.serve_forever()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread:
            self._thread.join(timeout=5)


def _make_handler(web: WebhookServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "promop-admission"
        protocol_version = "HTTP/1.1"
        timeout = 60  # an idle or stalled connection (TLS handshake included) does not hold a thread forever

        def do_GET(self) -> None:  # noqa: N802 (stdlib name)
            path = self.path.split("?", 1)[0]
            if path == "/healthz":
                self._send(200, b"ok\n")
            elif path == "/metrics":
                self._send(200, generate_latest(web.registry), CONTENT_TYPE_LATEST)
            else:
                self._send(404, b"not found: POST reviews to " + ", ".join(web.routes).encode() + b"\n")

        def do_POST(self) -> None:  # noqa: N802
            path = self.path.split("?", 1)[0]
            run = web.routes.get(path)
            length = int(self.headers.get("Content-Length") or 0)
            if run is None or length > MAX_BODY:
                self.rfile.read(min(length, MAX_BODY))
                self._send(404 if run is None else 413, b"not found\n" if run is None else b"body too large\n")
                return
            body = self.rfile.read(length)
            started = time.monotonic()
            try:
                out, outcome = run(body)
            except review.ReviewError as exc:
                web.metrics.requests.labels(path, "bad_request").inc()
                log.info("bad review", **fields(path=path, err=str(exc)))
                self._send(400, f"{exc}\n".encode())
                return
            web.metrics.duration.labels(path).observe(time.monotonic() - started)
            web.metrics.requests.labels(path, outcome).inc()
            log.debug("review answered", **fields(path=path, outcome=outcome))
            self._send(200, json.dumps(out).encode(), "application/json")

        def _send(self, code: int, body: bytes, ctype: str = "text/plain; charset=utf-8") -> None:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (stdlib signature)
            log.debug(format % args)

    return Handler
