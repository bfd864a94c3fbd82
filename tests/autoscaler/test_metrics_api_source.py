"""`hpa explain` reading the metrics APIs: the response shapes of metrics.k8s.io/v1beta1,
custom.metrics.k8s.io/v1beta2 and external.metrics.k8s.io/v1beta1 (as upstream serves them) into the
algorithm's inputs. The client here replays recorded-shape responses: the sandbox does not serve those APIs."""

from __future__ import annotations

from promop.autoscale.model import MetricValues
from promop.autoscale.spec import parse_hpa_spec
from promop.autoscaler.explain_live import MetricsApiSource
from promop.kube.errors import ApiError

NOW = 1_800_000_000.0


class Replay:
    def __init__(self, responses: dict):
        self.responses = responses
        self.calls: list[tuple] = []

    def _request(self, method, path, **_):   # discovery: custom.metrics.k8s.io/v1beta2 served
        assert (method, path) == ("GET", "/apis")
        return {"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "items": [
            {"metadata": {"name": "custom.metrics.k8s.io"},
             "versions": [{"version": "v1beta2", "freshness": "Current"}]}]}

    def list(self, res, namespace=None, label_selector=None, **_):
        self.calls.append(("list", res.group, res.plural, namespace, label_selector))
        return self.responses[(res.group, res.plural)]

    def get(self, res, name, namespace=None, subresource=None, **_):
        self.calls.append(("get", res.group, res.plural, name, subresource))
        key = (res.group, res.plural, name, subresource)
        if key not in self.responses:
            raise ApiError(f"{res.plural} {name} {subresource} not found", status=404)
        return self.responses[key]


SPEC = parse_hpa_spec({"maxReplicas": 10, "metrics": [
    {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}},
    {"type": "ContainerResource", "containerResource": {"name": "memory", "container": "app",
                                                        "target": {"type": "AverageValue", "averageValue": "1Gi"}}},
    {"type": "Pods", "pods": {"metric": {"name": "http_requests"}, "target": {"type": "AverageValue",
                                                                             "averageValue": "10"}}},
    {"type": "Object", "object": {"describedObject": {"kind": "Ingress", "name": "main"},
                                  "metric": {"name": "rps"}, "target": {"type": "Value", "value": "100"}}},
    {"type": "External", "external": {"metric": {"name": "queue", "selector": {"matchLabels": {"q": "jobs"}}},
                                      "target": {"type": "AverageValue", "averageValue": "5"}}},
]})


def test_metrics_api_shapes():
    client = Replay({
        ("metrics.k8s.io", "pods"): {"kind": "PodMetricsList", "items": [
            {"metadata": {"name": "a"}, "timestamp": "2027-01-15T08:00:00Z", "window": "15s",
             "containers": [{"name": "app", "usage": {"cpu": "250m", "memory": "512Mi"}},
                            {"name": "proxy", "usage": {"cpu": "50m", "memory": "64Mi"}}]}]},
        ("custom.metrics.k8s.io", "pods", "*", "http_requests"): {"kind": "MetricValueList", "items": [
            {"describedObject": {"kind": "Pod", "name": "a"}, "metric": {"name": "http_requests"}, "value": "1500m"},
            {"describedObject": {"kind": "Pod", "name": "other"}, "metric": {"name": "http_requests"},
             "value": "99"}]},
        ("custom.metrics.k8s.io", "ingresses", "main", "rps"): {"items": [{"value": "120"}]},
        ("external.metrics.k8s.io", "queue"): {"kind": "ExternalMetricValueList", "items": [
            {"metricName": "queue", "value": "30"}, {"metricName": "queue", "value": "12"}]},
    })
    values = MetricValues()
    MetricsApiSource(client).fill(SPEC, "shop", ["a"], values, NOW, "app=web")
    cpu = values.resource["cpu"]["a"]
    assert (cpu.value, cpu.window) == (300, 15.0)  # the pod's containers summed, milli-cores
    assert values.container_resource["app"]["memory"]["a"].value == 512 * 2**20 * 1000
    assert values.pods["http_requests"] == {"a": values.pods["http_requests"]["a"]}  # other pods dropped
    assert values.pods["http_requests"]["a"].value == 1500
    assert values.external["queue"] == [30_000, 12_000]
    assert ("list", "external.metrics.k8s.io", "queue", "shop", "q=jobs") in client.calls
    assert values.object["rps"] == 120_000  # asked of .../namespaces/shop/ingresses/main/rps


def test_a_failing_api_is_that_metrics_failure():
    values = MetricValues()
    MetricsApiSource(Replay({("metrics.k8s.io", "pods"): {"items": []},
                             ("external.metrics.k8s.io", "queue"): {"items": []}})).fill(
        SPEC, "shop", ["a"], values, NOW, "")
    assert "Object/rps" in values.errors and "not found" in values.errors["Object/rps"]
    assert "Pods/http_requests" in values.errors
