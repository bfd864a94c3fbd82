"""The adapter's aggregated document built from its resource lists (no server): one group item per
served group, versions in preference order, and a metric registered both namespaced and cluster-scoped
kept (its parent Namespaced) instead of a list the aggregator's conversion would refuse."""

from __future__ import annotations

from promop.adapter.discovery import aggregated, group_list
from promop.kube.discovery import to_discovery_resources

GROUPS = {"custom.metrics.k8s.io": ("v1beta2", "v1beta1"), "metrics.k8s.io": ("v1beta1",)}
MIXED = [{"name": "services/hits", "namespaced": False, "kind": "MetricValueList", "verbs": ["get"]},
         {"name": "services/rps", "namespaced": True, "kind": "MetricValueList", "verbs": ["get"]},
         {"name": "namespaces/rps", "namespaced": False, "kind": "MetricValueList", "verbs": ["get"]}]


def _lists(group: str, version: str) -> dict:
    if group == "metrics.k8s.io":
        return {"resources": [{"name": "pods", "namespaced": True, "kind": "PodMetrics", "verbs": ["get", "list"]}]}
    return {"resources": MIXED}


def test_aggregated_document_shape_and_order() -> None:
    doc = aggregated(GROUPS, _lists, "v2beta1")
    assert (doc["kind"], doc["apiVersion"]) == ("APIGroupDiscoveryList", "apidiscovery.k8s.io/v2beta1")
    assert [g["metadata"]["name"] for g in doc["items"]] == list(GROUPS)
    assert [v["version"] for v in doc["items"][0]["versions"]] == ["v1beta2", "v1beta1"]
    assert all(v["freshness"] == "Current" for g in doc["items"] for v in g["versions"])


def test_a_metric_in_both_scopes_keeps_a_namespaced_parent() -> None:
    doc = aggregated(GROUPS, _lists, "v2")
    resources = {r["resource"]: r for r in doc["items"][0]["versions"][0]["resources"]}
    assert resources["services"]["scope"] == "Namespaced"
    assert sorted(s["subresource"] for s in resources["services"]["subresources"]) == ["hits", "rps"]
    assert resources["namespaces"]["scope"] == "Cluster"


def test_legacy_group_list() -> None:
    doc = group_list(GROUPS)
    assert (doc["kind"], doc["apiVersion"]) == ("APIGroupList", "v1")
    assert doc["groups"][0]["preferredVersion"] == {"groupVersion": "custom.metrics.k8s.io/v1beta2",
                                                    "version": "v1beta2"}
    assert [v["version"] for v in doc["groups"][0]["versions"]] == ["v1beta2", "v1beta1"]
    # the strict conversion (the aggregator's, after a 406) would refuse MIXED: why /apis answers aggregated
    try:
        to_discovery_resources(MIXED)
    except ValueError:
        pass
    else:
        raise AssertionError("a scope mismatch must be refused by the strict conversion")
