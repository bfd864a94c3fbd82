"""A sandbox with the MemHpa CRD, the kubelet simulation, a memory exporter scraped by a real Prometheus,
and the autoscaler running in-process with a clock the test can move forward."""

from __future__ import annotations

import threading
import time

from deadlines import scaled

from promop.autoscaler.app import Autoscaler, Options
from promop.autoscaler.crd import MEMHPAS, crd
from promop.kube.client import KubeClient
from promop.kube.resources import CRDS, EVENTS, PODS, Resource
from promop.prom import PrometheusClient
from promop.sandbox.kubelet import Kubelet

MI = 1024 * 1024
AGENT = "promop-autoscaler-under-test"
DEPLOYMENTS = Resource("apps", "v1", "deployments", kind="Deployment")


def wait_for(check, timeout: float = 20.0, what: str = "condition", interval: float = 0.05):
    """Poll `check` until truthy; `timeout` times PROMOP_TEST_TIMEOUT_SCALE (deadlines.py)."""
    timeout = scaled(timeout)
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


def deployment(name: str, replicas: int, limit: str = "100Mi") -> dict:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "app", "image": "demo",
                                                           "resources": {"limits": {"memory": limit},
                                                                         "requests": {"memory": limit}}}]}}}}


def memhpa(name: str, target: str, **spec) -> dict:
    body = {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target},
            "minReplicas": 1, "maxReplicas": 8, "targetUtilizationPercentage": 50}
    body.update(spec)
    return {"apiVersion": "autoscaling.promop.dev/v1alpha1", "kind": "MemHpa", "metadata": {"name": name},
            "spec": body}


class Harness:
    def __init__(self, sandbox, kubeconfig: str, exporter, namespace: str = "default") -> None:
        self.sandbox = sandbox
        self.kubeconfig = kubeconfig
        self.exporter = exporter
        self.namespace = namespace
        self.client = KubeClient.from_kubeconfig(kubeconfig)
        self.client.create(CRDS, crd())
        self.kubelet = Kubelet(sandbox).start()
        self.offset = 0.0
        self.usage_per_pod = 10 * MI
        self._exported: set[str] = set()
        self._stop = threading.Event()
        self._feeder = threading.Thread(target=self._feed, daemon=True)
        self._feeder.start()
        self.running: list[tuple[Autoscaler, threading.Event, threading.Thread]] = []
        self._clients: list = []

    def clock(self) -> float:
        return time.time() + self.offset

    def _feed(self) -> None:
        """The simulated cAdvisor: each running pod of the namespace uses `usage_per_pod` bytes."""
        pods_rt = self.sandbox.registry.lookup("", "v1", "pods")
        while not self._stop.wait(0.05):
            try:
                names = {o["metadata"]["name"] for o in self.sandbox.api.list(pods_rt, self.namespace, None).objects}
            except Exception:  # noqa: BLE001 - the sandbox is stopping
                continue
            for pod in names:
                self.exporter.set("container_memory_working_set_bytes",
                                  {"namespace": self.namespace, "pod": pod, "container": "app"},
                                  float(self.usage_per_pod))
            for gone in self._exported - names:
                self.exporter.remove("container_memory_working_set_bytes",
                                     {"namespace": self.namespace, "pod": gone, "container": "app"})
            self._exported = names

    def start(self, prometheus_url: str, **options) -> Autoscaler:
        opts = Options(kubeconfig=self.kubeconfig, prometheus_url=prometheus_url, sync_period=0.2,
                       listen_address="127.0.0.1:0", **options)
        prom = PrometheusClient(prometheus_url, timeout=2.0, retries=0)
        api = self.sandbox.api_client()
        api.user_agent = AGENT
        kube = KubeClient(api)
        self._clients += [kube, prom]
        app = Autoscaler(opts, client=kube, prometheus=prom,
                         clock=self.clock, leader_kwargs={})
        stop = threading.Event()
        result: dict = {}
        thread = threading.Thread(target=lambda: result.setdefault("rc", app.run(stop)), daemon=True)
        thread.start()
        app.result = result  # type: ignore[attr-defined]
        self.running.append((app, stop, thread))
        return app

    def stop_app(self, app: Autoscaler) -> None:
        for a, stop, thread in self.running:
            if a is app:
                stop.set()
                thread.join(20)

    def replicas(self, name: str) -> int:
        return self.client.get(DEPLOYMENTS, name, self.namespace)["spec"]["replicas"]

    def memhpa(self, name: str) -> dict:
        return self.client.get(MEMHPAS, name, self.namespace)

    def condition(self, name: str, kind: str) -> dict | None:
        status = self.memhpa(name).get("status") or {}
        return next((c for c in status.get("conditions") or [] if c["type"] == kind), None)

    def events(self, reason: str | None = None) -> list[dict]:
        items = self.client.list(EVENTS, self.namespace)["items"]
        return [e for e in items if reason is None or e.get("reason") == reason]

    def pods(self) -> list[dict]:
        return self.client.list(PODS, self.namespace)["items"]

    def close(self) -> None:
        for _app, stop, thread in self.running:
            stop.set()
        for _app, _stop, thread in self.running:
            thread.join(20)
        self._stop.set()
        self._feeder.join(5)
        self.kubelet.stop()
        for c in (self.client, *self._clients):
            c.close()
