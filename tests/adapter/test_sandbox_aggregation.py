"""The sandbox's aggregation layer on its own, against a small recording backend: every group of
the user forwarded as its own X-Remote-Group header, and APIService `Available` conditions as
kube-aggregator's availability controller sets them (shown by `kubectl get apiservice`)."""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests

from prom.prom_fixtures import wait_for
from promop.sandbox import Sandbox

GROUP, VERSION = "custom.metrics.k8s.io", "v1beta2"


class Backend:
    """Plain HTTP; records (path, X-Remote-User, [X-Remote-Group...]); `discovery_status` answers
    /apis/<group>/<version>."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, list[str]]] = []
        self.discovery_status = 200
        backend = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"   # a connection per request: once closed, nothing answers

            def do_GET(self) -> None:  # noqa: N802
                backend.seen.append((self.path, self.headers.get("X-Remote-User", ""),
                                     self.headers.get_all("X-Remote-Group") or []))
                code = backend.discovery_status if self.path == f"/apis/{GROUP}/{VERSION}" else 200
                body = json.dumps({"kind": "APIResourceList", "groupVersion": f"{GROUP}/{VERSION}",
                                   "resources": []}).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

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
def backend():
    b = Backend()
    yield b
    b.close()


def _apiservice(name: str, group: str = GROUP, version: str = VERSION, url: str | None = None,
                service: dict | None = None) -> dict:
    spec: dict = {"group": group, "version": version, "groupPriorityMinimum": 100, "versionPriority": 100,
                  "insecureSkipTLSVerify": True}
    if service:
        spec["service"] = service
    meta: dict = {"name": name}
    if url:
        meta["annotations"] = {"sandbox.promop.dev/url": url}
    return {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": meta, "spec": spec}


def _create(sb: Sandbox, obj: dict, token: str | None = None) -> None:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    kind = obj["kind"]
    path = ("/apis/apiregistration.k8s.io/v1/apiservices" if kind == "APIService" else
            "/api/v1/namespaces" if kind == "Namespace" else f"/api/v1/namespaces/{obj['metadata']['namespace']}/"
            f"{kind.lower()}s")
    if kind == "Namespace" and requests.get(f"{sb.url}{path}/{obj['metadata']['name']}", headers=headers,
                                            timeout=10).status_code == 200:
        return
    r = requests.post(sb.url + path, json=obj, headers=headers, timeout=10)
    assert r.status_code == 201, r.text


def _available(sb: Sandbox, name: str) -> dict | None:
    obj = requests.get(f"{sb.url}/apis/apiregistration.k8s.io/v1/apiservices/{name}", timeout=10).json()
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == "Available"), None)


def _wait_condition(sb: Sandbox, name: str, status: str, reason: str) -> dict:
    def check() -> dict | None:
        c = _available(sb, name)
        return c if c and (c["status"], c["reason"]) == (status, reason) else None
    return wait_for(check, 20, f"{name} Available={status} ({reason})", interval=0.2)  # type: ignore[return-value]


def test_every_group_of_the_user_is_forwarded(sandbox, backend) -> None:
    _create(sandbox, _apiservice(f"{VERSION}.{GROUP}", url=backend.url))
    path = f"/apis/{GROUP}/{VERSION}/namespaces/shop/pods/*/m"
    r = requests.get(sandbox.url + path, headers={"X-Remote-User": "mallory", "X-Remote-Group": "system:masters"},
                     timeout=10)
    assert r.status_code == 200
    (got,) = [s for s in backend.seen if s[0] == path]
    # the sandbox's user, all its groups, one header each; nothing the client claimed itself
    assert got == (path, "system:admin", ["system:masters", "system:authenticated"])


def test_every_group_of_a_service_account_is_forwarded(backend) -> None:
    with Sandbox(port=0, authorization="rbac") as sb:
        _create(sb, _apiservice(f"{VERSION}.{GROUP}", url=backend.url), token="sandbox")
        _create(sb, {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "hpa", "namespace": "default"}},
                token="sandbox")
        token = sb.service_account_token("default", "hpa")
        path = f"/apis/{GROUP}/{VERSION}/namespaces/default/pods/*/m"
        r = requests.get(sb.url + path, headers={"Authorization": f"Bearer {token}"}, timeout=10)
        assert r.status_code == 200
        (got,) = [s for s in backend.seen if s[0] == path]
        assert got == (path, "system:serviceaccount:default:hpa",
                       ["system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"])


def test_available_conditions(sandbox, backend) -> None:
    _create(sandbox, _apiservice(f"{VERSION}.{GROUP}", url=backend.url))
    _create(sandbox, _apiservice("v1beta1.external.metrics.k8s.io", "external.metrics.k8s.io", "v1beta1",
                                 service={"namespace": "monitoring", "name": "absent", "port": 443}))
    _create(sandbox, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "monitoring"}})
    _create(sandbox, {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "no-ip", "namespace": "monitoring"},
                      "spec": {"clusterIP": "None", "ports": [{"port": 443}]}})   # headless: nowhere to go
    _create(sandbox, _apiservice("v1beta1.metrics.k8s.io", "metrics.k8s.io", "v1beta1",
                                 service={"namespace": "monitoring", "name": "no-ip", "port": 443}))
    _create(sandbox, _apiservice("v1.local.example.com", "local.example.com", "v1"))

    ok = _wait_condition(sandbox, f"{VERSION}.{GROUP}", "True", "Passed")
    assert ok["message"] == "all checks passed"
    # the check is a discovery request as the aggregator makes it
    assert (f"/apis/{GROUP}/{VERSION}", "system:kube-aggregator", ["system:masters"]) in backend.seen
    missing = _wait_condition(sandbox, "v1beta1.external.metrics.k8s.io", "False", "ServiceNotFound")
    assert missing["message"] == 'service/absent in "monitoring" is not present'
    assert "clusterIP" in _wait_condition(sandbox, "v1beta1.metrics.k8s.io", "False", "MissingEndpoints")["message"]
    local = _wait_condition(sandbox, "v1.local.example.com", "True", "Local")
    assert local["message"] == "Local APIServices are always available"

    backend.discovery_status = 404
    bad = _wait_condition(sandbox, f"{VERSION}.{GROUP}", "False", "FailedDiscoveryCheck")
    assert bad["message"] == (f"failing or missing response from {backend.url}/apis/{GROUP}/{VERSION}: "
                              f"bad status from {backend.url}/apis/{GROUP}/{VERSION}: 404")
    backend.discovery_status = 200
    back = _wait_condition(sandbox, f"{VERSION}.{GROUP}", "True", "Passed")
    assert back["lastTransitionTime"] >= bad["lastTransitionTime"]

    backend.close()
    gone = _wait_condition(sandbox, f"{VERSION}.{GROUP}", "False", "FailedDiscoveryCheck")
    assert gone["message"].startswith(f"failing or missing response from {backend.url}/apis/{GROUP}/{VERSION}: ")


def test_a_failed_proxy_request_marks_the_apiservice_unavailable(sandbox, backend) -> None:
    name = f"{VERSION}.{GROUP}"
    _create(sandbox, _apiservice(name, url=backend.url))
    _wait_condition(sandbox, name, "True", "Passed")
    backend.close()
    r = requests.get(f"{sandbox.url}/apis/{GROUP}/{VERSION}/namespaces/shop/pods/*/m", timeout=10)
    assert r.status_code == 503
    # set by the failed request itself: read from the store, not through the API (which checks again)
    from promop.sandbox.aggregation import APISERVICES

    stored = sandbox.api.get(APISERVICES, "", name)
    (cond,) = [c for c in stored["status"]["conditions"] if c["type"] == "Available"]
    assert (cond["status"], cond["reason"]) == ("False", "FailedDiscoveryCheck")


@pytest.mark.kubectl
@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kubectl_get_apiservice_shows_availability(sandbox, sandbox_kubeconfig, backend) -> None:
    _create(sandbox, _apiservice(f"{VERSION}.{GROUP}", url=backend.url))
    _create(sandbox, _apiservice("v1beta1.metrics.k8s.io", "metrics.k8s.io", "v1beta1",
                                 service={"namespace": "monitoring", "name": "absent", "port": 443}))

    def table() -> dict[str, list[str]] | None:
        out = subprocess.run(["kubectl", f"--kubeconfig={sandbox_kubeconfig}", "get", "apiservices"],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        lines = out.stdout.splitlines()
        if lines[0].split() != ["NAME", "SERVICE", "AVAILABLE", "AGE"]:
            return None
        rows = {}
        for line in lines[1:]:
            name, rest = line.split(None, 1)
            rows[name] = [c.strip() for c in rest.split("  ") if c.strip()]
        return rows if rows.get(f"{VERSION}.{GROUP}", [""])[1:2] == ["True"] else None

    rows = wait_for(table, 30, "kubectl get apiservices to show availability", interval=0.3)
    assert rows[f"{VERSION}.{GROUP}"][:2] == ["Local", "True"]   # an annotation URL: no service reference
    assert rows["v1beta1.metrics.k8s.io"][:2] == ["monitoring/absent", "False (ServiceNotFound)"]
