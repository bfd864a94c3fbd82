"""The recommender controller (sandbox + a real Prometheus with 8 days of history) gives the numbers of
the reference's worked examples (../shared/reference/autoscaling.md §3.6), an independent source,
not `recommender simulate` (which shares the controller's core):

- V1/V2: a steady 0.5 core -> bucket 25, p90 0.51113 -> target 587m;
- V5:  daily memory peaks 7 x 500 MiB then 900 MiB newest -> target 1 102 117 711 B;
- V5b: 900 MiB oldest then 7 x 500 MiB -> target 628 694 953 B;
- V6:  a steady 600 MiB -> target 764 046 746 B;
- V8:  two containers per pod -> floors of 12m and 131 072 000 B each.

History is read at hourly instants from now - 8d, so the first memory sample opens the first of
eight 24h peak windows; the data ends 30 minutes before the recommender's clock, so no fresh sample
adds a ninth.
"""

from __future__ import annotations

import math
import threading
import time

from prom.prom_fixtures import counter, gauge

from deadlines import scaled
from promop.kube.client import KubeClient
from promop.kube.resources import Resource
from promop.quantity import int_value, milli_value
from promop.recommender.app import App
from promop.recommender.controller import VPAS
from promop.recommender.history import HistoryConfig
from promop.recommender.options import Options

DEPLOYMENTS = Resource("apps", "v1", "deployments", kind="Deployment")
PODS = Resource("", "v1", "pods", kind="Pod")
NAMESPACES = Resource("", "v1", "namespaces", namespaced=False, kind="Namespace")
NS = "examples"
MI = 1 << 20
DAY = 86400.0
NOW = math.floor(time.time() / 3600) * 3600.0
T0 = NOW - 8 * DAY            # the first history instant: the first peak window opens here
START = T0 - 2 * 3600
END = NOW - 30 * 60

# (workload, container) -> (cpu cores, memory bytes as a function of time)
WORKLOADS = {
    "web": {
        "app": (0.5, lambda t: 900 * MI if t >= T0 + 7 * DAY + 1800 else 500 * MI),     # V5
        "tiny": (0.001, lambda t: 1 * MI),                                               # V8
    },
    "db": {
        "steady": (0.5, lambda t: 600 * MI),                                             # V6
        "oldpeak": (0.5, lambda t: 900 * MI if t < T0 + 12 * 3600 else 500 * MI),        # V5b
    },
}
# (millicores, bytes); the status writes quantities canonically (131072000 B is "125Mi")
EXPECTED_TARGETS = {
    "web": {"app": (587, 1102117711), "tiny": (12, 131072000)},
    "db": {"steady": (587, 764046746), "oldpeak": (587, 628694953)},
}


def pod_name(workload: str) -> str:
    return f"{workload}-5f6d7-abcde"


def history():
    out = []
    for workload, containers in WORKLOADS.items():
        for cname, (cores, memory) in containers.items():
            labels = {"job": "kubelet", "namespace": NS, "pod": pod_name(workload), "container": cname}
            out.append(counter("container_cpu_usage_seconds_total", labels, START, END, 300, 0.0, cores))
            out.append(gauge("container_memory_working_set_bytes", labels, START, END, 300,
                             lambda t, m=memory: float(m(t))))
    return out


def create_workloads(kube: KubeClient) -> None:
    kube.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    for workload, containers in WORKLOADS.items():
        spec = {"containers": [{"name": c, "image": "x"} for c in containers]}
        kube.create(DEPLOYMENTS, {"apiVersion": "apps/v1", "kind": "Deployment",
                                  "metadata": {"name": workload, "namespace": NS},
                                  "spec": {"selector": {"matchLabels": {"app": workload}},
                                           "template": {"metadata": {"labels": {"app": workload}}, "spec": spec}}})
        kube.create(PODS, {"apiVersion": "v1", "kind": "Pod",
                           "metadata": {"name": pod_name(workload), "namespace": NS,
                                        "labels": {"app": workload, "pod-template-hash": "5f6d7"}},
                           "spec": spec})
        kube.create(VPAS, {"apiVersion": "autoscaling.k8s.io/v1", "kind": "VerticalPodAutoscaler",
                           "metadata": {"name": f"{workload}-vpa", "namespace": NS},
                           "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": workload},
                                    "updatePolicy": {"updateMode": "Off"}}})


def recommendations(kube: KubeClient, workload: str) -> dict | None:
    status = kube.get(VPAS, f"{workload}-vpa", NS).get("status") or {}
    recs = (status.get("recommendation") or {}).get("containerRecommendations")
    if not recs or len(recs) < len(WORKLOADS[workload]):
        return None
    return {r["containerName"]: r for r in recs}


def eventually(check, timeout: float, what: str):
    deadline = time.monotonic() + scaled(timeout)
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def test_controller_gives_the_reference_worked_examples(cluster, kube, prometheus_factory):
    prom = prometheus_factory(history())
    create_workloads(kube)
    h = HistoryConfig(prometheus_address=prom.url, cadvisor_job_name="kubelet", ctr_pod_name_label="pod",
                      ctr_name_label="container", metric_for_pod_labels="", query_timeout="30s")
    opts = Options(history=h, interval=1.0, checkpoints_gc_interval=60.0, prometheus_timeout=5.0)
    stop = threading.Event()
    app = App(opts, client=KubeClient(cluster.api_client()), web=False, recommender_kwargs={"clock": lambda: NOW})
    thread = threading.Thread(target=app.run, args=(stop,), daemon=True)
    thread.start()
    try:
        for workload, expected in EXPECTED_TARGETS.items():
            recs = eventually(lambda w=workload: recommendations(kube, w), 120, f"{workload}'s recommendation")
            assert app.recommender.history_source == "prometheus"
            for cname, target in expected.items():
                for field in ("target", "uncappedTarget"):
                    got = recs[cname][field]
                    assert (milli_value(got["cpu"]), int_value(got["memory"])) == target, (workload, cname, got)
    finally:
        stop.set()
        thread.join(30)
