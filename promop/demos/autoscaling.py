"""`promop demo autoscaling`: MemHpa end to end on this machine.

The API sandbox with its kubelet simulation, a real Prometheus (the
`prometheus` binary on PATH) scraping a simulated cAdvisor that reports each
demo pod's memory, a Deployment and a MemHpa, and a load that rises and falls.
Time runs `--speed` times faster for the controller (cool-downs of 3 and 5
minutes take seconds); each decision is printed with its reason as the
Deployment scales up and back down.

`promop adapter` runs in-process against the same Prometheus, registered in
the sandbox as the APIServices of metrics.k8s.io and custom.metrics.k8s.io:
`kubectl top pod` and `kubectl get --raw /apis/custom.metrics.k8s.io/...`
answer through the sandbox's aggregation, as in a cluster.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import yaml

MI = 1024 * 1024
LIMIT_MI = 100
NAME = "shop"
# (simulated minute, total memory of the workload in MiB): linear in between
LOAD = [(0, 60), (2, 60), (6, 420), (12, 420), (16, 40), (30, 40)]


CPU_CORES = 0.02   # each pod's simulated CPU use (metrics.k8s.io needs CPU and memory)
# irate, not rate: the demo's series are seconds old when it shows `kubectl top`, and rate() over a window
# longer than a series' life divides by the whole window
CUSTOM_METRIC = "memory_working_set_bytes"
ADAPTER_CONFIG = {
    "rules": [{  # the pods' memory as a custom metric too: pods/memory_working_set_bytes
        "seriesQuery": 'container_memory_working_set_bytes{namespace!="",pod!=""}',
        "resources": {"overrides": {"namespace": {"resource": "namespace"}, "pod": {"resource": "pod"}}},
        "name": {"matches": "^container_(.*)$", "as": "${1}"},
        "metricsQuery": 'sum(<<.Series>>{<<.LabelMatchers>>,container!=""}) by (<<.GroupBy>>)'}],
    "resourceRules": {
        "cpu": {"containerQuery": 'sum(irate(container_cpu_usage_seconds_total{<<.LabelMatchers>>,container!=""}[1m])) '
                                  "by (<<.GroupBy>>)",
                "nodeQuery": "sum(irate(container_cpu_usage_seconds_total{<<.LabelMatchers>>,id='/'}[1m])) "
                             "by (<<.GroupBy>>)",
                "resources": {"overrides": {"namespace": {"resource": "namespace"}, "pod": {"resource": "pod"}}},
                "containerLabel": "container"},
        "memory": {"containerQuery": 'sum(container_memory_working_set_bytes{<<.LabelMatchers>>,container!=""}) '
                                     "by (<<.GroupBy>>)",
                   "nodeQuery": "sum(container_memory_working_set_bytes{<<.LabelMatchers>>,id='/'}) by (<<.GroupBy>>)",
                   "resources": {"overrides": {"namespace": {"resource": "namespace"}, "pod": {"resource": "pod"}}},
                   "containerLabel": "container"},
        "window": "1m"},
}


def load_at(minute: float) -> float:
    for (m0, v0), (m1, v1) in zip(LOAD, LOAD[1:]):
        if m0 <= minute <= m1:
            return v0 + (v1 - v0) * (minute - m0) / (m1 - m0)
    return LOAD[-1][1]


class MemoryExporter:
    """A simulated cAdvisor: container_memory_working_set_bytes for each pod, the total load shared evenly."""

    def __init__(self) -> None:
        self.pods: list[str] = []
        self.total_mi = 0.0
        self.started = time.time()
        exporter = self

        class Handler(BaseHTTPRequestHandler):
            def handle(self) -> None:
                try:
                    super().handle()
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the scraper went away mid-answer (Ctrl-C stops Prometheus first): no traceback

            def do_GET(self) -> None:  # noqa: N802
                body = exporter.text().encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def text(self) -> str:
        pods = list(self.pods)
        lines = ["# TYPE container_memory_working_set_bytes gauge"]
        for pod in pods:
            value = self.total_mi * MI / len(pods)
            lines.append(f'container_memory_working_set_bytes{{namespace="default",pod="{pod}",container="app"}} '
                         f"{value:.0f}")
        lines.append("# TYPE container_cpu_usage_seconds_total counter")
        # The sample carries the time it was computed at: Prometheus would otherwise stamp it with the scrape's
        # start, and on a loaded machine the gap between the two varies enough to skew irate() by half.
        now = time.time()
        cpu_seconds = CPU_CORES * (now - self.started)
        for pod in pods:
            lines.append(f'container_cpu_usage_seconds_total{{namespace="default",pod="{pod}",container="app"}} '
                         f"{cpu_seconds:.6f} {int(now * 1000)}")
        return "\n".join(lines) + "\n"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_prometheus(binary: str, workdir: Path, target: str) -> tuple[subprocess.Popen, str]:
    import requests

    port = _free_port()
    config = {"global": {"scrape_interval": "1s", "scrape_timeout": "1s"},
              "scrape_configs": [{"job_name": "cadvisor", "honor_labels": True,
                                  "static_configs": [{"targets": [target]}]}]}
    (workdir / "prometheus.yml").write_text(yaml.safe_dump(config))
    log = open(workdir / "prometheus.log", "wb")  # noqa: SIM115 - kept open for the process
    proc = subprocess.Popen([binary, f"--config.file={workdir / 'prometheus.yml'}",
                             f"--storage.tsdb.path={workdir / 'data'}", f"--web.listen-address=127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=log)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"prometheus exited with {proc.returncode}; see {workdir / 'prometheus.log'}")
        try:
            if requests.get(f"{url}/-/ready", timeout=1).status_code == 200:
                return proc, url
        except requests.RequestException:
            pass
        time.sleep(0.1)
    proc.kill()
    raise RuntimeError(f"prometheus did not become ready in 60 s; see {workdir / 'prometheus.log'}")


def wait_scraped(url: str, timeout: float = 120.0) -> None:
    """Until Prometheus has scraped the exporter once (so the first decisions have data). A first
    scrape normally comes within seconds; the deadline is generous for a loaded machine."""
    import requests

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            body = requests.get(f"{url}/api/v1/query", params={"query": "container_memory_working_set_bytes"},
                                timeout=2).json()
            if body.get("data", {}).get("result"):
                return
        except (requests.RequestException, ValueError):
            pass
        time.sleep(0.2)
    raise RuntimeError(f"Prometheus did not scrape the simulated exporter within {timeout:.0f} s")


ADAPTER_APIS = (("metrics.k8s.io", "v1beta1"), ("custom.metrics.k8s.io", "v1beta2"),
                ("custom.metrics.k8s.io", "v1beta1"))


def start_adapter(client, kubeconfig: str, prom_url: str, workdir: Path):
    """`promop adapter` in-process over HTTPS, registered as the metrics APIServices (registered first, so the
    adapter finds the front proxy's CA in kube-system/extension-apiserver-authentication at its start)."""
    import argparse

    from promop.adapter.config import ConfigError
    from promop.adapter.main import StartupError, build
    from promop.adapter.flags import add_serve_flags
    from promop.kube.resources import Resource

    port = _free_port()
    client.create(Resource("", "v1", "namespaces", namespaced=False), {"metadata": {"name": "promop"}})
    client.create(Resource("", "v1", "services"), {
        "metadata": {"name": "promop-adapter"},
        "spec": {"clusterIP": "127.0.0.1", "ports": [{"name": "https", "port": port}]}}, "promop")
    for group, version in ADAPTER_APIS:
        client.create(Resource("apiregistration.k8s.io", "v1", "apiservices", namespaced=False), {
            "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": f"{version}.{group}"},
            "spec": {"group": group, "version": version, "groupPriorityMinimum": 100,
                     "versionPriority": 200 if version == "v1beta2" else 100, "insecureSkipTLSVerify": True,
                     "service": {"name": "promop-adapter", "namespace": "promop", "port": port}}})
    config = workdir / "adapter.yaml"
    config.write_text(yaml.safe_dump(ADAPTER_CONFIG, sort_keys=False))
    parser = argparse.ArgumentParser()
    add_serve_flags(parser)
    args = parser.parse_args([f"--config={config}", f"--prometheus-url={prom_url}", f"--kubeconfig={kubeconfig}",
                              f"--secure-port={port}", "--bind-address=127.0.0.1", f"--cert-dir={workdir / 'certs'}",
                              "--metrics-relist-interval=15s"])
    try:
        adapter, servers = build(args)
    except (StartupError, ConfigError, OSError) as exc:
        raise RuntimeError(f"promop adapter did not start: {exc}") from None
    adapter.start(watch_config=False)
    for server in servers:
        server.serve_in_background()
    return adapter, servers, port


