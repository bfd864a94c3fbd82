"""A custom resource installed while the adapter runs becomes mappable at the next relist."""

from __future__ import annotations

import time

import pytest

from adapter.adapter_fixtures import adapter_factory, prometheus_factory  # noqa: F401 - fixtures
from prom.prom_fixtures import gauge, wait_for
from promop.adapter.lister import KubeLister, get_json
from promop.adapter.resources import discover
from promop.kube.client import KubeClient
from promop.kube.resources import Resource

pytestmark = pytest.mark.prometheus
CRDS = Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions", False, "CustomResourceDefinition")


def test_crd_installed_later(prometheus_factory, adapter_factory, sandbox) -> None:  # noqa: F811
    now = int(time.time()) // 15 * 15
    prom = prometheus_factory([gauge("widget_temperature", {"namespace": "default", "widget": "w1"},
                                     now - 900, now + 1800, 15, 21.5)])
    config = {"rules": [{"seriesQuery": '{__name__="widget_temperature"}', "resources": {"template": "<<.Resource>>"},
                         "metricsQuery": "max(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)"}]}
    kube = KubeClient(sandbox.api_client())
    lister = KubeLister(kube)
    a = adapter_factory(prom.url, config=config, lister=lister)
    a.adapter.discover_resources = lambda: discover(lambda path: get_json(kube, path))
    path = "/apis/custom.metrics.k8s.io/v1beta2/namespaces/default/widgets.example.com/w1/widget_temperature"
    try:
        assert a.get(path).status_code == 404
        kube.create(CRDS, {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                           "metadata": {"name": "widgets.example.com"},
                           "spec": {"group": "example.com", "scope": "Namespaced",
                                    "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                                    "versions": [{"name": "v1", "served": True, "storage": True,
                                                  "schema": {"openAPIV3Schema": {"type": "object",
                                                             "x-kubernetes-preserve-unknown-fields": True}}}]}})
        wait_for(lambda: a.adapter.relist() is not None and a.get(path).status_code == 200, 20, "the CRD to be mapped")
        item = a.json(path)["items"][0]
        assert item["describedObject"] == {"kind": "Widget", "namespace": "default", "name": "w1",
                                           "apiVersion": "example.com/v1"}
        assert item["value"] == "21500m"
    finally:
        lister.stop()
