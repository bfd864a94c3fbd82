"""The adapter's view of the cluster under API faults: a burst of 500s on pod lists, closed and
expired watches; it converges, and pods created or deleted meanwhile are seen, none lost."""

from __future__ import annotations

import pytest

from adapter.adapter_fixtures import (  # noqa: F401 - fixtures
    adapter_factory, cluster_prom, prometheus_factory,
)
from prom.prom_fixtures import wait_for
from promop.adapter.lister import KubeLister
from promop.kube.client import KubeClient
from promop.kube.resources import NAMESPACES, Resource

pytestmark = pytest.mark.prometheus
PODS = Resource("", "v1", "pods", True, "Pod")
PATH = "/apis/custom.metrics.k8s.io/v1beta2/namespaces/shop/pods/*/http_requests_per_second"


def _pod(name: str) -> dict:
    return {"metadata": {"name": name, "namespace": "shop", "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "app", "image": "x"}]}}


def test_lister_converges_through_faults(cluster_prom, adapter_factory, sandbox) -> None:  # noqa: F811
    kube = KubeClient(sandbox.api_client())
    kube.create(NAMESPACES, {"metadata": {"name": "shop"}})
    kube.create(PODS, _pod("web-1"), "shop")
    lister = KubeLister(kube)
    a = adapter_factory(cluster_prom.url, lister=lister)
    try:
        def names() -> list[str]:
            r = a.get(PATH)
            return [i["describedObject"]["name"] for i in r.json()["items"]] if r.status_code == 200 else []

        wait_for(lambda: names() == ["web-1"], 20, "web-1 served")
        sandbox.faults.fail_next(20, 500, verb="list", resource="pods")
        sandbox.faults.close_watches()
        sandbox.faults.compact()
        kube.create(PODS, _pod("web-2"), "shop")       # created while lists fail and watches restart
        wait_for(lambda: sandbox.faults.pending() == 0 or names() == ["web-1", "web-2"], 30, "the burst to pass")
        wait_for(lambda: names() == ["web-1", "web-2"], 30, "web-2 to be seen after the faults")
        kube.delete(PODS, "web-1", "shop")
        wait_for(lambda: names() == ["web-2"], 30, "web-1's deletion to be seen")
    finally:
        lister.stop()
