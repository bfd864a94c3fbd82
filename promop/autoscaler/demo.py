"""`promop demo autoscaling`: MemHpa end to end on this machine.

The API sandbox with its kubelet simulation, a real Prometheus (the
`prometheus` binary on PATH) scraping a simulated cAdvisor that reports each
demo pod's memory, a Deployment and a MemHpa, and a load that rises and falls.
Time runs `--speed` times faster for the controller (cool-downs of 3 and 5
minutes take seconds); each decision is printed with its reason as the
Deployment scales up and back down.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
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
        exporter = self

        class Handler(BaseHTTPRequestHandler):
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


def wait_scraped(url: str, timeout: float = 30.0) -> None:
    """Until Prometheus has scraped the exporter once (so the first decisions have data)."""
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


def run_demo(args) -> int:
    binary = shutil.which("prometheus")
    if binary is None:
        print("promop demo autoscaling needs the `prometheus` binary on PATH (Debian: apt-get install "
              "prometheus); it scrapes the simulated memory exporter the demo serves")
        return 2
    from promop.autoscaler.app import Autoscaler, Options
    from promop.autoscaler.crd import MEMHPAS, crd
    from promop.commands.run import install_signal_handlers
    from promop.kube.client import KubeClient
    from promop.kube.resources import CRDS, Resource
    from promop.operator import logs
    from promop.prom import PrometheusClient
    from promop.sandbox import Sandbox
    from promop.sandbox.kubelet import Kubelet

    logs.setup(getattr(args, "log_level", "warn"), "logfmt")
    speed = float(getattr(args, "speed", 30.0) or 30.0)
    workdir = Path(tempfile.mkdtemp(prefix="promop-demo-autoscaling-"))
    stop = threading.Event()
    install_signal_handlers(stop)
    sandbox = Sandbox(port=0).start()
    kubelet = Kubelet(sandbox).start()
    exporter = MemoryExporter()
    prom_proc = None
    thread = None
    t0 = {"real": time.time()}

    def clock() -> float:  # the controller's time runs `speed` times faster, from when the demo starts
        return t0["real"] + (time.time() - t0["real"]) * speed

    try:
        prom_proc, prom_url = start_prometheus(binary, workdir, f"127.0.0.1:{exporter.port}")
        print(f"sandbox: Kubernetes API at {sandbox.url}; Prometheus at {prom_url} (data in {workdir})")
        client = KubeClient(sandbox.api_client())
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
        app = Autoscaler(Options(prometheus_url=prom_url, sync_period=1.0, listen_address="127.0.0.1:0"),
                         client=KubeClient(sandbox.api_client()),
                         prometheus=PrometheusClient(prom_url, timeout=5.0, retries=0), clock=clock)
        result: dict = {}
        thread = threading.Thread(target=lambda: result.setdefault("rc", app.run(stop)), daemon=True)
        thread.start()
        pods_rt = sandbox.registry.lookup("", "v1", "pods")
        exporter.total_mi = load_at(0)
        deadline = time.monotonic() + 60
        while not (app.controller is not None and app.controller.synced()) and time.monotonic() < deadline:
            exporter.pods = sorted(o["metadata"]["name"] for o in sandbox.api.list(pods_rt, "default", None).objects)
            if stop.wait(0.05):
                return 0
        if app.controller is None or not app.controller.synced():
            print("error: the autoscaler did not start")
            return 1
        wait_scraped(prom_url)
        t0["real"] = time.time()
        reconciler = app.controller.reconciler
        original = reconciler.sync
        last = {"line": ""}
        peak = {"max": 1, "final": 1}

        def minute() -> float:
            return (clock() - t0["real"]) / 60

        def traced(key: str):
            decision = original(key)
            if decision is None:
                return decision
            m = decision.metrics[0]
            able = decision.condition("AbleToScale")
            if m.error:
                what = f"no decision: {m.error}"
            else:
                what = (f"{len(exporter.pods)} pods at {m.utilization}% of their limits -> proposal "
                        f"{decision.metric_replicas}")
            if decision.rescale:
                verdict = (f"SCALE {decision.current_replicas} -> {decision.desired_replicas}: {decision.reason}")
            elif decision.cooldown_reason:
                verdict = f"hold at {decision.current_replicas}: {decision.cooldown_reason} ({able.message})"
            else:
                verdict = f"keep {decision.current_replicas}"
            line = f"{what}; {verdict}"
            if decision.rescale or line != last["line"]:
                print(f"[t+{int(minute()):02d}:{int(minute() % 1 * 60):02d}] load {load_at(minute()):.0f}Mi: {line}",
                      flush=True)
                last["line"] = line
            if decision.rescale:
                peak["max"] = max(peak["max"], decision.desired_replicas)
                peak["final"] = decision.desired_replicas
            return decision

        reconciler.sync = traced
        end = LOAD[-1][0]
        # the pattern, then (on a busy machine) up to 10 more minutes at the final load for the last scale-down
        while not stop.is_set() and (minute() < end or (peak["final"] > 1 and minute() < end + 10)):
            exporter.total_mi = load_at(minute())
            exporter.pods = sorted(o["metadata"]["name"] for o in sandbox.api.list(pods_rt, "default", None).objects)
            stop.wait(0.1)
        if stop.is_set():
            return 0
        scaled = peak["max"] > 1 and peak["final"] < peak["max"]
        print(f"done: peak {peak['max']} replicas, back to {peak['final']}"
              + ("" if scaled else " (expected a scale up and back down)"))
        if getattr(args, "once", False):
            return 0 if scaled else 1
        kc = sandbox.write_kubeconfig(workdir / "kubeconfig")
        print(f"kubeconfig: {kc}\n  kubectl --kubeconfig {kc} get memhpa,deploy,pods\nrunning until Ctrl-C",
              flush=True)
        while not stop.wait(0.5):
            exporter.pods = sorted(o["metadata"]["name"] for o in sandbox.api.list(pods_rt, "default", None).objects)
        return 0
    except RuntimeError as exc:
        print(f"error: {exc}")
        return 1
    finally:
        stop.set()
        if thread is not None:
            thread.join(30)
        if prom_proc is not None:
            prom_proc.terminate()
            try:
                prom_proc.wait(15)
            except subprocess.TimeoutExpired:
                prom_proc.kill()
        exporter.close()
        kubelet.stop()
        sandbox.stop()
