"""The controller against the sandbox and a real Prometheus holding 8 days of backfilled history.

- Its recommendations equal `promop recommender simulate` on the samples Prometheus answers to
  upstream's history queries (the same evaluation instants).
- Restarted with Prometheus unreachable, it resumes from its checkpoints.
- A deleted VPA's checkpoints are removed.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import threading
import time

import requests
import yaml
from prom.prom_fixtures import Series, counter, gauge

from deadlines import scaled
from promop.kube.client import KubeClient
from promop.kube.errors import NotFound
from promop.kube.resources import Resource
from promop.recommender.app import App
from promop.recommender.controller import CHECKPOINTS, VPAS
from promop.recommender.history import HistoryConfig
from promop.recommender.options import Options
from promop.vpa.config import DEFAULT
from promop.vpa.timeutil import format_time

DEPLOYMENTS = Resource("apps", "v1", "deployments", kind="Deployment")
PODS = Resource("", "v1", "pods", kind="Pod")
NS = "shop"
HOUR = 3600.0
# The data ends 30 minutes before the recommender's clock: fresh instant queries find nothing (stale),
# so the recommendation comes from the history alone.
NOW = math.floor(time.time() / 60) * 60.0
END = NOW - 30 * 60
START = NOW - 8 * 86400 - 2 * HOUR


def eventually(check, timeout=60.0, what="condition"):
    deadline = time.monotonic() + scaled(timeout)  # times PROMOP_TEST_TIMEOUT_SCALE (tests/deadlines.py)
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def history_series() -> list[Series]:
    """Two containers of one pod: CPU rising in hourly steps of a daily pattern; memory with daily peaks."""
    out = []
    labels = {"job": "kubelet", "namespace": NS, "pod": "web-7d4b9-abcde"}
    for cname, base_cpu, base_mem in (("app", 0.3, 400 * 2**20), ("sidecar", 0.02, 60 * 2**20)):
        pts, total, t = [], 0.0, START
        while t <= END:
            pts.append((t, total))
            hour = int((t - START) // HOUR)
            total += (base_cpu * (1 + 0.5 * math.sin(hour / 24 * 2 * math.pi) + 0.1 * (hour % 7))) * 300
            t += 300
        out.append(Series("container_cpu_usage_seconds_total", {**labels, "container": cname}, pts, "counter"))
        out.append(gauge("container_memory_working_set_bytes", {**labels, "container": cname}, START, END, 300,
                         lambda t, b=base_mem: float(int(b * (1 + 0.3 * math.sin((t - START) / 86400 * 2.7))))))
    return out


def options(prom_url: str, **kw) -> Options:
    h = HistoryConfig(prometheus_address=prom_url, cadvisor_job_name="kubelet", ctr_pod_name_label="pod",
                      ctr_name_label="container", metric_for_pod_labels="", query_timeout="30s")
    return Options(history=h, interval=1.0, checkpoints_gc_interval=2.0, prometheus_timeout=5.0, **kw)


def start(kube_client, opts) -> tuple[App, threading.Event, threading.Thread]:
    stop = threading.Event()
    app = App(opts, client=kube_client, web=False, recommender_kwargs={"clock": lambda: NOW})
    t = threading.Thread(target=app.run, args=(stop,), daemon=True)
    t.start()
    return app, stop, t


def create_workload(kube: KubeClient) -> None:
    kube.create(Resource("", "v1", "namespaces", namespaced=False, kind="Namespace"),
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    kube.create(DEPLOYMENTS, {"apiVersion": "apps/v1", "kind": "Deployment",
                              "metadata": {"name": "web", "namespace": NS},
                              "spec": {"selector": {"matchLabels": {"app": "web"}},
                                       "template": {"metadata": {"labels": {"app": "web"}},
                                                    "spec": {"containers": [{"name": "app", "image": "x"}]}}}})
    kube.create(PODS, {"apiVersion": "v1", "kind": "Pod",
                       "metadata": {"name": "web-7d4b9-abcde", "namespace": NS,
                                    # no ownerReferences: the sandbox's garbage collector would delete a pod
                                    # whose ReplicaSet does not exist (owner chains: test_recommender_rbac)
                                    "labels": {"app": "web", "pod-template-hash": "7d4b9"}},
                       "spec": {"containers": [
                           {"name": "app", "image": "x", "resources": {"requests": {"memory": "256Mi"}}},
                           {"name": "sidecar", "image": "y"}]}})
    kube.create(VPAS, {"apiVersion": "autoscaling.k8s.io/v1", "kind": "VerticalPodAutoscaler",
                       "metadata": {"name": "web-vpa", "namespace": NS},
                       "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                                "updatePolicy": {"updateMode": "Off"}}})


def recommendation(kube: KubeClient) -> dict | None:
    status = kube.get(VPAS, "web-vpa", NS).get("status") or {}
    recs = (status.get("recommendation") or {}).get("containerRecommendations")
    return {r["containerName"]: r for r in recs} if recs else None


def simulate_from_prometheus(prom_url: str, tmp_path, container: str) -> dict:
    """Ask Prometheus upstream's two history queries at the recommender's instants; simulate on the answer."""
    h = HistoryConfig(cadvisor_job_name="kubelet", ctr_pod_name_label="pod", ctr_name_label="container")
    start = NOW - 8 * 86400
    doc = {"containersPerPod": 2, "now": format_time(NOW), "cpu": [], "memory": []}
    for query, kind, field in ((h.cpu_query(), "cpu", "cores"), (h.memory_query(), "memory", "bytes")):
        body = requests.get(f"{prom_url}/api/v1/query_range", timeout=30, params={
            "query": query, "start": f"{start:.3f}", "end": f"{NOW:.3f}", "step": "3600"}).json()
        for series in body["data"]["result"]:
            if series["metric"]["container"] == container:
                doc[kind] += [{"time": float(t), field: float(v)} for t, v in series["values"]]
    assert len(doc["cpu"]) > 190, len(doc["cpu"])
    f = tmp_path / f"{container}.yaml"
    f.write_text(yaml.safe_dump(doc))
    p = subprocess.run([sys.executable, "-m", "promop", "recommender", "simulate", "-f", str(f), "-o", "json"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)["recommendation"]


def test_history_recommendation_checkpoints_restart_and_gc(cluster, kube, prometheus_factory, tmp_path):
    prom = prometheus_factory(history_series())
    create_workload(kube)
    app, stop, thread = start(KubeClient(cluster.api_client()), options(prom.url))
    try:
        recs = eventually(lambda: recommendation(kube), 120, "a recommendation in the VPA status")
        assert app.recommender.history_source == "prometheus"
        for cname in ("app", "sidecar"):
            expected = simulate_from_prometheus(prom.url, tmp_path, cname)
            got = {k: v for k, v in recs[cname].items() if k != "containerName"}
            assert got == {k: v for k, v in expected.items() if k != "containerName"}, cname
        conds = {c["type"]: c for c in kube.get(VPAS, "web-vpa", NS)["status"]["conditions"]}
        assert conds["RecommendationProvided"]["status"] == "True"
        # explain: the same breakdown as simulate, for the live VPA.
        kubeconfig = cluster.write_kubeconfig(tmp_path / "kubeconfig")
        p = subprocess.run([sys.executable, "-m", "promop", "recommender", "explain", f"{NS}/web-vpa",
                            "--kubeconfig", kubeconfig, "--prometheus-address", prom.url,
                            "--prometheus-cadvisor-job-name", "kubelet", "--container-pod-name-label", "pod",
                            "--container-name-label", "container", "--metric-for-pod-labels", "",
                            "--now", format_time(NOW)],
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        assert "history from Prometheus http" in p.stdout and "selector app=web" in p.stdout, p.stdout
        for needle in ("container app:", "container sidecar:", "confidence = min(", "cpu target: p90 = ",
                       "floors = pod minimum (25m, 250 MiB) / 2 container(s)", "status now: target"):
            assert needle in p.stdout, (needle, p.stdout, p.stderr[-1500:])
        p = subprocess.run([sys.executable, "-m", "promop", "recommender", "explain", f"{NS}/nope",
                            "--kubeconfig", kubeconfig], capture_output=True, text=True, timeout=60)
        assert p.returncode == 2 and "not found" in p.stderr and "Traceback" not in p.stderr
        assert "NoPodsMatched" not in conds
        names = eventually(lambda: sorted(c["metadata"]["name"] for c in kube.list(CHECKPOINTS, NS)["items"])
                           == ["web-vpa-app", "web-vpa-sidecar"], 60, "checkpoints for both containers")
        assert names
        cp = kube.get(CHECKPOINTS, "web-vpa-app", NS)
        assert cp["spec"] == {"vpaObjectName": "web-vpa", "containerName": "app"}
        assert cp["status"]["version"] == "v3" and max(cp["status"]["cpuHistogram"]["bucketWeights"].values()) == 10000
    finally:
        stop.set()
        thread.join(30)
    first = recs

    # Restart with Prometheus unreachable: the state comes back from the checkpoints.
    prom.stop()
    kube.patch(VPAS, "web-vpa", {"status": {"recommendation": None}}, NS, patch_type="merge", subresource="status")
    assert recommendation(kube) is None
    app, stop, thread = start(KubeClient(cluster.api_client()), options(prom.url))
    try:
        recs = eventually(lambda: recommendation(kube), 120, "a recommendation after the restart")
        assert app.recommender.history_source == "checkpoints"
        for cname in ("app", "sidecar"):
            for res, parse in (("cpu", _milli), ("memory", _bytes)):
                before, after = parse(first[cname]["target"][res]), parse(recs[cname]["target"][res])
                assert abs(after - before) <= 0.051 * before + 1, (cname, res, before, after)  # within a bucket
        # A deleted VPA's checkpoints are removed.
        kube.delete(VPAS, "web-vpa", NS)
        eventually(lambda: kube.list(CHECKPOINTS, NS)["items"] == [], 60, "the checkpoints to be deleted")
    finally:
        stop.set()
        thread.join(30)


def test_gc_removes_checkpoints_of_vpas_that_vanished_while_down(cluster, kube, prometheus_factory):
    prom = prometheus_factory(history_series())
    kube.create(Resource("", "v1", "namespaces", namespaced=False, kind="Namespace"),
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    orphan = {"apiVersion": "autoscaling.k8s.io/v1", "kind": "VerticalPodAutoscalerCheckpoint",
              "metadata": {"name": "gone-app", "namespace": NS},
              "spec": {"vpaObjectName": "gone", "containerName": "app"},
              "status": {"version": "v3", "totalSamplesCount": 1}}
    kube.create(CHECKPOINTS, orphan, NS)
    app, stop, thread = start(KubeClient(cluster.api_client()), options(prom.url))
    try:
        eventually(lambda: not _exists(kube, "gone-app"), 60, "the orphaned checkpoint to be collected")
    finally:
        stop.set()
        thread.join(30)


def _exists(kube, name) -> bool:
    try:
        kube.get(CHECKPOINTS, name, NS)
        return True
    except NotFound:
        return False


def _milli(q: str) -> float:
    from promop.quantity import milli_value
    return milli_value(q)


def _bytes(q: str) -> float:
    from promop.quantity import int_value
    return int_value(q)


assert DEFAULT.safety_margin == 0.15


def test_metrics_healthz_readyz(cluster, kube):
    opts = options("http://127.0.0.1:9", listen_address="127.0.0.1:0")
    stop = threading.Event()
    app = App(opts, client=KubeClient(cluster.api_client()), web=True, recommender_kwargs={"clock": lambda: NOW})
    thread = threading.Thread(target=app.run, args=(stop,), daemon=True)
    thread.start()
    try:
        web = eventually(lambda: app.web, 30, "the web server")

        def ready():
            r = requests.get(web.url + "/readyz", timeout=5)
            return r.status_code == 200
        eventually(ready, 60, "/readyz to answer 200 (informers synced, history loaded)")
        assert requests.get(web.url + "/healthz", timeout=5).status_code == 200
        eventually(lambda: "vpa_recommender_execution_latency_seconds_count{step=\"UpdateVPAs\"}"
                   in requests.get(web.url + "/metrics", timeout=5).text, 30, "a round's metrics")
        text = requests.get(web.url + "/metrics", timeout=5).text
        for name in ("vpa_recommender_aggregate_container_states_count", "promop_recommender_source_errors_total",
                     'step="bootstrap"'):
            assert name in text, name
    finally:
        stop.set()
        thread.join(30)


def test_target_created_after_the_vpa_is_picked_up(cluster, kube):
    """ConfigUnsupported while the Deployment is missing; once it exists the next round resolves it."""
    kube.create(Resource("", "v1", "namespaces", namespaced=False, kind="Namespace"),
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    kube.create(VPAS, {"apiVersion": "autoscaling.k8s.io/v1", "kind": "VerticalPodAutoscaler",
                       "metadata": {"name": "late", "namespace": NS},
                       "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "late"}}})
    app, stop, thread = start(KubeClient(cluster.api_client()), options("http://127.0.0.1:9"))

    def conds():
        return {c["type"]: c for c in (kube.get(VPAS, "late", NS).get("status") or {}).get("conditions") or []}
    try:
        eventually(lambda: conds().get("ConfigUnsupported", {}).get("status") == "True", 60, "ConfigUnsupported")
        kube.create(DEPLOYMENTS, {"apiVersion": "apps/v1", "kind": "Deployment",
                                  "metadata": {"name": "late", "namespace": NS},
                                  "spec": {"selector": {"matchLabels": {"app": "late"}},
                                           "template": {"metadata": {"labels": {"app": "late"}},
                                                        "spec": {"containers": [{"name": "c", "image": "x"}]}}}})
        eventually(lambda: "ConfigUnsupported" not in conds() and conds().get("NoPodsMatched"), 60,
                   "the target to be resolved (NoPodsMatched instead of ConfigUnsupported)")
    finally:
        stop.set()
        thread.join(30)