def stop_adapter(adapter, servers) -> None:
    for server in servers:
        server.shutdown()
        server.server_close()
    adapter.stop()
    stop_lister = getattr(getattr(adapter, "lister", None), "stop", None)
    if stop_lister:
        stop_lister()


def wait_metrics_api(client, pods: list[str], timeout: float = 60.0) -> tuple[list[dict], list[dict]]:
    """(PodMetrics, custom metric values) of `pods`, read through the sandbox's aggregation once both answer."""
    from promop.adapter.lister import get_json

    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        try:
            resource = get_json(client, "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods")["items"]
            custom = get_json(client, f"/apis/custom.metrics.k8s.io/v1beta2/namespaces/default/pods/*/"
                                      f"{CUSTOM_METRIC}")["items"]
            if {i["metadata"]["name"] for i in resource} >= set(pods) and \
                    {i["describedObject"]["name"] for i in custom} >= set(pods):
                return resource, custom
            last = f"pods with metrics: {sorted(i['metadata']['name'] for i in resource)}"
        except Exception as exc:  # noqa: BLE001 - not up yet; said at the deadline
            last = str(exc)
        time.sleep(0.3)
    raise RuntimeError(f"the metrics APIs did not answer through the sandbox's aggregation in {timeout:.0f} s: {last}")


