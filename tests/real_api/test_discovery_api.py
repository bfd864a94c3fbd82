"""Discovery (legacy and aggregated) and CRD installation, on the sandbox and the real apiserver.

promop asks `/apis` with client-go's Accept header (aggregated v2, then v2beta1, then legacy): a
v1.28 apiserver answers v2beta1. The CRDs of crds/ must be accepted by the real apiextensions
apiserver through `kubectl apply --server-side` (the README's install step) and by
`promop run --manage-crds` (install_crds), and served at once.
"""

from __future__ import annotations

from pathlib import Path

from promop.kube.discovery import ACCEPT, api_groups, content_type_version, server_groups
from promop.kube.resources import PROMETHEUSES

ROOT = Path(__file__).resolve().parents[2]


def test_aggregated_discovery_answers_v2beta1_with_promops_groups(api):
    kube = api.admin
    api.need_crds()
    response = kube.api_client.rest_client.pool_manager.request(
        "GET", kube.host + "/apis", headers={"Accept": ACCEPT, **_auth(kube)})
    assert response.status == 200
    # kube-apiserver v1.28 serves aggregated discovery as v2beta1 only; the sandbox also serves v2
    # (1.30's), which the adapter's tests of the aggregator ask for alone (docs/sandbox.md)
    expected = "v2beta1" if api.real else "v2"
    assert content_type_version(response.headers.get("Content-Type")) == expected, response.headers.get("Content-Type")
    groups = {g["name"]: g for g in server_groups(kube)}
    assert groups["monitoring.coreos.com"]["preferredVersion"]["version"] == "v1"
    assert {"apps", "rbac.authorization.k8s.io", "apiextensions.k8s.io"} <= set(groups)
    import json

    doc = json.loads(response.data)
    assert doc["kind"] == "APIGroupDiscoveryList" and doc["apiVersion"] == f"apidiscovery.k8s.io/{expected}"
    monitoring = next(i for i in doc["items"] if i["metadata"]["name"] == "monitoring.coreos.com")
    v1 = next(v for v in monitoring["versions"] if v["version"] == "v1")
    prom = next(r for r in v1["resources"] if r["resource"] == "prometheuses")
    assert prom["scope"] == "Namespaced" and prom["responseKind"]["kind"] == "Prometheus"
    assert sorted(s["subresource"] for s in prom.get("subresources") or []) == ["scale", "status"]
    assert sorted(prom["verbs"]) == sorted(["delete", "deletecollection", "get", "list", "patch", "create",
                                             "update", "watch"])
    assert "promop" not in (prom.get("categories") or []) and prom.get("shortNames") == ["prom"]


def test_legacy_discovery_when_asked_for_json(api):
    kube = api.admin
    response = kube.api_client.rest_client.pool_manager.request(
        "GET", kube.host + "/apis", headers={"Accept": "application/json", **_auth(kube)})
    import json

    doc = json.loads(response.data)
    assert doc["kind"] == "APIGroupList"
    assert "apps" in {g["name"] for g in api_groups(doc)}


def test_crds_install_again_by_kubectl_server_side(api):
    api.need_crds()
    proc = api.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(ROOT / "crds"))
    assert "customresourcedefinition.apiextensions.k8s.io/prometheuses.monitoring.coreos.com serverside-applied" \
        in proc.stdout, proc.stdout
    # install_crds (what --manage-crds runs) made them first: the session's setup on the real one,
    # need_crds() on the sandbox; test_operator_api runs it again under the bundle's RBAC
    assert api.admin.list(PROMETHEUSES, api.ns)["items"] == []


def _auth(kube) -> dict:
    key = kube.api_client.configuration.api_key.get("authorization") or \
        kube.api_client.configuration.api_key.get("BearerToken")
    return {"Authorization": key} if key else {}
