"""The adapter, the autoscaler and the recommender in real pods, doing their jobs on real metrics.

One namespace holds (components_kit.py says why each piece is as it is):
- a Prometheus (the kit's 2.53 image) scraping the kubelet's cAdvisor endpoint (`job="kubelet"`)
  and the pods of the namespace that have a `metrics` port;
- `app`: busybox pods exporting the gauge `app_load` (httpd serving a file the test rewrites with
  `kubectl exec`), the target of a kube-controller-manager HPA on a Pods metric;
- `memapp`: the same pods, the target of a MemHpa; the test fills a memory-backed emptyDir to
  raise the pods' working set, as cAdvisor reports it;
- the bundles `promop manifests --component adapter|autoscaler|recommender`, each applied as the
  docs say, with the Prometheus address put in place of the DNS name the kit cannot resolve.

What a user would see is asserted: the pods Ready; the APIServices Available; a custom metric and
`kubectl top pod` through the real aggregator; kube-controller-manager's HPA scaling `app` up on
`app_load` and down when it drops; the MemHpa scaling `memapp` up on memory and down; the VPA of
`app` given a recommendation (the VPA recommender's floors, 25m and 250Mi for one container, are
the oracle: the pods use far less).
"""

from __future__ import annotations

import json
import urllib.parse
from typing import Iterator

import pytest
import yaml

import realkube
from deadlines import scaled

from .components_kit import (NODE_IP, apply_apiservices_last, free_host_port, load_app_manifests,
                             point_at_prometheus, prometheus_manifests, remove_bundles, render_bundle,
                             wait_for)
from .stack import install_crds, record

COMPONENTS = ("adapter", "autoscaler", "recommender")
APISERVICES = ("v1beta2.custom.metrics.k8s.io", "v1beta1.custom.metrics.k8s.io",
               "v1beta1.external.metrics.k8s.io", "v1beta1.metrics.k8s.io")
MEMORY_LIMIT_MI = 64


class Stack:
    def __init__(self, cluster: realkube.RealCluster, namespace: str, prometheus_url: str) -> None:
        self.cluster, self.ns, self.prometheus_url = cluster, namespace, prometheus_url
        self.bundles: list[str] = []

    def kubectl(self, *args: str, **kw) -> str:
        return self.cluster.kubectl("-n", self.ns, *args, **kw).stdout

    def get(self, *args: str, check: bool = True):
        return self.cluster.get_json(*args, "-n", self.ns, check=check)

    def query(self, promql: str) -> list[dict]:
        url = f"{self.prometheus_url}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
        return realkube.http_json(url)["data"]["result"]

    def pods(self, app: str) -> list[dict]:
        return [p for p in self.get("pods", "-l", f"app={app}")["items"]
                if not p["metadata"].get("deletionTimestamp")]

    def replicas(self, deployment: str) -> int:
        return self.get("deployment", deployment)["spec"]["replicas"]

    def exec_all(self, app: str, script: str) -> None:
        for pod in self.pods(app):
            self.kubectl("exec", pod["metadata"]["name"], "--", "sh", "-c", script)


def custom_resources(ns: str) -> str:
    hpa = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
           "metadata": {"name": "app", "namespace": ns},
           "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "app"},
                    "minReplicas": 1, "maxReplicas": 3,
                    "metrics": [{"type": "Pods", "pods": {"metric": {"name": "app_load"},
                                                          "target": {"type": "AverageValue", "averageValue": "10"}}}],
                    "behavior": {"scaleDown": {"stabilizationWindowSeconds": 0}}}}
    memhpa = {"apiVersion": "autoscaling.promop.dev/v1alpha1", "kind": "MemHpa",
              "metadata": {"name": "memapp", "namespace": ns},
              "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "memapp"},
                       "minReplicas": 1, "maxReplicas": 3, "targetUtilizationPercentage": 50,
                       "utilizationBase": "limits",
                       "behavior": {"scaleUp": {"stabilizationWindowSeconds": 0},
                                    "scaleDown": {"stabilizationWindowSeconds": 0}}}}
    vpa = {"apiVersion": "autoscaling.k8s.io/v1", "kind": "VerticalPodAutoscaler",
           "metadata": {"name": "app", "namespace": ns},
           "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "app"},
                    "updatePolicy": {"updateMode": "Off"}}}
    return yaml.safe_dump_all([hpa, memhpa, vpa], sort_keys=False)


