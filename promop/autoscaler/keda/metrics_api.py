"""The controller's internal metrics endpoint (`--keda-metrics-address`, default :9666).

KEDA's adapter asks its operator over gRPC (GetMetrics on :9666) because the operator holds the
scalers and their health; `promop adapter --keda-metrics-url` asks us the same question over
plain HTTP:

    GET /keda/v1/namespaces/<ns>/scaledobjects/<name>/metrics/<metric>
    200 ExternalMetricValueList | 4xx/5xx {"message": "..."} (the text the HPA's event shows)

and, for `promop keda explain` (it counts no failure, queries nothing):

    GET /keda/v1/namespaces/<ns>/scaledobjects/<name>/lastgood
    200 {"lastGood": {<metric>: {value, at, failingSince, servedSince, serving, ...}}}
"""

from __future__ import annotations

import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable
from urllib.parse import unquote

import orjson

from promop.host.logs import fields

log = logging.getLogger("promop.autoscaler.keda")


class MetricError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


# (namespace, scaledobject, metric) -> ExternalMetricValueList; raises MetricError
Answer = Callable[[str, str, str], dict]
# (namespace, scaledobject) -> {"lastGood": {...}}; raises MetricError
Detail = Callable[[str, str], dict]


class MetricsEndpoint:
    def __init__(self, host: str, port: int, answer: Answer, detail: Detail | None = None) -> None:
        self.answer = answer
        self.detail = detail
        self._server = ThreadingHTTPServer((host, port), _handler(self))
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> "MetricsEndpoint":
        self._thread = threading.Thread(target=self._server.serve_forever, name="keda-metrics", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread:
            self._thread.join(5)


def route(path: str) -> tuple[str, str, str] | None:
    parts = [unquote(p) for p in path.split("?", 1)[0].strip("/").split("/")]
    if len(parts) == 8 and parts[:3] == ["keda", "v1", "namespaces"] and parts[4] == "scaledobjects" \
            and parts[6] == "metrics":
        return parts[3], parts[5], parts[7]
    return None


def detail_route(path: str) -> tuple[str, str] | None:
    parts = [unquote(p) for p in path.split("?", 1)[0].strip("/").split("/")]
    if len(parts) == 7 and parts[:3] == ["keda", "v1", "namespaces"] and parts[4] == "scaledobjects" \
            and parts[6] == "lastgood":
        return parts[3], parts[5]
    return None


def _handler(endpoint: MetricsEndpoint) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:  # noqa: N802 (stdlib name)
            target = route(self.path)
            detail = detail_route(self.path) if endpoint.detail is not None else None
            if detail is not None:
                self._answer(lambda: endpoint.detail(*detail))
                return
            if target is None:
                self._send(404, {"message": "not found: GET /keda/v1/namespaces/<ns>/scaledobjects/<name>/metrics/"
                                            "<metric>"})
                return
            self._answer(lambda: endpoint.answer(*target))

        def _answer(self, make: Callable[[], dict]) -> None:
            try:
                self._send(200, make())
            except MetricError as exc:
                self._send(exc.code, {"message": str(exc)})
            except Exception as exc:  # noqa: BLE001 - a bug answers 500, the server goes on
                log.exception("metrics request failed", **fields(path=self.path))
                self._send(500, {"message": f"internal error: {exc}"})

        def _send(self, code: int, body: dict) -> None:
            data = orjson.dumps(body)
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (stdlib signature)
            log.debug(format % args)

    return Handler