def show_metrics_api(client, kubeconfig: str, pods: list[str]) -> None:
    """Print that `kubectl top pod` works, with its output (or the same through the raw API without kubectl)."""
    resource, custom = wait_metrics_api(client, pods)
    print("metrics APIs: promop adapter registered as APIServices "
          + ", ".join(f"{v}.{g}" for g, v in ADAPTER_APIS) + " (through the sandbox's aggregation)")
    kubectl = shutil.which("kubectl")
    top = None
    if kubectl:
        # a discovery cache of its own: kubectl's shared one is keyed by host:port, and an earlier
        # sandbox on this port (without the metrics APIs) would make `top` say they are missing
        with tempfile.TemporaryDirectory(prefix="promop-demo-kubectl-") as cache:
            proc = subprocess.run([kubectl, f"--kubeconfig={kubeconfig}", "--cache-dir", cache,
                                   "top", "pod", "-n", "default"], capture_output=True, text=True, timeout=60)
        if proc.returncode == 0:
            top = proc.stdout.strip().splitlines()
        else:
            print(f"  kubectl top pod failed: {proc.stderr.strip()}")
    if top:
        print(f"  $ kubectl --kubeconfig {kubeconfig} top pod -n default")
        for line in top:
            print(f"    {line}")
    else:
        print("  GET /apis/metrics.k8s.io/v1beta1/namespaces/default/pods (what kubectl top pod reads):")
        for item in resource:
            usage = {k: v for c in item.get("containers") or [] for k, v in (c.get("usage") or {}).items()}
            print(f"    {item['metadata']['name']}  cpu {usage.get('cpu')}  memory {usage.get('memory')}")
    path = f"/apis/custom.metrics.k8s.io/v1beta2/namespaces/default/pods/*/{CUSTOM_METRIC}"
    print(f"  $ kubectl --kubeconfig {kubeconfig} get --raw '{path}'")
    for item in custom:
        print(f"    {item['describedObject']['name']}: {item['metric']['name']} = {item['value']}")
    sys.stdout.flush()


