"""What test_keda_pods.py puts on the real node beside promop's autoscaler and adapter bundles.

No pytest here (a conftest-free helper, like components_kit.py):
- `StandInPrometheus`: a Prometheus HTTP API the test answers itself, listening on the node's
  pod-bridge address (10.244.0.1, the kit's `kn0`), so the autoscaler POD reaches it as it would a
  Prometheus Service, and the test changes the value at will. It records which addresses asked:
  the test checks that the queries came from the autoscaler's pods, not from the host;
- `scaled_app_manifests`: a Deployment of real busybox pods (`sleep`, Ready once running) at 0
  replicas and the ScaledObject on it, as KEDA's docs write one;
- `so_columns`: `kubectl get so` as a user reads it (the CRD's printer columns, header -> value).
"""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import yaml

from .components_kit import BUSYBOX_IMAGE, NODE_IP


class StandInPrometheus:
    """`/api/v1/query` answers one sample for `query` (the value `set` last), an empty vector for any
    other query; every other `/api/v1/...` path (the adapter's series discovery) an empty list.
    GET and POST (form) both work, as in Prometheus."""

    def __init__(self, query: str, value: str = "0", host: str = NODE_IP) -> None:
        self.query, self.value = query, value
        self.clients: dict[str, int] = {}       # client address -> queries of `query` it sent
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                self.answer(urlsplit(self.path).query)

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                self.answer(self.rfile.read(length).decode())

            def answer(self, form: str) -> None:
                path = urlsplit(self.path).path
                body = outer.body(path, parse_qs(form).get("query", [""])[0], self.client_address[0])
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer((host, 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True, name="stand-in-prometheus").start()
        self.url = f"http://{host}:{self.server.server_address[1]}"

    def body(self, path: str, query: str, client: str) -> dict:
        if path != "/api/v1/query":
            return {"status": "success", "data": []}
        with self.lock:
            value = self.value if query == self.query else None
            if value is not None:
                self.clients[client] = self.clients.get(client, 0) + 1
        result = [] if value is None else [{"metric": {}, "value": [time.time(), value]}]
        return {"status": "success", "data": {"resultType": "vector", "result": result}}

    def set(self, value: str) -> None:
        with self.lock:
            self.value = value

    def asked_by(self) -> dict[str, int]:
        with self.lock:
            return dict(self.clients)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def scaled_app_manifests(namespace: str, name: str, prometheus_url: str, query: str, *,
                         max_replicas: int, threshold: int) -> str:
    """A Deployment of busybox pods at 0 replicas, and a ScaledObject (prometheus trigger) on it.

    pollingInterval 1 s and cooldownPeriod 5 s keep the test short; everything else is KEDA's
    default (minReplicaCount 0, activationThreshold 0, an AverageValue target)."""
    labels = {"app": name}
    deployment = {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace},
        "spec": {"replicas": 0, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels}, "spec": {
                     # `sleep` as PID 1 ignores SIGTERM: a short grace period lets 0 come quickly
                     "terminationGracePeriodSeconds": 1,
                     "containers": [{"name": "app", "image": BUSYBOX_IMAGE, "command": ["sleep", "3600"],
                                     "resources": {"requests": {"cpu": "5m", "memory": "8Mi"}}}]}}}}
    scaled_object = {
        "apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"scaleTargetRef": {"name": name}, "pollingInterval": 1, "cooldownPeriod": 5,
                 "minReplicaCount": 0, "maxReplicaCount": max_replicas,
                 "triggers": [{"type": "prometheus", "metadata": {
                     "serverAddress": prometheus_url, "query": query, "threshold": str(threshold)}}]}}
    return yaml.safe_dump_all([deployment, scaled_object], sort_keys=False)


def so_columns(kubectl_output: str) -> dict[str, str]:
    """The one row of `kubectl get so NAME` as {column header: cell}.

    kubectl aligns every cell under the start of its header (a tabwriter), and headers are single
    words: each cell is the row's text from its header's start to the next header's start, so an
    empty cell reads as "" and never shifts the others."""
    lines = [line for line in kubectl_output.splitlines() if line.strip()]
    if len(lines) != 2:
        raise AssertionError(f"kubectl get so: expected a header and one row, got {kubectl_output!r}")
    header, row = lines
    starts = [(m.start(), m.group()) for m in re.finditer(r"\S+", header)]
    ends = [s for s, _ in starts[1:]] + [max(len(row), len(header))]
    return {name: row[begin:end].strip() for (begin, name), end in zip(starts, ends)}