@pytest.fixture(scope="module")
def stack(real_cluster: realkube.RealCluster) -> Iterator[Stack]:
    cp = real_cluster.cp
    install_crds(real_cluster)
    ns = realkube.create_namespace(cp, "cmp")
    port = free_host_port()
    s = Stack(real_cluster, ns, f"http://{NODE_IP}:{port}")
    try:
        real_cluster.apply(prometheus_manifests(ns, real_cluster.prometheus_image, port))
        real_cluster.apply(load_app_manifests(ns, "app"))
        real_cluster.apply(load_app_manifests(ns, "memapp", memory_limit=f"{MEMORY_LIMIT_MI}Mi"))
        # The adapter discovers series at start (then every relist, 1m in its bundle): the app's
        # series must be in Prometheus first, as they would be in a running cluster.
        wait_for("app_load scraped from the app pod", lambda: s.query(f'app_load{{namespace="{ns}"}}'),
                 scaled(60))
        wait_for("cAdvisor's memapp working set", lambda: s.query(
            f'container_memory_working_set_bytes{{job="kubelet",namespace="{ns}",container="app"}}'), scaled(60))
        for component in COMPONENTS:
            bundle = point_at_prometheus(render_bundle(component, ns, real_cluster.image), ns, s.prometheus_url)
            s.bundles.append(bundle)
            if component == "adapter":  # its APIServices once its Service routes (a kit race)
                apply_apiservices_last(real_cluster, bundle, ns, "promop-adapter", scaled(60))
            else:
                real_cluster.apply(bundle)
        real_cluster.apply(custom_resources(ns))
        yield s
    finally:
        remove_bundles(cp, s.bundles)
        realkube.delete_namespace(cp, ns)


def deployment_pods_ready(s: Stack, name: str, replicas: int) -> list[dict] | None:
    pods = [p for p in s.get("pods", "-l", f"app.kubernetes.io/name={name}")["items"]
            if not p["metadata"].get("deletionTimestamp")]
    ready = [p for p in pods if realkube.pod_is_ready(p)]
    return ready if len(ready) == replicas else None


def test_component_pods_are_ready_with_their_bundles(stack: Stack):
    for component in COMPONENTS:
        name = f"promop-{component}"
        replicas = stack.get("deployment", name)["spec"]["replicas"]
        pods = wait_for(f"{name}: {replicas} pods Ready",
                        lambda: deployment_pods_ready(stack, name, replicas), scaled(60))
        record(f"components: {component} pods creation -> Ready (s)",
               [realkube.pod_ready_seconds(p) for p in pods])
    for lease in ("promop-autoscaler", "promop-recommender"):
        holder = wait_for(f"the {lease} Lease held", lambda: stack.get("lease", lease, check=False)
                          and stack.get("lease", lease)["spec"].get("holderIdentity"), scaled(30))
        assert holder.startswith(lease + "-"), holder


