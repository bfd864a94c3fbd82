"""Every route of the three APIs against a real Prometheus, values from the backfilled data
(adapter_fixtures: rates and gauges chosen so each expected value is plain arithmetic)."""

from __future__ import annotations

import time
from datetime import datetime, timezone

import pytest

from adapter.adapter_fixtures import (  # noqa: F401 - fixtures
    MI, adapter_factory, cluster_prom, parse_quantity, prometheus_factory,
)

pytestmark = pytest.mark.prometheus
CM = "/apis/custom.metrics.k8s.io"


def _close(q: str, expected: float, tol: float = 0.0011) -> bool:
    return abs(parse_quantity(q) - expected) <= tol


def _recent(ts: str) -> bool:
    t = datetime.strptime(ts, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp()
    return abs(t - time.time()) < 120


@pytest.fixture
def a(cluster_prom, adapter_factory):  # noqa: F811
    return adapter_factory(cluster_prom.url)


def test_pods_wildcard_both_versions(a) -> None:
    v2 = a.json(f"{CM}/v1beta2/namespaces/shop/pods/*/http_requests_per_second")
    assert v2["kind"] == "MetricValueList" and v2["apiVersion"] == "custom.metrics.k8s.io/v1beta2"
    assert v2["metadata"] == {}
    items = v2["items"]
    assert [i["describedObject"] for i in items] == [
        {"kind": "Pod", "namespace": "shop", "name": "web-1", "apiVersion": "/v1"},
        {"kind": "Pod", "namespace": "shop", "name": "web-2", "apiVersion": "/v1"}]   # web-3 has no series
    assert _close(items[0]["value"], 1.5 + 0.25) and _close(items[1]["value"], 2.25 + 0.5)
    assert all(i["metric"] == {"name": "http_requests_per_second", "selector": None} for i in items)
    assert all(_recent(i["timestamp"]) and "windowSeconds" not in i for i in items)
    assert list(items[0]) == ["describedObject", "metric", "timestamp", "value"]

    v1 = a.json(f"{CM}/v1beta1/namespaces/shop/pods/*/http_requests_per_second")
    assert v1["apiVersion"] == "custom.metrics.k8s.io/v1beta1"
    assert list(v1["items"][0]) == ["describedObject", "metricName", "timestamp", "value", "selector"]
    assert v1["items"][0]["metricName"] == "http_requests_per_second" and v1["items"][0]["selector"] is None
    assert _close(v1["items"][1]["value"], 2.75)


def test_label_selector_and_metric_label_selector(a) -> None:
    front = a.json(f"{CM}/v1beta2/namespaces/shop/pods/*/http_requests_per_second", labelSelector="tier=front")
    assert [i["describedObject"]["name"] for i in front["items"]] == ["web-1", "web-2"]
    get_only = a.json(f"{CM}/v1beta2/namespaces/shop/pods/*/http_requests_per_second",
                      metricLabelSelector="verb=GET")
    assert [(i["describedObject"]["name"], round(parse_quantity(i["value"]), 2)) for i in get_only["items"]] == [
        ("web-1", 1.5), ("web-2", 2.25)]
    assert get_only["items"][0]["metric"]["selector"] == {"matchLabels": {"verb": "GET"}}
    posts = a.json(f"{CM}/v1beta1/namespaces/shop/pods/*/http_requests_per_second",
                   metricLabelSelector="verb in (POST)", labelSelector="app=web")
    assert [round(parse_quantity(i["value"]), 2) for i in posts["items"]] == [0.25, 0.5]
    assert posts["items"][0]["selector"] == {"matchExpressions": [{"key": "verb", "operator": "In", "values": ["POST"]}]}
    none = a.get(f"{CM}/v1beta2/namespaces/shop/pods/*/http_requests_per_second", labelSelector="app=api")
    assert none.status_code == 404 and "no pods match labelSelector app=api in namespace shop" in none.json()["message"]
    bad = a.get(f"{CM}/v1beta2/namespaces/shop/pods/*/http_requests_per_second", metricLabelSelector="verb>3")
    assert bad.status_code == 400 and "no PromQL equivalent" in bad.json()["message"]
    bad2 = a.get(f"{CM}/v1beta2/namespaces/shop/pods/*/http_requests_per_second", labelSelector="a=(")
    assert bad2.status_code == 400 and bad2.json()["reason"] == "BadRequest"


def test_single_object(a) -> None:
    one = a.json(f"{CM}/v1beta2/namespaces/backend/pods/api-1/http_requests_per_second")
    assert len(one["items"]) == 1 and one["items"][0]["describedObject"]["name"] == "api-1"
    assert _close(one["items"][0]["value"], 0.125)
    missing = a.get(f"{CM}/v1beta2/namespaces/shop/pods/web-3/http_requests_per_second")
    assert missing.status_code == 404
    body = missing.json()
    assert body["kind"] == "Status" and body["reason"] == "NotFound" and body["code"] == 404
    assert body["message"].startswith("the server could not find the metric http_requests_per_second for pods web-3")


def test_other_resources_namespaces_and_deployments(a) -> None:
    ns = a.json(f"{CM}/v1beta2/namespaces/shop/metrics/http_requests_per_second")
    assert ns["items"][0]["describedObject"] == {"kind": "Namespace", "name": "shop", "apiVersion": "/v1"}
    assert _close(ns["items"][0]["value"], 1.75 + 2.75)
    q = a.json(f"{CM}/v1beta2/namespaces/shop/metrics/queue_depth")
    assert q["items"][0]["value"] == "49500m"   # 42 + 7.5, a gauge: exact
    dep = a.json(f"{CM}/v1beta2/namespaces/shop/deployments.apps/web/queue_depth")
    assert dep["items"][0]["describedObject"] == {"kind": "Deployment", "namespace": "shop", "name": "web",
                                                  "apiVersion": "apps/v1"}
    assert dep["items"][0]["value"] == "49500m"
    star = a.json(f"{CM}/v1beta1/namespaces/backend/deployments.apps/*/queue_depth")
    assert [(i["describedObject"]["name"], i["value"]) for i in star["items"]] == [("api", "3")]
    # the resource may be spelled as its singular or kind, as upstream's RESTMapper allows
    assert a.json(f"{CM}/v1beta2/namespaces/shop/deployment.apps/web/queue_depth")["items"][0]["value"] == "49500m"


def test_discovery_documents(a) -> None:
    groups = a.json("/apis")
    assert groups["kind"] == "APIGroupList"
    assert {g["name"] for g in groups["groups"]} == {"custom.metrics.k8s.io", "external.metrics.k8s.io",
                                                     "metrics.k8s.io"}
    cm = a.json("/apis/custom.metrics.k8s.io")
    assert cm["kind"] == "APIGroup" and cm["preferredVersion"] == {
        "groupVersion": "custom.metrics.k8s.io/v1beta2", "version": "v1beta2"}
    for version in ("v1beta1", "v1beta2"):
        doc = a.json(f"{CM}/{version}")
        assert doc["kind"] == "APIResourceList" and doc["groupVersion"] == f"custom.metrics.k8s.io/{version}"
        names = {(r["name"], r["namespaced"]) for r in doc["resources"]}
        assert names == {("pods/http_requests_per_second", True), ("namespaces/http_requests_per_second", False),
                         ("deployments.apps/queue_depth", True), ("namespaces/queue_depth", False)}
        assert all(r["kind"] == "MetricValueList" and r["verbs"] == ["get"] and r["singularName"] == ""
                   for r in doc["resources"])
    ext = a.json("/apis/external.metrics.k8s.io/v1beta1")
    assert sorted(r["name"] for r in ext["resources"]) == ["all_queues_depth", "queue_depth"]
    assert all(r["kind"] == "ExternalMetricValueList" and r["namespaced"] for r in ext["resources"])
    res = a.json("/apis/metrics.k8s.io/v1beta1")
    assert [(r["name"], r["kind"], r["namespaced"]) for r in res["resources"]] == [
        ("nodes", "NodeMetrics", False), ("pods", "PodMetrics", True)]
    assert a.get("/apis/custom.metrics.k8s.io/v1alpha1").status_code == 404
    assert a.get("/apis/nothing.k8s.io").status_code == 404


def test_unknown_metric_404_says_which_rule_would_have_to_match(a) -> None:
    r = a.get(f"{CM}/v1beta2/namespaces/shop/pods/*/http_requests")
    assert r.status_code == 404
    msg = r.json()["message"]
    assert msg.startswith("the server could not find the metric http_requests for pods")
    assert "rules[0] serves series http_requests_total as 'http_requests_per_second'" in msg

    r = a.get(f"{CM}/v1beta2/namespaces/shop/pods/*/queue_depth")
    msg = r.json()["message"]
    assert "queue_depth is served for deployments.apps, namespaces, not for pods" in msg
    assert "none of its labels (deployment, namespace, queue) maps to pods" in msg

    r = a.get(f"{CM}/v1beta2/pods/*/http_requests_per_second")   # cluster-scoped ask for a namespaced metric
    assert r.status_code == 404 and "is registered only as namespaced" in r.json()["message"]

    r = a.get(f"{CM}/v1beta2/namespaces/shop/pods/*/nothing_like_it")
    assert "no series returned by any rule's seriesQuery is named 'nothing_like_it'" in r.json()["message"]
    assert a.get(f"{CM}/v1beta2/namespaces/shop/gizmos/*/x").json()["message"].startswith(
        "the server could not find the requested resource")


def test_external_metrics(a) -> None:
    doc = a.json("/apis/external.metrics.k8s.io/v1beta1/namespaces/shop/queue_depth")
    assert doc["kind"] == "ExternalMetricValueList" and doc["apiVersion"] == "external.metrics.k8s.io/v1beta1"
    items = sorted(doc["items"], key=lambda i: i["metricLabels"]["queue"])
    assert [(i["metricName"], i["metricLabels"], i["value"]) for i in items] == [
        ("queue_depth", {"queue": "emails"}, "7500m"), ("queue_depth", {"queue": "orders"}, "42")]
    assert list(items[0]) == ["metricName", "metricLabels", "timestamp", "value"] and _recent(items[0]["timestamp"])
    one = a.json("/apis/external.metrics.k8s.io/v1beta1/namespaces/shop/queue_depth", labelSelector="queue=orders")
    assert [i["value"] for i in one["items"]] == ["42"]
    empty = a.json("/apis/external.metrics.k8s.io/v1beta1/namespaces/nowhere/queue_depth")
    assert empty["items"] == []
    everywhere = a.json("/apis/external.metrics.k8s.io/v1beta1/namespaces/nowhere/all_queues_depth")
    assert [i["value"] for i in everywhere["items"]] == ["52500m"]    # namespaced: false ignores the namespace
    missing = a.get("/apis/external.metrics.k8s.io/v1beta1/namespaces/shop/queue_length")
    assert missing.status_code == 404 and "no external metric queue_length" in missing.json()["message"]


def test_pod_metrics(a) -> None:
    shop = a.json("/apis/metrics.k8s.io/v1beta1/namespaces/shop/pods")
    assert shop["kind"] == "PodMetricsList" and shop["apiVersion"] == "metrics.k8s.io/v1beta1"
    by_pod = {p["metadata"]["name"]: p for p in shop["items"]}
    assert sorted(by_pod) == ["web-1", "web-2"]   # web-3 has no series
    web1 = by_pod["web-1"]
    assert web1["window"] == "2m0s" and _recent(web1["timestamp"])
    assert web1["metadata"]["namespace"] == "shop" and web1["metadata"]["labels"] == {"app": "web", "tier": "front"}
    assert [c["name"] for c in web1["containers"]] == ["app", "sidecar"]
    app, sidecar = web1["containers"]
    assert app["usage"]["memory"] == "64Mi" and sidecar["usage"]["memory"] == "16Mi"
    assert _close(app["usage"]["cpu"], 0.25) and _close(sidecar["usage"]["cpu"], 0.05)
    backend = a.json("/apis/metrics.k8s.io/v1beta1/namespaces/backend/pods")
    assert [p["metadata"]["name"] for p in backend["items"]] == ["api-1"]   # api-2 has no memory: skipped
    assert backend["items"][0]["containers"][0]["usage"]["memory"] == "100000000"
    every = a.json("/apis/metrics.k8s.io/v1beta1/pods")
    assert sorted(p["metadata"]["name"] for p in every["items"]) == ["api-1", "web-1", "web-2"]
    single = a.json("/apis/metrics.k8s.io/v1beta1/namespaces/shop/pods/web-2")
    assert single["kind"] == "PodMetrics" and single["containers"][0]["usage"]["memory"] == "128Mi"
    assert a.get("/apis/metrics.k8s.io/v1beta1/namespaces/shop/pods/web-3").status_code == 404
    assert a.get("/apis/metrics.k8s.io/v1beta1/namespaces/shop/pods/nope").json()["message"] == \
        'podmetrics.metrics.k8s.io "nope" not found'
    sel = a.json("/apis/metrics.k8s.io/v1beta1/namespaces/shop/pods", labelSelector="tier=front")
    assert len(sel["items"]) == 2


def test_node_metrics(a) -> None:
    nodes = a.json("/apis/metrics.k8s.io/v1beta1/nodes")
    assert nodes["kind"] == "NodeMetricsList"
    by = {n["metadata"]["name"]: n for n in nodes["items"]}
    assert sorted(by) == ["node-a", "node-b"]    # node-c: missing CPU, skipped
    assert by["node-a"]["usage"]["memory"] == "2Gi" and by["node-b"]["usage"]["memory"] == "1536Mi"
    assert _close(by["node-a"]["usage"]["cpu"], 1.5) and _close(by["node-b"]["usage"]["cpu"], 0.75)
    assert by["node-a"]["window"] == "2m0s" and "namespace" not in by["node-a"]["metadata"]
    one = a.json("/apis/metrics.k8s.io/v1beta1/nodes/node-b")
    assert one["kind"] == "NodeMetrics" and one["usage"]["memory"] == "1536Mi"
    c = a.get("/apis/metrics.k8s.io/v1beta1/nodes/node-c")
    assert c.status_code == 404 and "no CPU and memory" in c.json()["message"]
    zone_b = a.json("/apis/metrics.k8s.io/v1beta1/nodes", labelSelector="zone=b")
    assert [n["metadata"]["name"] for n in zone_b["items"]] == ["node-b"]


def test_health_and_metrics(a) -> None:
    assert a.get("/healthz").text == "ok" and a.get("/readyz").status_code == 200
    a.get(f"{CM}/v1beta2/namespaces/shop/pods/*/http_requests_per_second")
    text = a.get("/metrics").text
    assert 'promop_adapter_requests_total{api="custom",code="200"}' in text
    assert "promop_adapter_request_duration_seconds_bucket" in text
    assert 'promop_adapter_registry_metrics{api="custom"} 4.0' in text
    assert 'promop_adapter_relists_total{result="success"} 1.0' in text


def test_not_ready_before_first_discovery(cluster_prom, adapter_factory) -> None:  # noqa: F811
    a = adapter_factory(cluster_prom.url, start=False)
    assert a.get("/readyz").status_code == 503
    assert a.get("/healthz").status_code == 200


def test_listing_failures_are_500s_that_say_why(cluster_prom, adapter_factory) -> None:  # noqa: F811
    class Broken:
        def list(self, *a):
            raise RuntimeError('pods is forbidden: User "system:serviceaccount:x:y" cannot list resource "pods"')

        def get(self, *a):
            raise RuntimeError("connection refused")

    a = adapter_factory(cluster_prom.url, lister=Broken())
    r = a.get(f"{CM}/v1beta2/namespaces/shop/pods/*/http_requests_per_second")
    assert r.status_code == 500 and "unable to list matching pods: pods is forbidden" in r.json()["message"]
    r = a.get("/apis/metrics.k8s.io/v1beta1/nodes/node-a")
    assert r.status_code == 500 and "connection refused" in r.json()["message"]
    # a single named object needs no listing
    assert a.get(f"{CM}/v1beta2/namespaces/shop/pods/web-1/http_requests_per_second").status_code == 200


def test_unconfigured_groups_still_answer_discovery(cluster_prom, adapter_factory) -> None:  # noqa: F811
    from adapter.adapter_fixtures import CONFIG

    a = adapter_factory(cluster_prom.url, config={"rules": CONFIG["rules"]})
    groups = {g["name"] for g in a.json("/apis")["groups"]}
    assert groups == {"custom.metrics.k8s.io", "external.metrics.k8s.io", "metrics.k8s.io"}
    assert a.json("/apis/external.metrics.k8s.io/v1beta1")["resources"] == []
    r = a.get("/apis/external.metrics.k8s.io/v1beta1/namespaces/shop/queue_depth")
    assert r.status_code == 404 and "no externalRules are configured" in r.json()["message"]
    r = a.get("/apis/metrics.k8s.io/v1beta1/nodes")
    assert r.status_code == 404 and "resourceRules is not configured" in r.json()["message"]
    assert a.json("/openapi/v2")["swagger"] == "2.0"
    empty = adapter_factory(cluster_prom.url, config={"externalRules": CONFIG["externalRules"]})
    assert empty.json("/apis/custom.metrics.k8s.io/v1beta2")["resources"] == []
    r = empty.get(f"{CM}/v1beta2/namespaces/shop/pods/*/x")
    assert r.status_code == 404 and "config `rules` is empty" in r.json()["message"]
