"""Adapter benchmarks: `python3 -m bench.adapter [--series 100000] [--repeats 3] [--requests 300]`.

1. Discovery of N series from a stub Prometheus serving /api/v1/series (cAdvisor-like label
   sets, answered per seriesQuery of the legacy default config): the adapter's discovery
   (streamed decode, reduced to what rules keep, registry built) against `json.loads` of the
   same bodies, each in its own process. Targets: time <= 3x json.loads; RSS growth <= 2x the
   body size.
2. A custom metrics request for 100 pods (`pods/*/metric`, a real Prometheus with backfilled
   data, the adapter as a process listing pods from the sandbox): latency through the adapter
   against the same PromQL sent straight to Prometheus, interleaved. Target: p50 overhead <= 2 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

ROOT = Path(__file__).resolve().parents[2]
NAMES = [f"container_{m}" for m in (
    "cpu_usage_seconds_total", "cpu_user_seconds_total", "cpu_system_seconds_total", "memory_working_set_bytes",
    "memory_rss", "memory_cache", "memory_usage_bytes", "network_receive_bytes_total",
    "network_transmit_bytes_total", "fs_reads_total", "fs_writes_total", "fs_usage_bytes", "spec_cpu_shares",
    "spec_memory_limit_bytes", "last_seen", "start_time_seconds", "threads", "processes", "sockets",
    "file_descriptors")]
APP_NAMES = ["http_requests_total", "http_request_duration_seconds_count", "http_request_duration_seconds_sum",
             "grpc_server_handled_total", "process_cpu_seconds_total", "process_resident_memory_bytes",
             "go_goroutines", "queue_depth", "jobs_processed_total", "cache_hits_total"]


def make_series(n: int, seed: int = 1) -> tuple[list[dict], list[dict]]:
    """(container series, app series): about 80% / 20% of n, cAdvisor-like label sets."""
    rnd = random.Random(seed)
    container, app = [], []
    for i in range(n):
        ns = f"ns-{i % 40}"
        pod = f"app-{i % 997}-{rnd.randrange(16**5):05x}"
        if i % 5:
            container.append({"__name__": NAMES[i % len(NAMES)], "container": f"c{i % 3}",
                              "id": f"/kubepods/burstable/pod{rnd.randrange(16**8):08x}/{i:x}",
                              "image": f"registry.example.com/team/app:{i % 17}", "instance": f"node-{i % 50}",
                              "job": "kubelet", "name": f"k8s_c{i % 3}_{pod}", "namespace": ns, "pod": pod})
        else:
            app.append({"__name__": APP_NAMES[i % len(APP_NAMES)], "instance": f"10.0.{i % 250}.{i % 200}:8080",
                        "job": "app", "namespace": ns, "pod": pod, "service": f"svc-{i % 60}",
                        "code": str(200 + (i % 4)), "method": "GET"})
    return container, app


class SeriesStub:
    """Answers /api/v1/series with the container or app body depending on match[]."""

    def __init__(self, container: list[dict], app: list[dict]) -> None:
        sep = (",", ":")
        self.bodies = {
            "container": json.dumps({"status": "success", "data": container}, separators=sep).encode(),
            "app": json.dumps({"status": "success", "data": app}, separators=sep).encode(),
        }
        self.size = sum(len(b) for b in self.bodies.values())
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802
                url = urlsplit(self.path)
                if url.path == "/size":
                    body = str(stub.size).encode()
                else:
                    match = (parse_qs(url.query).get("match[]") or [""])[0]
                    body = stub.bodies["container" if "container_" in match and "!~" not in match else "app"]
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def _child(mode: str, url: str) -> dict:
    out = subprocess.run([sys.executable, "-m", "bench.adapter.discovery_child", mode, url], capture_output=True,
                         text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=600)
    if out.returncode != 0:
        raise SystemExit(f"child {mode} failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def bench_discovery(n: int, repeats: int) -> dict:
    container, app = make_series(n)
    stub = SeriesStub(container, app)
    del container, app
    runs: dict[str, list[dict]] = {"json": [], "adapter": []}
    for _ in range(repeats):
        for mode in ("json", "adapter"):
            runs[mode].append(_child(mode, stub.url))
    med = {m: {k: statistics.median(r[k] for r in rs) for k in ("seconds", "parse_seconds", "rss_growth")}
           for m, rs in runs.items()}
    size = stub.size
    ratio_time = med["adapter"]["seconds"] / med["json"]["parse_seconds"]
    ratio_rss = med["adapter"]["rss_growth"] / size
    result = {
        "series": n, "body_mb": size / 1e6,
        "json_loads_s": med["json"]["parse_seconds"], "json_fetch_and_loads_s": med["json"]["seconds"],
        "json_rss_growth_mb": med["json"]["rss_growth"] / 1e6,
        "adapter_discovery_s": med["adapter"]["seconds"], "adapter_rss_growth_mb": med["adapter"]["rss_growth"] / 1e6,
        "time_ratio_vs_json_loads": ratio_time, "rss_growth_vs_body": ratio_rss,
        "time_target_met": ratio_time <= 3.0, "rss_target_met": ratio_rss <= 2.0,
        "pairs": [(j["parse_seconds"], a["seconds"]) for j, a in zip(runs["json"], runs["adapter"])],
    }
    stub.server.shutdown()
    return result


def bench_latency(requests_n: int, pods: int = 100, warmup: int = 30, idle_seconds: float = 2.0,
                  round_trips: int = 100) -> dict:
    import requests
    import yaml

    sys.path.insert(0, str(ROOT / "tests"))
    from prom.prom_fixtures import PrometheusServer, backfill, counter, free_port, wait_for

    from promop.sandbox import Sandbox

    tmp = Path(tempfile.mkdtemp(prefix="bench-adapter-"))
    now = int(time.time()) // 15 * 15
    series = [counter("http_requests_total", {"namespace": "bench", "pod": f"pod-{i:03d}", "verb": v},
                      now - 1800, now + 3600, 15, 1000, 0.5 + (i % 7) / 8) for i in range(pods) for v in ("GET", "PUT")]
    backfill(series, tmp / "data")
    prom = PrometheusServer(tmp, data_dir=tmp / "data").start()
    sandbox = Sandbox(port=0).start()
    kubeconfig = sandbox.write_kubeconfig(tmp / "kubeconfig")
    from promop.kube.client import KubeClient
    from promop.kube.resources import NAMESPACES, Resource

    kube = KubeClient.from_kubeconfig(kubeconfig)
    kube.create(NAMESPACES, {"metadata": {"name": "bench"}})
    pods_res = Resource("", "v1", "pods", True, "Pod")
    for i in range(pods):
        kube.create(pods_res, {"metadata": {"name": f"pod-{i:03d}", "namespace": "bench", "labels": {"app": "bench"}},
                               "spec": {"containers": [{"name": "c", "image": "x"}]}}, "bench")
    config = tmp / "config.yaml"
    config.write_text(yaml.safe_dump({"rules": [{
        "seriesQuery": 'http_requests_total{namespace!="",pod!=""}',
        "resources": {"overrides": {"namespace": {"resource": "namespace"}, "pod": {"resource": "pod"}}},
        "metricsQuery": "sum(rate(<<.Series>>{<<.LabelMatchers>>}[2m])) by (<<.GroupBy>>)"}]}))
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "promop", "adapter", f"--config={config}",
                             f"--prometheus-url={prom.url}", f"--kubeconfig={kubeconfig}", "--secure-port=0",
                             f"--insecure-port={port}", "--bind-address=127.0.0.1", "--log-level=warn"],
                            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                            stdout=subprocess.DEVNULL, stderr=open(tmp / "adapter.log", "w"))
    path = f"http://127.0.0.1:{port}/apis/custom.metrics.k8s.io/v1beta2/namespaces/bench/pods/*/http_requests_total"
    s = requests.Session()
    try:
        def up() -> bool:
            if proc.poll() is not None:
                raise RuntimeError((tmp / "adapter.log").read_text()[-3000:])
            try:
                return s.get(path, params={"labelSelector": "app=bench"}, timeout=5).status_code == 200
            except requests.RequestException:
                return False

        wait_for(up, 60, "the adapter")
        names = "|".join(f"pod-{i:03d}" for i in range(pods))
        query = f'sum(rate(http_requests_total{{namespace="bench",pod=~"{names}"}}[2m])) by (pod)'
        direct = s.get(prom.url + "/api/v1/query", params={"query": query}).json()
        got = s.get(path, params={"labelSelector": "app=bench"}).json()
        assert len(got["items"]) == pods == len(direct["data"]["result"]), (len(got["items"]),)
        for _ in range(warmup):   # warm up both (and let the pod informer sync)
            s.get(path, params={"labelSelector": "app=bench"})
            s.get(prom.url + "/api/v1/query", params={"query": query})
        # The adapter's CPU while it serves nothing: any busy thread there takes the GIL from every request
        # (a config-watch loop once cost 4 ms per request this way).
        cpu0, t0 = _cpu_seconds(proc.pid), time.monotonic()
        time.sleep(idle_seconds)  # a measuring window, not synchronisation
        idle_cpu = (_cpu_seconds(proc.pid) - cpu0) / (time.monotonic() - t0)
        adapter_ms, direct_ms = [], []
        cpu_before = _cpu_seconds(proc.pid)
        for _ in range(requests_n):
            t = time.perf_counter()
            r = s.get(path, params={"labelSelector": "app=bench"})
            adapter_ms.append((time.perf_counter() - t) * 1000)
            assert r.status_code == 200
            t = time.perf_counter()
            r = s.get(prom.url + "/api/v1/query", params={"query": query})
            direct_ms.append((time.perf_counter() - t) * 1000)
        cpu_per_request = (_cpu_seconds(proc.pid) - cpu_before) / requests_n
        health_ms, prom_health_ms = [], []
        for _ in range(round_trips):   # the cost of one round trip to each process, without any work
            t = time.perf_counter()
            s.get(f"http://127.0.0.1:{port}/healthz")
            health_ms.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            s.get(f"{prom.url}/-/healthy")
            prom_health_ms.append((time.perf_counter() - t) * 1000)
        metrics = s.get(f"http://127.0.0.1:{port}/metrics").text
        server_sum = server_count = 0.0
        for line in metrics.splitlines():
            if line.startswith('promop_adapter_request_duration_seconds_sum{api="custom"}'):
                server_sum = float(line.split()[-1])
            if line.startswith('promop_adapter_request_duration_seconds_count{api="custom"}'):
                server_count = float(line.split()[-1])
        # The adapter's own work per request, in this process: the provider (listing from its informer,
        # building the query, the same Prometheus call, the answer) against the bare client call.
        from promop.adapter.app import Adapter, Options
        from promop.adapter.config import load_config
        from promop.adapter.lister import KubeLister
        from promop.adapter.provider import Provider
        from promop.adapter.resources import ResourceMapper
        from promop.prom import PrometheusClient

        client = PrometheusClient(prom.url)
        inproc = Adapter(Options(str(config)), client, ResourceMapper(), load_config(str(config)))
        inproc.relist()
        lister = KubeLister(kube)
        provider = Provider(client, lister)

        def provide() -> None:
            provider.custom(inproc.state, "v1beta2", "pods", "bench", "*", "http_requests_total", None, "app=bench")
        for _ in range(warmup):
            provide()
        provider_ms, client_ms = [], []
        for _ in range(requests_n):
            t = time.perf_counter()
            provide()
            provider_ms.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            client.query(query)
            client_ms.append((time.perf_counter() - t) * 1000)
        lister.stop()
        a50, d50 = statistics.median(adapter_ms), statistics.median(direct_ms)
        return {"pods": pods, "requests": requests_n, "adapter_p50_ms": a50, "direct_p50_ms": d50,
                "overhead_p50_ms": a50 - d50,
                "adapter_p90_ms": statistics.quantiles(adapter_ms, n=10)[-1],
                "direct_p90_ms": statistics.quantiles(direct_ms, n=10)[-1],
                "healthz_p50_ms": statistics.median(health_ms),
                "prometheus_healthy_p50_ms": statistics.median(prom_health_ms),
                "load_average": os.getloadavg()[0],
                "inprocess_provider_p50_ms": statistics.median(provider_ms),
                "inprocess_client_p50_ms": statistics.median(client_ms),
                "server_mean_ms": 1000 * server_sum / max(1.0, server_count),
                "adapter_idle_cpu_percent": 100 * idle_cpu,
                "adapter_cpu_per_request_ms": 1000 * cpu_per_request,
                "target_met": a50 - d50 <= 2.0}
    finally:
        proc.terminate()
        proc.wait(10)
        prom.stop()
        sandbox.stop()


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    ap = argparse.ArgumentParser(prog="python3 -m bench.adapter")
    ap.add_argument("--series", type=int, default=100_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--requests", type=int, default=300)
    ap.add_argument("--only", choices=("discovery", "latency"))
    ap.add_argument("--pods", type=int, default=100, help="pods in the latency workload (default 100)")
    ap.add_argument("--warmup", type=int, default=30, help="warm-up requests before timing (default 30)")
    ap.add_argument("--idle-seconds", type=float, default=2.0,
                    help="window over which the idle adapter's CPU is measured (default 2)")
    ap.add_argument("--round-trips", type=int, default=100,
                    help="empty /healthz round trips timed against Prometheus' (default 100)")
    args = ap.parse_args()
    results = {}
    if args.only in (None, "discovery"):
        d = bench_discovery(args.series, args.repeats)
        results["discovery"] = d
        print(f"discovery of {d['series']} series ({d['body_mb']:.1f} MB of /api/v1/series answers), medians of "
              f"{args.repeats}:")
        print(f"  json.loads of the bodies      {d['json_loads_s'] * 1000:8.1f} ms   RSS growth "
              f"{d['json_rss_growth_mb']:7.1f} MB")
        print(f"  adapter discovery (fetch+all) {d['adapter_discovery_s'] * 1000:8.1f} ms   RSS growth "
              f"{d['adapter_rss_growth_mb']:7.1f} MB")
        print(f"  time ratio {d['time_ratio_vs_json_loads']:.2f}x (target <= 3x: "
              f"{'met' if d['time_target_met'] else 'MISSED'}); RSS growth {d['rss_growth_vs_body']:.2f}x body "
              f"(target <= 2x: {'met' if d['rss_target_met'] else 'MISSED'})")
    if args.only in (None, "latency"):
        lat = bench_latency(args.requests, args.pods, args.warmup, args.idle_seconds, args.round_trips)
        results["latency"] = lat
        print(f"custom metrics request for {lat['pods']} pods, {lat['requests']} interleaved pairs:")
        print(f"  straight to Prometheus p50 {lat['direct_p50_ms']:.2f} ms (p90 {lat['direct_p90_ms']:.2f})")
        print(f"  through the adapter    p50 {lat['adapter_p50_ms']:.2f} ms (p90 {lat['adapter_p90_ms']:.2f})")
        print(f"  empty round trips p50: adapter /healthz {lat['healthz_p50_ms']:.2f} ms, Prometheus /-/healthy "
              f"{lat['prometheus_healthy_p50_ms']:.2f} ms; time inside the adapter (mean) {lat['server_mean_ms']:.2f} ms;"
              f" load average {lat['load_average']:.1f} on {os.cpu_count()} CPUs; adapter CPU when idle "
              f"{lat['adapter_idle_cpu_percent']:.1f}%, per request {lat['adapter_cpu_per_request_ms']:.2f} ms")
        print(f"  in one process: provider p50 {lat['inprocess_provider_p50_ms']:.2f} ms against the bare client "
              f"query p50 {lat['inprocess_client_p50_ms']:.2f} ms (the adapter's own work: "
              f"{lat['inprocess_provider_p50_ms'] - lat['inprocess_client_p50_ms']:.2f} ms)")
        print(f"  overhead p50 {lat['overhead_p50_ms']:.2f} ms (target <= 2 ms: "
              f"{'met' if lat['target_met'] else 'MISSED'})")
    print(json.dumps(results, default=str))


if __name__ == "__main__":
    main()
