"""Fast reload's Role, as the operator renders it, under the sandbox's RBAC: the Prometheus
ServiceAccount can get and watch exactly its config Secret and rule ConfigMaps, and the reloader
works with nothing more."""
from __future__ import annotations

import base64

import pytest
import requests
import yaml

from promop.render.fast_reload import rbac_objects
from promop.render.model import RenderOptions
from promop.sandbox import Sandbox
from reloader_fixtures import reloader_factory, fast_flags  # noqa: F401 (pytest fixtures)
from reloader_testlib import CountingServer, gz, wait_for

NS = "monitoring"
CMS = [f"prometheus-k8s-rulefiles-{i}" for i in range(3)]


def _prometheus() -> dict:
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus",
            "metadata": {"name": "k8s", "namespace": NS, "uid": "uid-k8s",
                         "annotations": {"promop.dev/fast-reload": "true"}},
            "spec": {"serviceAccountName": "prometheus-k8s"}}


def _secret(name: str, interval: str) -> dict:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": NS},
            "data": {"prometheus.yaml.gz": base64.b64encode(gz(f"global: {{scrape_interval: {interval}}}\n")).decode()}}


@pytest.fixture
def cluster(tmp_path):
    with Sandbox(port=0, authorization="rbac") as sb:
        admin = requests.Session()
        admin.headers["Authorization"] = sb.client_configuration().api_key["BearerToken"]
        admin.headers["Authorization"] = "Bearer " + admin.headers["Authorization"].removeprefix("Bearer ")

        def post(path: str, body: dict) -> None:
            r = admin.post(f"{sb.url}{path}", json=body, timeout=5)
            assert r.status_code == 201, r.text
        post("/api/v1/namespaces", {"metadata": {"name": NS}})
        post(f"/api/v1/namespaces/{NS}/serviceaccounts", {"metadata": {"name": "prometheus-k8s"}})
        for obj in rbac_objects(_prometheus(), RenderOptions(), CMS):
            obj["metadata"].pop("ownerReferences")  # no Prometheus object in this test
            plural = "roles" if obj["kind"] == "Role" else "rolebindings"
            post(f"/apis/rbac.authorization.k8s.io/v1/namespaces/{NS}/{plural}", obj)
        post(f"/api/v1/namespaces/{NS}/secrets", _secret("prometheus-k8s", "1s"))
        post(f"/api/v1/namespaces/{NS}/secrets", _secret("other", "2s"))
        post(f"/api/v1/namespaces/{NS}/configmaps", {"metadata": {"name": CMS[0]}, "data": {"a.yaml": "groups: []\n"}})
        post(f"/api/v1/namespaces/{NS}/configmaps", {"metadata": {"name": "other"}, "data": {"x": "y"}})
        token = sb.service_account_token(NS, "prometheus-k8s")
        kubeconfig = tmp_path / "sa-kubeconfig"
        kubeconfig.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "sa",
            "clusters": [{"name": "sb", "cluster": {"server": sb.url}}],
            "contexts": [{"name": "sa", "context": {"cluster": "sb", "user": "sa"}}],
            "users": [{"name": "sa", "user": {"token": token}}]}))
        yield sb, admin, token, str(kubeconfig)


def test_the_role_allows_exactly_its_own_objects(cluster):
    sb, _, token, _ = cluster
    sa = requests.Session()
    sa.headers["Authorization"] = f"Bearer {token}"
    base = f"{sb.url}/api/v1/namespaces/{NS}"

    def status(method: str, path: str, **params: str) -> int:
        r = sa.request(method, f"{base}/{path}", params=params, timeout=5, stream=params.get("watch") == "1")
        r.close()
        return r.status_code

    assert status("GET", "secrets/prometheus-k8s") == 200
    assert status("GET", f"configmaps/{CMS[0]}") == 200
    assert status("GET", f"configmaps/{CMS[2]}") == 404  # named, absent: allowed to find out
    one = {"watch": "1", "timeoutSeconds": "1"}
    assert status("GET", "secrets", fieldSelector="metadata.name=prometheus-k8s", **one) == 200
    assert status("GET", "configmaps", fieldSelector=f"metadata.name={CMS[1]}", **one) == 200
    # nothing else: other objects, whole lists, writes
    assert status("GET", "secrets/other") == 403
    assert status("GET", "configmaps/other") == 403
    assert status("GET", "secrets", fieldSelector="metadata.name=other", **one) == 403
    assert status("GET", "secrets", **one) == 403
    assert status("GET", "secrets") == 403
    assert status("DELETE", "secrets/prometheus-k8s") == 403
    assert status("GET", "secrets", fieldSelector="metadata.name=prometheus-k8s") == 403  # list is not granted


def test_the_reloader_works_with_that_role_alone(cluster, tmp_path, reloader_factory, fast_flags):
    sb, admin, _, kubeconfig = cluster
    out = tmp_path / "out" / "prometheus.env.yaml"
    out.parent.mkdir()
    rules = tmp_path / "rules"
    prom = CountingServer()
    try:
        side = reloader_factory([f"--kubeconfig={kubeconfig}", f"--watch-secret={NS}/prometheus-k8s",
                                 f"--config-envsubst-file={out}", f"--reload-url={prom.url}", *fast_flags]
                                + [f"--watch-configmap={NS}/{cm}={rules / cm}" for cm in CMS])
        wait_for(lambda: out.exists() and "1s" in out.read_text(), what="the config read with the Role")
        wait_for(lambda: (rules / CMS[0] / "a.yaml").exists(), what="the rule file read with the Role")
        current = admin.get(f"{sb.url}/api/v1/namespaces/{NS}/secrets/prometheus-k8s", timeout=5).json()
        current["data"] = _secret("prometheus-k8s", "7s")["data"]
        assert admin.put(f"{sb.url}/api/v1/namespaces/{NS}/secrets/prometheus-k8s", json=current,
                         timeout=5).status_code == 200
        wait_for(lambda: "7s" in out.read_text(), what="the edit, watched with the Role")
        assert side.metric('reloader_api_watch_errors_total{resource="secrets"}') == 0
        assert side.metric('reloader_api_watch_errors_total{resource="configmaps"}') == 0
    finally:
        prom.close()
