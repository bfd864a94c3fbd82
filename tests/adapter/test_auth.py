"""HTTPS as an aggregated API server: front-proxy client certificates from the requestheader CA,
X-Remote-User/Group, and a SubjectAccessReview per request (cached), against an API endpoint
that answers SubjectAccessReviews like the apiserver (alice may, bob may not)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace

import pytest
import requests

from adapter.adapter_fixtures import (  # noqa: F401 - fixtures
    POD_OBJECTS, adapter_factory, cluster_prom, prometheus_factory,
)
from promop.adapter.auth import Authenticator, Authorizer, RequestHeaderConfig
from promop.adapter.certs import CA
from promop.adapter.main import _tls_context
from promop.adapter.server import AdapterServer

pytestmark = pytest.mark.prometheus
PATH = "/apis/custom.metrics.k8s.io/v1beta2/namespaces/shop/pods/*/http_requests_per_second"


class FakeAuthorizationAPI:
    """POST /apis/authorization.k8s.io/v1/subjectaccessreviews: allowed for alice and system:masters."""

    def __init__(self) -> None:
        self.reviews: list[dict] = []
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                api.reviews.append(body)
                spec = body["spec"]
                if body["kind"] == "TokenReview":
                    ok = spec["token"] == "alice-token"
                    body["status"] = {"authenticated": ok, "user": {"username": "alice", "groups": ["devs"]} if ok else {}}
                    out = json.dumps(body).encode()
                    self.send_response(201)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(out)))
                    self.end_headers()
                    self.wfile.write(out)
                    return
                allowed = spec["user"] == "alice" or "system:masters" in spec.get("groups", [])
                body["status"] = {"allowed": allowed, "reason": "" if allowed else "no RBAC policy matched"}
                out = json.dumps(body).encode()
                self.send_response(201)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, *a) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def client(self):
        from kubernetes.client import ApiClient, Configuration

        from promop.kube.client import KubeClient

        cfg = Configuration()
        cfg.host = self.url
        return KubeClient(ApiClient(cfg))

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def pki(tmp_path: Path):
    front = CA.create("front-proxy-ca")
    rogue = CA.create("rogue-ca")
    serving = CA.create("serving-ca")
    files = {}
    for name, (crt, key) in {
        "serving": serving.issue("localhost", hosts=["localhost", "127.0.0.1"]),
        "proxy": front.issue("front-proxy-client", client=True),
        "other-cn": front.issue("someone-else", client=True),
        "rogue": rogue.issue("front-proxy-client", client=True),
    }.items():
        (tmp_path / f"{name}.crt").write_bytes(crt)
        (tmp_path / f"{name}.key").write_bytes(key)
        files[name] = (str(tmp_path / f"{name}.crt"), str(tmp_path / f"{name}.key"))
    (tmp_path / "serving-ca.crt").write_bytes(serving.cert_pem)
    return SimpleNamespace(front=front, files=files, serving_ca=str(tmp_path / "serving-ca.crt"), dir=tmp_path)


@pytest.fixture
def secure(cluster_prom, adapter_factory, pki):  # noqa: F811
    authz_api = FakeAuthorizationAPI()
    servers = []

    def make(always_allow: bool = False):
        plain = adapter_factory(cluster_prom.url)
        rh = RequestHeaderConfig(client_ca=pki.front.cert_pem.decode(), allowed_names=["front-proxy-client"])
        authz = None if always_allow else Authorizer(authz_api.client())
        ctx = _tls_context(SimpleNamespace(tls_cert_file=pki.files["serving"][0],
                                           tls_private_key_file=pki.files["serving"][1], cert_dir=str(pki.dir)),
                           rh.client_ca)
        server = AdapterServer(("127.0.0.1", 0), plain.adapter, plain.provider,
                               Authenticator(rh, authz_api.client()), authz, ctx)
        server.serve_in_background()
        servers.append(server)
        return f"https://127.0.0.1:{server.port}", authz
    yield make, authz_api
    for s in servers:
        s.shutdown()
        s.server_close()
    authz_api.close()


def _get(url: str, pki, cert: str | None, user: str | None = None, groups: tuple[str, ...] = ()):
    headers = {}
    if user:
        headers["X-Remote-User"] = user
    if groups:
        headers["X-Remote-Group"] = groups[0]
    return requests.get(url, headers=headers, cert=pki.files[cert] if cert else None, verify=pki.serving_ca,
                        timeout=10)


def test_front_proxy_and_subject_access_review(secure, pki) -> None:
    make, api = secure
    base, authz = make()
    # no client certificate: refused before any review
    r = _get(base + PATH, pki, None, user="alice")
    assert r.status_code == 401 and "no front-proxy client certificate" in r.json()["message"]
    assert api.reviews == []
    # a certificate from another CA does not even complete the handshake
    with pytest.raises(requests.exceptions.SSLError):
        _get(base + PATH, pki, "rogue", user="alice")
    # the right CA but a CN outside requestheader-allowed-names
    r = _get(base + PATH, pki, "other-cn", user="alice")
    assert r.status_code == 401 and "someone-else" in r.json()["message"]
    # the front proxy without a user header
    assert _get(base + PATH, pki, "proxy").status_code == 401

    ok = _get(base + PATH, pki, "proxy", user="alice", groups=("team-a",))
    assert ok.status_code == 200 and len(ok.json()["items"]) == 2
    review = api.reviews[-1]
    assert review["kind"] == "SubjectAccessReview" and review["spec"]["user"] == "alice"
    assert review["spec"]["groups"] == ["team-a"]
    assert review["spec"]["resourceAttributes"] == {
        "verb": "get", "group": "custom.metrics.k8s.io", "version": "v1beta2", "resource": "pods",
        "namespace": "shop", "subresource": "http_requests_per_second", "name": "*"}

    denied = _get(base + PATH, pki, "proxy", user="bob")
    assert denied.status_code == 403
    body = denied.json()
    assert body["reason"] == "Forbidden"
    assert 'User "bob" cannot get resource "pods/http_requests_per_second" in API group ' \
           '"custom.metrics.k8s.io" in the namespace "shop"' in body["message"]

    n = len(api.reviews)
    for _ in range(3):
        assert _get(base + PATH, pki, "proxy", user="alice", groups=("team-a",)).status_code == 200
        assert _get(base + PATH, pki, "proxy", user="bob").status_code == 403
    assert len(api.reviews) == n       # cached
    assert _get(base + PATH, pki, "proxy", user="bob", groups=("system:masters",)).status_code == 200

    # discovery is a non-resource path; health needs nothing at all
    _get(base + "/apis/custom.metrics.k8s.io/v1beta2", pki, "proxy", user="alice")
    assert api.reviews[-1]["spec"]["nonResourceAttributes"] == {"path": "/apis/custom.metrics.k8s.io/v1beta2",
                                                                "verb": "get"}
    assert requests.get(base + "/healthz", verify=pki.serving_ca, timeout=10).status_code == 200
    # resource metrics: a list of pods
    _get(base + "/apis/metrics.k8s.io/v1beta1/namespaces/shop/pods", pki, "proxy", user="alice")
    assert api.reviews[-1]["spec"]["resourceAttributes"] == {
        "verb": "list", "group": "metrics.k8s.io", "version": "v1beta1", "resource": "pods", "namespace": "shop"}


def test_bearer_tokens_are_reviewed(secure, pki) -> None:
    make, api = secure
    base, _ = make()
    ok = requests.get(base + PATH, headers={"Authorization": "Bearer alice-token"}, verify=pki.serving_ca, timeout=10)
    assert ok.status_code == 200
    assert [r["kind"] for r in api.reviews] == ["TokenReview", "SubjectAccessReview"]
    assert api.reviews[1]["spec"]["user"] == "alice" and api.reviews[1]["spec"]["groups"] == ["devs"]
    bad = requests.get(base + PATH, headers={"Authorization": "Bearer nope"}, verify=pki.serving_ca, timeout=10)
    assert bad.status_code == 401 and "not valid" in bad.json()["message"]


def test_authorization_always_allow(secure, pki) -> None:
    make, api = secure
    base, _ = make(always_allow=True)
    assert _get(base + PATH, pki, "proxy", user="bob").status_code == 200
    assert _get(base + PATH, pki, None).status_code == 401     # authentication still applies
    assert api.reviews == []
