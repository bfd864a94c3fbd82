"""The ScaledObject controller on the sandbox with a stand-in Prometheus whose answer the test sets."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import yaml
from deadlines import scaled

from promop.autoscaler.keda.controller import KedaController
from promop.autoscaler.keda.resources import DEPLOYMENTS, HPAS, SCALEDOBJECTS
from promop.kube.client import KubeClient
from promop.kube.errors import ApiError
from promop.kube.resources import CRDS, EVENTS

ROOT = Path(__file__).resolve().parents[2]


def wait_for(check, timeout: float = 20.0, what: str = "condition", interval: float = 0.05):
    deadline = time.monotonic() + scaled(timeout)
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {scaled(timeout)}s waiting for {what}")
        time.sleep(interval)


class StandInPrometheus:
    """/api/v1/query answers a one-sample vector per query; `values[query]` sets it (None: empty vector,
    an int: that HTTP status). Counts the requests per query."""

    def __init__(self) -> None:
        self.values: dict[str, object] = {}
        self.requests: dict[str, int] = {}
        self.headers: list[dict] = []
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                url = urlsplit(self.path)
                q = parse_qs(url.query).get("query", [""])[0]
                with outer.lock:
                    outer.requests[q] = outer.requests.get(q, 0) + 1
                    outer.headers.append(dict(self.headers))
                    value = outer.values.get(q, "0")
                if isinstance(value, int):
                    body, code = b'{"status":"error"}', value
                else:
                    result = [] if value is None else [{"metric": {}, "value": [time.time(), str(value)]}]
                    body, code = json.dumps({"status": "success", "data": {"resultType": "vector",
                                                                         "result": result}}).encode(), 200
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def set(self, query: str, value: object) -> None:
        with self.lock:
            self.values[query] = value

    def count(self, query: str) -> int:
        with self.lock:
            return self.requests.get(query, 0)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def keda_crds() -> list[dict]:
    return [yaml.safe_load(p.read_text()) for p in sorted((ROOT / "crds").glob("keda.sh_*.yaml"))]


def deployment(name: str, replicas: int, env: dict | None = None) -> dict:
    labels = {"app": name}
    container = {"name": "app", "image": "demo"}
    if env:
        container["env"] = [{"name": k, "value": v} for k, v in env.items()]
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}}}}


def scaled_object(name: str, target: str, server: str, query: str, **spec) -> dict:
    body = {"scaleTargetRef": {"name": target}, "pollingInterval": 1,
            "triggers": [{"type": "prometheus", "metadata": {"serverAddress": server, "query": query,
                                                             "threshold": "10"}}]}
    body.update(spec)
    return {"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject", "metadata": {"name": name},
            "spec": body}


class KedaHarness:
    def __init__(self, sandbox, namespace: str = "default") -> None:
        self.sandbox = sandbox
        self.ns = namespace
        self.client = KubeClient(sandbox.api_client())
        for crd in keda_crds():
            self.client.create(CRDS, crd)
        self.prom = StandInPrometheus()
        self.controller: KedaController | None = None

    def start(self, **kw) -> KedaController:
        ctl = KedaController(KubeClient(self.sandbox.api_client()), loop_workers=4,
                             informer_kwargs={"backoff_base": 0.05, "backoff_cap": 0.5}, **kw)
        ctl.start_informers()
        assert ctl.wait_for_sync(scaled(20)), ctl.readiness()
        ctl.start_workers()
        self.controller = ctl
        return ctl

    def close(self) -> None:
        if self.controller is not None:
            self.controller.stop(2)
        self.prom.close()
        self.client.close()

    # -- reads --
    def so(self, name: str) -> dict | None:
        try:
            return self.client.get(SCALEDOBJECTS, name, self.ns)
        except ApiError:
            return None

    def condition(self, name: str, type_: str) -> dict:
        so = self.so(name) or {}
        return next((c for c in (so.get("status") or {}).get("conditions") or [] if c.get("type") == type_), {})

    def replicas(self, name: str) -> int:
        return self.client.get(DEPLOYMENTS, name, self.ns)["spec"].get("replicas", 1)

    def hpa(self, name: str) -> dict | None:
        try:
            return self.client.get(HPAS, name, self.ns)
        except ApiError:
            return None

    def events(self, reason: str | None = None) -> list[dict]:
        items = self.client.list(EVENTS, self.ns)["items"]
        return [e for e in items if reason is None or e.get("reason") == reason]