def test_adapter_serves_the_metrics_apis_through_the_aggregator(stack: Stack):
    for name in APISERVICES:
        wait_for(f"APIService {name} Available", lambda: any(
            c["type"] == "Available" and c["status"] == "True"
            for c in stack.cluster.get_json("apiservice", name)["status"].get("conditions", [])), scaled(60))
    pod = stack.pods("app")[0]["metadata"]["name"]
    # `*` with the HPA's selector: memapp's pods export app_load too
    path = f"/apis/custom.metrics.k8s.io/v1beta2/namespaces/{stack.ns}/pods/*/app_load?labelSelector=app%3Dapp"
    body = wait_for("app_load through custom.metrics.k8s.io", lambda: json.loads(
        stack.cluster.kubectl("get", "--raw", path).stdout)["items"], scaled(60))
    assert [(i["describedObject"]["name"], i["value"]) for i in body] == [(pod, "0")]
    # metrics.k8s.io from cAdvisor's series: `kubectl top` works (the kit has no metrics-server)
    def top() -> str | None:  # each pod's series come with its own scrape: wait for Prometheus' pod too
        out = stack.kubectl("top", "pod", "--no-headers")
        return out if pod in out and "prometheus" in out else None

    assert "prometheus" in wait_for("kubectl top pod, the app's and Prometheus' pods", top, scaled(60))


def test_kube_controller_manager_hpa_scales_on_the_pods_metric(stack: Stack):
    stack.exec_all("app", 'echo "app_load 50" > /www/metrics')
    # one pod at 50 against an average target of 10: 5 replicas wanted, capped at maxReplicas 3
    wait_for("the HPA to scale app to 3", lambda: stack.replicas("app") == 3, scaled(60))
    hpa = stack.get("hpa", "app")
    active = {c["type"]: c for c in hpa["status"]["conditions"]}["ScalingActive"]
    assert active["status"] == "True" and active["reason"] == "ValidMetricFound", active
    wait_for("3 app pods Ready", lambda: len([p for p in stack.pods("app") if realkube.pod_is_ready(p)]) == 3,
             scaled(60))
    stack.exec_all("app", 'echo "app_load 0" > /www/metrics')
    wait_for("the HPA to scale app back to 1", lambda: stack.replicas("app") == 1, scaled(90))


def test_memhpa_scales_on_the_pods_memory_from_prometheus(stack: Stack):
    # 48Mi of a 64Mi limit (75%) against a 50% target: ceil(1 * 75/50) = 2 replicas
    stack.exec_all("memapp", "dd if=/dev/zero of=/fill/x bs=1M count=48 2>/dev/null")
    wait_for("the MemHpa to scale memapp to 2", lambda: stack.replicas("memapp") == 2, scaled(90))
    # (the status's utilization is already the two pods' by now: the event says why it scaled,
    # in the HPA's wording for a resource metric)
    events = stack.get("events", "--field-selector", "involvedObject.kind=MemHpa,reason=SuccessfulRescale")
    assert any(e["message"] == "New size: 2; reason: memory resource utilization (percentage of limit) above target"
               for e in events["items"]), [e["message"] for e in events["items"]]
    # the new pod's container may not be there yet ("container not found" for an exec into it, seen in CI)
    wait_for("2 memapp pods Ready", lambda: len([p for p in stack.pods("memapp") if realkube.pod_is_ready(p)]) == 2,
             scaled(60))
    stack.exec_all("memapp", "rm -f /fill/x")
    wait_for("the MemHpa to scale memapp back to 1", lambda: stack.replicas("memapp") == 1, scaled(120))


def test_recommender_writes_the_vpa_recommendation(stack: Stack):
    def recommendation() -> list[dict] | None:
        status = stack.get("vpa", "app").get("status", {})
        return status.get("recommendation", {}).get("containerRecommendations")

    recs = wait_for("the VPA's status.recommendation", recommendation, scaled(120))
    assert [r["containerName"] for r in recs] == ["app"]
    # The pods use a few MiB and no CPU: the target is the recommender's per-pod floors
    # (--pod-recommendation-min-cpu-millicores=25, --pod-recommendation-min-memory-mb=250).
    assert recs[0]["target"] == {"cpu": "25m", "memory": "250Mi"}, recs
    assert set(recs[0]) >= {"lowerBound", "upperBound", "uncappedTarget"}
    conditions = {c["type"]: c["status"] for c in stack.get("vpa", "app")["status"]["conditions"]}
    assert conditions.get("RecommendationProvided") == "True", conditions
