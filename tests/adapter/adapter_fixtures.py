"""A real Prometheus holding cluster-like series, and the adapter in-process in front of it.

The data (backfilled with promtool, every 15 s from 30 min ago to 30 min ahead, so
"now" always has fresh samples): request counters per pod, cAdvisor CPU and memory
per container and per node, a queue gauge. Expected values are written in the tests
from these numbers, never from the adapter's output.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable, Iterator

import pytest
import requests
import yaml

from prom.prom_fixtures import (  # noqa: F401 - fixtures re-exported
    PrometheusServer, Series, counter, exporter_factory, gauge, prometheus_factory,
)

STEP = 15
MI = 1024 * 1024

# (namespace, pod, container, requests/s by verb, cpu cores, memory bytes or None)
PODS = [
    ("shop", "web-1", "app", {"GET": 1.5, "POST": 0.25}, 0.25, 64 * MI),
    ("shop", "web-1", "sidecar", {}, 0.05, 16 * MI),
    ("shop", "web-2", "app", {"GET": 2.25, "POST": 0.5}, 0.5, 128 * MI),
    ("backend", "api-1", "app", {"GET": 0.125}, 0.125, 100_000_000),
    ("backend", "api-2", "app", {}, 0.3, None),            # no memory: skipped by metrics.k8s.io
]
# node: (cpu cores or None, memory bytes or None)
NODES = {"node-a": (1.5, 2 * 1024 * MI), "node-b": (0.75, 1536 * MI), "node-c": (None, 512 * MI)}
QUEUES = [("shop", "orders", "web", 42.0), ("shop", "emails", "web", 7.5), ("backend", "jobs", "api", 3.0)]

POD_OBJECTS = {
    "pods": [
        {"metadata": {"name": "web-1", "namespace": "shop", "labels": {"app": "web", "tier": "front"}},
         "status": {"phase": "Running"}},
        {"metadata": {"name": "web-2", "namespace": "shop", "labels": {"app": "web", "tier": "front"}},
         "status": {"phase": "Running"}},
        {"metadata": {"name": "web-3", "namespace": "shop", "labels": {"app": "web"}},
         "status": {"phase": "Running"}},   # no series at all
        {"metadata": {"name": "api-1", "namespace": "backend", "labels": {"app": "api"}},
         "status": {"phase": "Running"}},
        {"metadata": {"name": "api-2", "namespace": "backend", "labels": {"app": "api"}},
         "status": {"phase": "Running"}},
    ],
    "nodes": [{"metadata": {"name": n, "labels": {"zone": "a" if n != "node-b" else "b"}}} for n in sorted(NODES)],
    "namespaces": [{"metadata": {"name": "shop"}}, {"metadata": {"name": "backend"}}],
    "deployments": [{"metadata": {"name": "web", "namespace": "shop", "labels": {"app": "web"}}},
                    {"metadata": {"name": "api", "namespace": "backend", "labels": {"app": "api"}}}],
}

CONFIG = {
    "rules": [
        {"seriesQuery": 'http_requests_total{namespace!="",pod!=""}',
         "resources": {"overrides": {"namespace": {"resource": "namespace"}, "pod": {"resource": "pod"}}},
         "name": {"matches": "^(.*)_total$", "as": "${1}_per_second"},
         "metricsQuery": "sum(rate(<<.Series>>{<<.LabelMatchers>>}[2m])) by (<<.GroupBy>>)"},
        {"seriesQuery": '{__name__=~"^queue_.*",namespace!=""}',
         "resources": {"template": "<<.Resource>>"},
         "metricsQuery": "sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)"},
    ],
    "externalRules": [
        {"seriesQuery": '{__name__="queue_depth",queue!=""}',
         "resources": {"overrides": {"namespace": {"resource": "namespace"}}},
         "metricsQuery": "sum(<<.Series>>{<<.LabelMatchers>>}) by (queue)"},
        {"seriesQuery": '{__name__="queue_depth",queue!=""}',
         "resources": {"namespaced": False},
         "name": {"matches": "^queue_depth$", "as": "all_queues_depth"},
         "metricsQuery": "sum(<<.Series>>{<<.LabelMatchers>>})"},
    ],
    "resourceRules": {
        "cpu": {"containerQuery": 'sum(rate(container_cpu_usage_seconds_total{<<.LabelMatchers>>,container!=""}[2m])) by (<<.GroupBy>>)',
                "nodeQuery": "sum(rate(container_cpu_usage_seconds_total{<<.LabelMatchers>>,id='/'}[2m])) by (<<.GroupBy>>)",
                "resources": {"overrides": {"namespace": {"resource": "namespace"}, "pod": {"resource": "pod"},
                                            "instance": {"resource": "node"}}},
                "containerLabel": "container"},
        "memory": {"containerQuery": 'sum(container_memory_working_set_bytes{<<.LabelMatchers>>,container!=""}) by (<<.GroupBy>>)',
                   "nodeQuery": "sum(container_memory_working_set_bytes{<<.LabelMatchers>>,id='/'}) by (<<.GroupBy>>)",
                   "resources": {"overrides": {"namespace": {"resource": "namespace"}, "pod": {"resource": "pod"},
                                               "instance": {"resource": "node"}}},
                   "containerLabel": "container"},
        "window": "2m",
    },
}


def cluster_series(now: float | None = None) -> list[Series]:
    now = now or time.time()
    start = (int(now) // STEP) * STEP - 1800
    end = start + 3600
    out: list[Series] = []
    for ns, pod, container, verbs, cpu, mem in PODS:
        base = {"namespace": ns, "pod": pod, "container": container}
        for verb, rate in verbs.items():
            out.append(counter("http_requests_total", {**base, "verb": verb}, start, end, STEP, 10_000, rate))
        out.append(counter("container_cpu_usage_seconds_total", {**base, "instance": "node-a", "id": f"/{pod}/{container}"},
                           start, end, STEP, 5_000, cpu))
        if mem is not None:
            out.append(gauge("container_memory_working_set_bytes", {**base, "instance": "node-a", "id": f"/{pod}/{container}"},
                             start, end, STEP, mem))
    for node, (cpu, mem) in NODES.items():
        if cpu is not None:
            out.append(counter("container_cpu_usage_seconds_total", {"id": "/", "instance": node}, start, end, STEP,
                               50_000, cpu))
        if mem is not None:
            out.append(gauge("container_memory_working_set_bytes", {"id": "/", "instance": node}, start, end, STEP, mem))
    for ns, queue, deployment, depth in QUEUES:
        out.append(gauge("queue_depth", {"namespace": ns, "queue": queue, "deployment": deployment},
                         start, end, STEP, depth))
    out.append(gauge("unrelated_gauge", {"job": "x"}, start, end, STEP, 1))
    return out


def parse_quantity(q: str) -> float:
    """An independent reading of a Kubernetes quantity string."""
    suffixes = {"m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "Ki": 1024, "Mi": 1024**2, "Gi": 1024**3}
    for s in sorted(suffixes, key=len, reverse=True):
        if q.endswith(s):
            return float(q[: -len(s)]) * suffixes[s]
    return float(q)


@pytest.fixture
def cluster_prom(prometheus_factory) -> PrometheusServer:  # noqa: F811
    return prometheus_factory(cluster_series())


def write_config(path: Path, config: dict = CONFIG) -> Path:
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


class RunningAdapter:
    def __init__(self, adapter, server, provider) -> None:
        self.adapter = adapter
        self.server = server
        self.provider = provider
        self.url = f"http://127.0.0.1:{server.port}"
        self.session = requests.Session()

    def get(self, path: str, **params) -> requests.Response:
        return self.session.get(self.url + path, params=params or None, timeout=30)

    def json(self, path: str, **params) -> dict:
        r = self.get(path, **params)
        assert r.status_code == 200, (r.status_code, r.text)
        return r.json()


@pytest.fixture
def adapter_factory(tmp_path: Path) -> Iterator[Callable[..., RunningAdapter]]:
    """make(prom_url, config=CONFIG, objects=POD_OBJECTS) → a started in-process adapter on plain HTTP."""
    from promop.adapter.app import Adapter, Options
    from promop.adapter.config import load_config
    from promop.adapter.lister import StaticLister
    from promop.adapter.provider import Provider
    from promop.adapter.resources import ResourceMapper
    from promop.adapter.server import AdapterServer
    from promop.prom import PrometheusClient

    made: list[RunningAdapter] = []

    def make(prom_url: str, config: dict | str = CONFIG, objects: dict | None = None, relist: float = 600,
             start: bool = True, lister=None) -> RunningAdapter:
        path = tmp_path / f"config-{len(made)}.yaml"
        if isinstance(config, str):
            path.write_text(config)
        else:
            write_config(path, config)
        prom = PrometheusClient(prom_url, timeout=10, retries=0)
        adapter = Adapter(Options(str(path), relist_interval=relist), prom, ResourceMapper(), load_config(str(path)))
        provider = Provider(prom, lister or StaticLister(POD_OBJECTS if objects is None else objects))
        server = AdapterServer(("127.0.0.1", 0), adapter, provider)
        server.serve_in_background()
        running = RunningAdapter(adapter, server, provider)
        made.append(running)
        if start:
            assert adapter.relist() is not None, "first discovery failed"
        return running

    yield make
    for r in made:
        r.server.shutdown()
        r.server.server_close()
        r.adapter.stop()


class FailingProxy:
    """Forwards to Prometheus; answers 503 for paths starting with any of `fail_prefixes`."""

    def __init__(self, upstream: str) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.upstream = upstream
        self.fail_prefixes: tuple[str, ...] = ()
        self.session = requests.Session()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                if self.path.startswith(proxy.fail_prefixes or ("\0",)):
                    status, out = 503, b'{"status":"error","errorType":"unavailable","error":"injected failure"}'
                else:
                    r = proxy.session.request(self.command, proxy.upstream + self.path, data=body,
                                              headers={"Content-Type": self.headers.get("Content-Type", "")})
                    status, out = r.status_code, r.content
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            do_GET = do_POST = _handle

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