def create_objects(client, speed: float) -> None:
    """The MemHpa CRD, the Deployment it scales and the MemHpa itself."""
    from promop.autoscaler.crd import MEMHPAS, crd
    from promop.kube.resources import CRDS, Resource

    client.create(CRDS, crd())
    deployments = Resource("apps", "v1", "deployments", kind="Deployment")
    labels = {"app": NAME}
    client.create(deployments, {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": NAME},
        "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels}, "spec": {"containers": [{
                     "name": "app", "image": "shop:1",
                     "resources": {"limits": {"memory": f"{LIMIT_MI}Mi"}}}]}}}}, "default")
    client.create(MEMHPAS, {
        "apiVersion": "autoscaling.promop.dev/v1alpha1", "kind": "MemHpa", "metadata": {"name": NAME},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": NAME},
                 "minReplicas": 1, "maxReplicas": 6, "targetUtilizationPercentage": 60}}, "default")
    print(f"Deployment {NAME} (memory limit {LIMIT_MI}Mi per pod) and MemHpa {NAME}: target 60% of limits, "
          f"1..6 replicas, cool-down 3 min up / 5 min down; time runs {speed:g}x")


class Narrator:
    """Wraps the reconciler's sync: prints each decision that changes something, tracks the peak."""

    def __init__(self, exporter: "MemoryExporter", minute) -> None:
        self.exporter = exporter
        self.minute = minute  # () -> demo minutes since the load pattern started
        self.last_line = ""
        self.peak = 1
        self.final = 1

    def wrap(self, sync):
        def traced(key: str):
            decision = sync(key)
            if decision is not None:
                self.tell(decision)
            return decision
        return traced

    def tell(self, decision) -> None:
        m = decision.metrics[0]
        able = decision.condition("AbleToScale")
        if m.error:
            what = f"no decision: {m.error}"
        else:
            what = (f"{len(self.exporter.pods)} pods at {m.utilization}% of their limits -> proposal "
                    f"{decision.metric_replicas}")
        if decision.rescale:
            verdict = f"SCALE {decision.current_replicas} -> {decision.desired_replicas}: {decision.reason}"
        elif decision.cooldown_reason:
            verdict = f"hold at {decision.current_replicas}: {decision.cooldown_reason} ({able.message})"
        else:
            verdict = f"keep {decision.current_replicas}"
        line = f"{what}; {verdict}"
        if decision.rescale or line != self.last_line:
            minute = self.minute()
            print(f"[t+{int(minute):02d}:{int(minute % 1 * 60):02d}] load {load_at(minute):.0f}Mi: {line}", flush=True)
            self.last_line = line
        if decision.rescale:
            self.peak = max(self.peak, decision.desired_replicas)
            self.final = decision.desired_replicas


def _pod_names(sandbox) -> list[str]:
    pods = sandbox.registry.lookup("", "v1", "pods")
    return sorted(o["metadata"]["name"] for o in sandbox.api.list(pods, "default", None).objects)


def _wait_synced(app, sandbox, exporter: "MemoryExporter", stop: threading.Event) -> bool | None:
    """True once the autoscaler's caches synced, False after 60 s, None when stopped first."""
    deadline = time.monotonic() + 60
    while not (app.controller is not None and app.controller.synced()) and time.monotonic() < deadline:
        exporter.pods = _pod_names(sandbox)
        if stop.wait(0.05):
            return None
    return app.controller is not None and app.controller.synced()


def _play_load(sandbox, exporter: "MemoryExporter", narrator: Narrator, stop: threading.Event) -> None:
    """The load pattern, then (on a busy machine) up to 10 more minutes at the final load for the last scale-down."""
    end = LOAD[-1][0]
    while not stop.is_set() and (narrator.minute() < end or (narrator.final > 1 and narrator.minute() < end + 10)):
        exporter.total_mi = load_at(narrator.minute())
        exporter.pods = _pod_names(sandbox)
        stop.wait(0.1)


