"""The sandbox's aggregated discovery merges each APIService backend's group-version as kube-aggregator's
discovery manager does (pkg/apiserver/handler_discovery.go): aggregated `GET /apis` first, legacy
`/apis/<group>/<version>` only after a 406, and `freshness: Stale` with no resources for any answer it
cannot use, which client-go then hides (kubectl api-versions, kubectl top, the HPA)."""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests

GROUP, VERSION = "custom.metrics.k8s.io", "v1beta2"
V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
V2BETA1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
KUBECTL = shutil.which("kubectl")


def resource_list(resources: list[dict]) -> dict:
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": f"{GROUP}/{VERSION}",
            "resources": resources}


PODS_METRIC = {"name": "pods/rps", "singularName": "", "namespaced": True, "kind": "MetricValueList", "verbs": ["get"]}
AGGREGATED = {"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {}, "items": [
    {"metadata": {"name": GROUP}, "versions": [{"version": VERSION, "freshness": "Current", "resources": [
        {"resource": "pods", "responseKind": {"group": "", "version": "", "kind": ""}, "scope": "Namespaced",
         "verbs": [], "subresources": [{"subresource": "rps", "responseKind": {"group": "", "version": "",
                                                                               "kind": "MetricValueList"},
                                        "verbs": ["get"]}]}]}]}]}


class Backend:
    """Answers `routes[path] = (status, content type, body)`; records (path, Accept, user, groups)."""

    def __init__(self, routes: dict) -> None:
        self.routes = routes
        self.seen: list[tuple[str, str, str, list[str]]] = []
        backend = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def do_GET(self) -> None:  # noqa: N802
                backend.seen.append((self.path, self.headers.get("Accept", ""), self.headers.get("X-Remote-User", ""),
                                     self.headers.get_all("X-Remote-Group") or []))
                status, ctype, body = backend.routes.get(self.path, (404, "application/json", {"kind": "Status"}))
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *a) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def serve(sandbox):
    made: list[Backend] = []

    def make(routes: dict, version: str = VERSION, priority: int = 100) -> Backend:
        b = Backend(routes)
        made.append(b)
        obj = {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
               "metadata": {"name": f"{version}.{GROUP}", "annotations": {"sandbox.promop.dev/url": b.url}},
               "spec": {"group": GROUP, "version": version, "groupPriorityMinimum": 100,
                        "versionPriority": priority, "insecureSkipTLSVerify": True}}
        r = requests.post(f"{sandbox.url}/apis/apiregistration.k8s.io/v1/apiservices", json=obj, timeout=10)
        assert r.status_code == 201, r.text
        return b

    yield make
    for b in made:
        b.close()


def _entry(sandbox, accept: str = V2, group: str = GROUP, version: str = VERSION) -> dict:
    r = requests.get(f"{sandbox.url}/apis", headers={"Accept": accept}, timeout=30)
    assert r.status_code == 200 and r.headers["Content-Type"] == accept.split(",")[0]
    doc = r.json()
    item = next(g for g in doc["items"] if g["metadata"]["name"] == group)
    return next(v for v in item["versions"] if v["version"] == version)


LEGACY_OK = (200, "application/json", resource_list([PODS_METRIC]))
STALE = {"version": VERSION, "freshness": "Stale"}


@pytest.mark.parametrize("routes", [
    # a 200 that is no APIGroupDiscoveryList: the old adapter's APIGroupList (v1.26-v1.29 decode it and fail)
    {"/apis": (200, "application/json", {"kind": "APIGroupList", "apiVersion": "v1", "groups": []}),
     f"/apis/{GROUP}/{VERSION}": LEGACY_OK},
    # an aggregated Content-Type over the wrong body
    {"/apis": (200, V2, {"kind": "APIGroupList", "apiVersion": "v1", "groups": []})},
    # unavailable, not found: only a 406 falls back to legacy
    {"/apis": (503, "application/json", {"kind": "Status"}), f"/apis/{GROUP}/{VERSION}": LEGACY_OK},
    {"/apis": (404, "application/json", {"kind": "Status"}), f"/apis/{GROUP}/{VERSION}": LEGACY_OK},
    # the legacy fallback fails: not 200, not an APIResourceList, or a subresource scope its parent lacks
    {"/apis": (406, "application/json", {"kind": "Status"})},
    {"/apis": (406, "application/json", {"kind": "Status"}),
     f"/apis/{GROUP}/{VERSION}": (200, "application/json", {"kind": "APIGroup", "apiVersion": "v1"})},
    {"/apis": (406, "application/json", {"kind": "Status"}), f"/apis/{GROUP}/{VERSION}": (200, "application/json",
     resource_list([PODS_METRIC, {**PODS_METRIC, "name": "pods/other", "namespaced": False}]))},
], ids=["apigrouplist", "wrong-body", "503", "404", "406-then-404", "406-then-apigroup", "406-then-scope-mismatch"])
def test_unusable_answers_are_stale_without_resources(sandbox, serve, routes) -> None:
    serve(routes)
    assert _entry(sandbox) == STALE
    assert _entry(sandbox, V2BETA1) == STALE


