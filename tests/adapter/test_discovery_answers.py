"""The adapter's discovery answers, as kube-aggregator and client-go ask for them.

kube-aggregator v1.26-v1.29 asks `/apis` for `application/json;g=apidiscovery.k8s.io;v=v2beta1;
as=APIGroupDiscoveryList` and decodes any 200 as that list (a plain APIGroupList fails: every
group-version of the backend goes Stale, the HPA finds "no known available metric versions");
v1.30+ asks v2 then v2beta1 and goes by the Content-Type. Only a 406 makes either fall back to
`/apis/<group>/<version>`."""

from __future__ import annotations

import pytest

from adapter.adapter_fixtures import adapter_factory, cluster_prom, prometheus_factory  # noqa: F401
from promop.kube import discovery as disco

pytestmark = pytest.mark.prometheus
V2BETA1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
SERVED = {("custom.metrics.k8s.io", "v1beta2"), ("custom.metrics.k8s.io", "v1beta1"),
          ("external.metrics.k8s.io", "v1beta1"), ("metrics.k8s.io", "v1beta1")}


@pytest.fixture
def a(cluster_prom, adapter_factory):  # noqa: F811
    return adapter_factory(cluster_prom.url)


def _get(a, path: str, accept: str | None):
    headers = {"Accept": accept} if accept is not None else {}
    return a.session.get(a.url + path, headers=headers, timeout=30)


def _flatten(resources: list[dict]) -> set[tuple]:
    """Aggregated resources back to (name, namespaced, kind, verbs) rows, as client-go converts them."""
    rows = set()
    for r in resources:
        if r["responseKind"]["kind"]:
            rows.add((r["resource"], r["scope"] == "Namespaced", r["responseKind"]["kind"], tuple(r["verbs"])))
        for s in r.get("subresources") or []:
            rows.add((f"{r['resource']}/{s['subresource']}", r["scope"] == "Namespaced", s["responseKind"]["kind"],
                      tuple(s["verbs"])))
    return rows


@pytest.mark.parametrize("accept,version", [
    (V2BETA1, "v2beta1"),                                    # kube-aggregator v1.26-v1.29
    (f"{V2},{V2BETA1}", "v2"),                                # kube-aggregator v1.30+
    (f"{V2BETA1},{V2}", "v2beta1"),                           # the client's order decides
    (f"application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,{V2},"
     f"{V2BETA1},application/json", "v2"),                   # client-go / kubectl: protobuf skipped
])
def test_apis_answers_aggregated_discovery_in_the_version_asked(a, accept, version) -> None:
    r = _get(a, "/apis", accept)
    assert r.status_code == 200
    assert r.headers["Content-Type"] == f"application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList"
    doc = r.json()
    assert doc["kind"] == "APIGroupDiscoveryList" and doc["apiVersion"] == f"apidiscovery.k8s.io/{version}"
    served = {(g["metadata"]["name"], v["version"]) for g in doc["items"] for v in g["versions"]}
    assert served == SERVED
    by_group = {g["metadata"]["name"]: g for g in doc["items"]}
    # the first version is the preferred one, as in the APIGroup
    assert [v["version"] for v in by_group["custom.metrics.k8s.io"]["versions"]] == ["v1beta2", "v1beta1"]
    assert all(v["freshness"] == "Current" for g in doc["items"] for v in g["versions"])
    metrics = by_group["metrics.k8s.io"]["versions"][0]["resources"]
    assert [(r["resource"], r["scope"], r["responseKind"]["kind"], r["verbs"]) for r in metrics] == [
        ("nodes", "Cluster", "NodeMetrics", ["get", "list"]), ("pods", "Namespaced", "PodMetrics", ["get", "list"])]


def test_aggregated_resources_agree_with_every_legacy_resource_list(a) -> None:
    doc = _get(a, "/apis", V2).json()
    for group in doc["items"]:
        for v in group["versions"]:
            name = group["metadata"]["name"]
            legacy = a.json(f"/apis/{name}/{v['version']}")
            rows = {(r["name"], r["namespaced"], r["kind"], tuple(r["verbs"])) for r in legacy["resources"]}
            assert _flatten(v["resources"]) == rows, (name, v["version"])
            assert legacy["resources"], (name, v["version"])   # not vacuous: the fixture serves metrics


def test_custom_metrics_are_subresources_of_their_resource(a) -> None:
    doc = _get(a, "/apis", V2BETA1).json()
    cm = next(g for g in doc["items"] if g["metadata"]["name"] == "custom.metrics.k8s.io")
    pods = next(r for r in cm["versions"][0]["resources"] if r["resource"] == "pods")
    assert pods["scope"] == "Namespaced"
    assert pods["subresources"] == [{"subresource": "http_requests_per_second",
                                     "responseKind": {"group": "", "version": "", "kind": "MetricValueList"},
                                     "verbs": ["get"]}]
    namespaces = next(r for r in cm["versions"][0]["resources"] if r["resource"] == "namespaces")
    assert namespaces["scope"] == "Cluster"


@pytest.mark.parametrize("accept", [None, "application/json", "*/*", "application/json, */*"])
def test_legacy_group_list_for_a_legacy_accept(a, accept) -> None:
    r = _get(a, "/apis", accept)
    assert r.status_code == 200 and r.headers["Content-Type"] == "application/json"
    doc = r.json()
    assert doc["kind"] == "APIGroupList" and doc["apiVersion"] == "v1"
    groups = {g["name"]: g for g in doc["groups"]}
    assert groups["custom.metrics.k8s.io"]["preferredVersion"] == {
        "groupVersion": "custom.metrics.k8s.io/v1beta2", "version": "v1beta2"}


def test_unservable_accept_is_406_so_the_aggregator_falls_back(a) -> None:
    r = _get(a, "/apis", "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")
    assert r.status_code == 406 and r.json()["reason"] == "NotAcceptable"
    assert _get(a, "/apis", "application/json;g=apidiscovery.k8s.io;v=v3;as=APIGroupDiscoveryList").status_code == 406
    # aggregated discovery lives at /apis only: the group-version documents refuse it ...
    for group, version in sorted(SERVED):
        r = _get(a, f"/apis/{group}/{version}", V2)
        assert r.status_code == 406, (group, version)
        # ... and answer the legacy list to the aggregator's fallback request (Accept: application/json)
        r = _get(a, f"/apis/{group}/{version}", "application/json")
        assert r.status_code == 200 and r.headers["Content-Type"] == "application/json"
        doc = r.json()
        assert (doc["kind"], doc["apiVersion"], doc["groupVersion"]) == ("APIResourceList", "v1", f"{group}/{version}")
    assert _get(a, "/apis/metrics.k8s.io", V2).status_code == 406
    assert _get(a, "/apis/metrics.k8s.io", f"{V2},application/json").json()["kind"] == "APIGroup"


def test_the_documents_are_what_the_aggregators_legacy_conversion_accepts(a) -> None:
    """kube-aggregator converts a legacy answer with ConvertGroupVersionIntoToDiscovery, which refuses
    a resource list whose subresources disagree with their parent's scope."""
    for group, version in SERVED:
        disco.to_discovery_resources(a.json(f"/apis/{group}/{version}")["resources"])
