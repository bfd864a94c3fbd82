"""KubeLister against the sandbox: `*` requests answer from the informer, per namespace and selector,
and a remembered answer never outlives a change to the objects it came from."""

from __future__ import annotations

from prom.prom_fixtures import wait_for
from promop.adapter.config import GroupResource
from promop.adapter.lister import KubeLister
from promop.adapter.resources import ResourceMapper
from promop.adapter.selector import parse_selector
from promop.kube.client import KubeClient
from promop.kube.resources import NAMESPACES, Resource

PODS = Resource("", "v1", "pods", True, "Pod")


def _names(objs: list[dict]) -> list[str]:
    return [o["metadata"]["name"] for o in objs]


def test_answers_follow_the_objects(sandbox, sandbox_kubeconfig) -> None:
    kube = KubeClient.from_kubeconfig(sandbox_kubeconfig)
    for ns in ("shop", "other"):
        kube.create(NAMESPACES, {"metadata": {"name": ns}})
    for ns, name, app in (("shop", "web-2", "web"), ("shop", "web-1", "web"), ("shop", "db-1", "db"),
                          ("other", "web-9", "web")):
        kube.create(PODS, {"metadata": {"name": name, "namespace": ns, "labels": {"app": app}},
                           "spec": {"containers": [{"name": "c", "image": "x"}]}}, ns)
    pods = ResourceMapper().get(GroupResource("", "pods"))
    lister = KubeLister(kube)
    web = parse_selector("app=web")
    try:
        def listed() -> list[str]:
            return _names(lister.list(pods, "shop", web, "app=web"))

        wait_for(lambda: lister._informer(pods) is not None, 10, "the pod informer to sync")
        assert listed() == ["web-1", "web-2"]                      # this namespace only, sorted
        assert listed() == ["web-1", "web-2"]                      # the remembered answer
        assert _names(lister.list(pods, None, web, "app=web")) == ["web-9", "web-1", "web-2"]  # by namespace, name
        assert _names(lister.list(pods, "shop", [], "")) == ["db-1", "web-1", "web-2"]

        pod = kube.get(PODS, "web-2", "shop")
        pod["metadata"]["labels"]["app"] = "db"                   # a change in place: same key, same count
        kube.update(PODS, pod, "shop")
        wait_for(lambda: listed() == ["web-1"], 10, "the relabelled pod to leave the answer")
        kube.delete(PODS, "web-1", "shop")
        wait_for(lambda: listed() == [], 10, "the deleted pod to leave the answer")
    finally:
        lister.stop()