def run_demo(args) -> int:
    """Sandbox + kubelet + a real Prometheus + the autoscaler (+ the adapter for `kubectl top`), at `speed`."""
    binary = shutil.which("prometheus")
    if binary is None:
        print("promop demo autoscaling needs the `prometheus` binary on PATH (Debian: apt-get install "
              "prometheus); it scrapes the simulated memory exporter the demo serves")
        return 2
    from promop.host import logs
    from promop.host.signals import install_signal_handlers
    from promop.sandbox import Sandbox
    from promop.sandbox.kubelet import Kubelet

    logs.setup(getattr(args, "log_level", "warn"), "logfmt")
    speed = float(getattr(args, "speed", 30.0) or 30.0)
    workdir = Path(tempfile.mkdtemp(prefix="promop-demo-autoscaling-"))
    stop = threading.Event()
    install_signal_handlers(stop)
    parts = _Parts(Sandbox(port=0).start())
    parts.kubelet = Kubelet(parts.sandbox).start()
    parts.exporter = MemoryExporter()
    try:
        return _run(args, binary, speed, workdir, stop, parts)
    except RuntimeError as exc:
        print(f"error: {exc}")
        return 1
    finally:
        stop.set()
        parts.stop()


class _Parts:
    """What the demo started, stopped in reverse order whatever happened."""

    def __init__(self, sandbox) -> None:
        self.sandbox = sandbox
        self.kubelet = None
        self.exporter: MemoryExporter | None = None
        self.prometheus = None
        self.thread: threading.Thread | None = None
        self.adapter = None

    def stop(self) -> None:
        if self.thread is not None:
            self.thread.join(30)
        if self.adapter is not None:
            stop_adapter(*self.adapter[:2])
        if self.prometheus is not None:
            self.prometheus.terminate()
            try:
                self.prometheus.wait(15)
            except subprocess.TimeoutExpired:
                self.prometheus.kill()
        if self.exporter is not None:
            self.exporter.close()
        if self.kubelet is not None:
            self.kubelet.stop()
        self.sandbox.stop()


def _run(args, binary: str, speed: float, workdir: Path, stop: threading.Event, parts: _Parts) -> int:
    from promop.autoscaler.app import Autoscaler, Options
    from promop.kube.client import KubeClient
    from promop.prom import PrometheusClient

    sandbox, exporter = parts.sandbox, parts.exporter
    assert exporter is not None
    t0 = {"real": time.time()}

    def clock() -> float:  # the controller's time runs `speed` times faster, from when the demo starts
        return t0["real"] + (time.time() - t0["real"]) * speed

    parts.prometheus, prom_url = start_prometheus(binary, workdir, f"127.0.0.1:{exporter.port}")
    print(f"sandbox: Kubernetes API at {sandbox.url}; Prometheus at {prom_url} (data in {workdir})")
    client = KubeClient(sandbox.api_client())
    create_objects(client, speed)
    app = Autoscaler(Options(prometheus_url=prom_url, sync_period=1.0, listen_address="127.0.0.1:0"),
                     client=KubeClient(sandbox.api_client()),
                     prometheus=PrometheusClient(prom_url, timeout=5.0, retries=0), clock=clock)
    parts.thread = threading.Thread(target=lambda: app.run(stop), daemon=True)
    parts.thread.start()
    exporter.total_mi = load_at(0)
    synced = _wait_synced(app, sandbox, exporter, stop)
    if synced is None:
        return 0
    if not synced:
        print("error: the autoscaler did not start")
        return 1
    wait_scraped(prom_url)
    kc = sandbox.write_kubeconfig(workdir / "kubeconfig")
    parts.adapter = start_adapter(client, kc, prom_url, workdir)
    show_metrics_api(client, kc, exporter.pods)
    t0["real"] = time.time()
    narrator = Narrator(exporter, lambda: (clock() - t0["real"]) / 60)
    reconciler = app.controller.reconciler
    reconciler.sync = narrator.wrap(reconciler.sync)
    _play_load(sandbox, exporter, narrator, stop)
    if stop.is_set():
        return 0
    scaled = narrator.peak > 1 and narrator.final < narrator.peak
    print(f"done: peak {narrator.peak} replicas, back to {narrator.final}"
          + ("" if scaled else " (expected a scale up and back down)"))
    if getattr(args, "once", False):
        return 0 if scaled else 1
    print(f"kubeconfig: {kc}\n  kubectl --kubeconfig {kc} get memhpa,deploy,pods\n"
          f"  kubectl --kubeconfig {kc} top pod\nrunning until Ctrl-C", flush=True)
    while not stop.wait(0.5):
        exporter.pods = _pod_names(sandbox)
    return 0