def test_an_unreachable_backend_is_stale(sandbox, serve) -> None:
    b = serve({})
    b.close()
    assert _entry(sandbox) == STALE


def test_406_falls_back_to_legacy_discovery(sandbox, serve) -> None:
    b = serve({"/apis": (406, "application/json", {"kind": "Status"}), f"/apis/{GROUP}/{VERSION}": LEGACY_OK})
    entry = _entry(sandbox)
    assert entry["freshness"] == "Current"
    assert entry["resources"] == [{"resource": "pods", "responseKind": {"group": "", "version": "", "kind": ""},
                                   "scope": "Namespaced", "singularResource": "", "verbs": [],
                                   "subresources": [{"subresource": "rps", "verbs": ["get"], "responseKind": {
                                       "group": "", "version": "", "kind": "MetricValueList"}}]}]
    # asked as kube-aggregator asks: aggregated v2 then v2beta1, as system:kube-aggregator
    first, legacy = b.seen[0], next(s for s in b.seen if s[0] != "/apis")
    assert first == ("/apis", f"{V2},{V2BETA1}", "system:kube-aggregator", ["system:masters"])
    assert legacy[:3] == (f"/apis/{GROUP}/{VERSION}", "application/json", "system:kube-aggregator")


def test_aggregated_answer_is_taken_and_versions_it_lacks_are_current_but_empty(sandbox, serve) -> None:
    serve({"/apis": (200, V2, AGGREGATED)})
    serve({"/apis": (200, V2, AGGREGATED)}, version="v1beta1", priority=50)
    entry = _entry(sandbox)
    assert entry["freshness"] == "Current"
    assert entry["resources"][0]["subresources"][0]["subresource"] == "rps"
    assert _entry(sandbox, version="v1beta1") == {"version": "v1beta1", "freshness": "Current"}   # no resources
    doc = requests.get(f"{sandbox.url}/apis", headers={"Accept": V2BETA1}, timeout=30).json()
    assert doc["apiVersion"] == "apidiscovery.k8s.io/v2beta1"
    item = next(g for g in doc["items"] if g["metadata"]["name"] == GROUP)
    assert [v["version"] for v in item["versions"]] == ["v1beta2", "v1beta1"]   # by versionPriority


def test_built_in_groups_and_the_legacy_documents_stay(sandbox, serve) -> None:
    serve({"/apis": (200, "application/json", {"kind": "APIGroupList", "apiVersion": "v1", "groups": []})})
    apps = _entry(sandbox, group="apps", version="v1")
    assert apps["freshness"] == "Current"
    deployments = next(r for r in apps["resources"] if r["resource"] == "deployments")
    assert deployments["scope"] == "Namespaced" and deployments["responseKind"]["kind"] == "Deployment"
    assert {s["subresource"] for s in deployments["subresources"]} >= {"status", "scale"}
    scale = next(s for s in deployments["subresources"] if s["subresource"] == "scale")
    assert scale["responseKind"] == {"group": "autoscaling", "version": "v1", "kind": "Scale"}
    core = requests.get(f"{sandbox.url}/api", headers={"Accept": f"{V2},application/json"}, timeout=30)
    assert core.headers["Content-Type"] == V2
    [item] = core.json()["items"]
    assert item["metadata"]["name"] == "" and [v["version"] for v in item["versions"]] == ["v1"]
    legacy = requests.get(f"{sandbox.url}/apis", headers={"Accept": "application/json"}, timeout=30)
    assert legacy.headers["Content-Type"].startswith("application/json") and legacy.json()["kind"] == "APIGroupList"
    assert GROUP in {g["name"] for g in legacy.json()["groups"]}
    assert requests.get(f"{sandbox.url}/api", timeout=30).json()["kind"] == "APIVersions"
    bad = requests.get(f"{sandbox.url}/apis", headers={"Accept": "application/json;g=apidiscovery.k8s.io;v=v9;"
                                                                  "as=APIGroupDiscoveryList"}, timeout=30)
    assert bad.status_code == 406


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
@pytest.mark.parametrize("usable", [True, False])
def test_kubectl_hides_a_stale_group_version(sandbox, sandbox_kubeconfig, serve, tmp_path, usable) -> None:
    serve({"/apis": (200, V2, AGGREGATED)} if usable else
          {"/apis": (200, "application/json", {"kind": "APIGroupList", "apiVersion": "v1", "groups": []})})
    out = subprocess.run([KUBECTL, f"--kubeconfig={sandbox_kubeconfig}", f"--cache-dir={tmp_path / 'kc'}",
                          "api-versions"], capture_output=True, text=True, timeout=60)
    listed = set(out.stdout.split())
    assert "apps/v1" in listed
    assert (f"{GROUP}/{VERSION}" in listed) is usable, out.stdout
