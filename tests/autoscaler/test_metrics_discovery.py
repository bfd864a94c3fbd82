"""`hpa explain` finds the custom metrics API version through discovery, as the HPA's custom-metrics
client does (k8s.io/metrics/pkg/client/custom_metrics: ServerGroups, preferred version if known, else
the first known; "no known available metric versions found" otherwise). Stale versions of an
aggregated discovery document are invisible to it (client-go), which is how a real HPA never scales
behind an aggregator that could not use the metrics server's discovery."""

from __future__ import annotations

import pytest

from promop.autoscale.model import MetricValues
from promop.autoscale.spec import parse_hpa_spec
from promop.autoscaler.explain_live import MetricsApiSource
from promop.autoscaler.metrics_versions import NoMetricVersions, choose_custom_version
from promop.kube import discovery

SPEC = parse_hpa_spec({"maxReplicas": 10, "metrics": [
    {"type": "Pods", "pods": {"metric": {"name": "rps"}, "target": {"type": "AverageValue", "averageValue": "1"}}},
    {"type": "Object", "object": {"describedObject": {"kind": "Service", "name": "web"}, "metric": {"name": "hits"},
                                  "target": {"type": "Value", "value": "1"}}}]})


def aggregated(*versions: tuple[str, str], resources: bool = True) -> dict:
    return {"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {}, "items": [
        {"metadata": {"name": "apps"}, "versions": [{"version": "v1", "freshness": "Current"}]},
        {"metadata": {"name": "custom.metrics.k8s.io"}, "versions": [
            {"version": v, "freshness": f, **({"resources": []} if resources else {})} for v, f in versions]}]}


class Client:
    def __init__(self, apis: dict):
        self.apis = apis
        self.gets: list[tuple] = []
        self.accepts: list[str] = []

    def _request(self, method, path, *, accept="application/json", **_):
        assert (method, path) == ("GET", "/apis")
        self.accepts.append(accept)
        return self.apis

    def get(self, res, name, namespace=None, subresource=None, **_):
        self.gets.append((res.group, res.version, res.plural, name, subresource))
        return {"items": [{"describedObject": {"name": "p"}, "value": "2"}]}


def _fill(client) -> MetricValues:
    values = MetricValues()
    MetricsApiSource(client).fill(SPEC, "shop", ["p"], values, 0.0)
    return values


def test_preferred_current_version_is_asked() -> None:
    client = Client(aggregated(("v1beta2", "Current"), ("v1beta1", "Current")))
    values = _fill(client)
    assert not values.errors
    assert {g[1] for g in client.gets} == {"v1beta2"}
    # discovery was asked as client-go asks: aggregated v2, v2beta1, then legacy JSON
    assert client.accepts == [discovery.ACCEPT]


def test_a_stale_preferred_version_is_skipped_for_the_next_current_one() -> None:
    client = Client(aggregated(("v1beta2", "Stale"), ("v1beta1", "Current")))
    values = _fill(client)
    assert not values.errors and {g[1] for g in client.gets} == {"v1beta1"}
    assert values.pods["rps"]["p"].value == 2000


def test_all_stale_is_the_hpas_failure() -> None:
    client = Client(aggregated(("v1beta2", "Stale"), ("v1beta1", "Stale"), resources=False))
    values = _fill(client)
    assert client.gets == []   # no guessed path
    assert values.errors == {
        "Pods/rps": "unable to fetch metrics from custom metrics API: no known available metric versions found",
        "Object/hits": "unable to fetch metrics from custom metrics API: no known available metric versions found"}


def test_missing_group() -> None:
    client = Client({"kind": "APIGroupList", "apiVersion": "v1", "groups": []})
    values = _fill(client)
    assert values.errors["Pods/rps"].endswith("no custom metrics API (custom.metrics.k8s.io) registered")


def test_legacy_group_list_and_version_choice() -> None:
    legacy = {"kind": "APIGroupList", "apiVersion": "v1", "groups": [{
        "name": "custom.metrics.k8s.io",
        "versions": [{"groupVersion": "custom.metrics.k8s.io/v1alpha9", "version": "v1alpha9"},
                     {"groupVersion": "custom.metrics.k8s.io/v1beta1", "version": "v1beta1"}],
        "preferredVersion": {"groupVersion": "custom.metrics.k8s.io/v1alpha9", "version": "v1alpha9"}}]}
    # an unknown preferred version: the first known one
    assert choose_custom_version(discovery.api_groups(legacy)) == "v1beta1"
    legacy["groups"][0]["versions"] = legacy["groups"][0]["versions"][:1]
    with pytest.raises(NoMetricVersions, match="no known available metric versions found"):
        choose_custom_version(discovery.api_groups(legacy))


def test_api_groups_keeps_an_all_stale_group_without_versions() -> None:
    groups = {g["name"]: g for g in discovery.api_groups(aggregated(("v1beta2", "Stale"), ("v1beta1", "Current")))}
    assert groups["custom.metrics.k8s.io"]["preferredVersion"] == {
        "groupVersion": "custom.metrics.k8s.io/v1beta1", "version": "v1beta1"}
    assert [v["version"] for v in groups["custom.metrics.k8s.io"]["versions"]] == ["v1beta1"]
    groups = {g["name"]: g for g in discovery.api_groups(aggregated(("v1beta2", "Stale")))}
    assert groups["custom.metrics.k8s.io"]["versions"] == []
    assert groups["apps"]["preferredVersion"]["groupVersion"] == "apps/v1"
