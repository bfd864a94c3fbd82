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
from promop.certs import CA
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
    users = CA.create("kubernetes-ca")      # the apiserver's client CA: its certificates are users
    files = {}
    for name, (crt, key) in {
        "serving": serving.issue("localhost", hosts=["localhost", "127.0.0.1"]),
        "proxy": front.issue("front-proxy-client", client=True),
        "other-cn": front.issue("someone-else", client=True),
        "rogue": rogue.issue("front-proxy-client", client=True),
        "carol": users.issue("carol", client=True, organizations=["system:masters", "team-x"]),
        "dave": users.issue("dave", client=True),
        "user-named-like-the-proxy": users.issue("front-proxy-client", client=True),
        "no-cn": users.issue("", client=True, organizations=["system:masters"]),
    }.items():
        (tmp_path / f"{name}.crt").write_bytes(crt)
        (tmp_path / f"{name}.key").write_bytes(key)
        files[name] = (str(tmp_path / f"{name}.crt"), str(tmp_path / f"{name}.key"))
    (tmp_path / "serving-ca.crt").write_bytes(serving.cert_pem)
    (tmp_path / "users-ca.crt").write_bytes(users.cert_pem)
    return SimpleNamespace(front=front, users=users, files=files, serving_ca=str(tmp_path / "serving-ca.crt"),
                           users_ca=str(tmp_path / "users-ca.crt"), dir=tmp_path)


@pytest.fixture
def secure(cluster_prom, adapter_factory, pki):  # noqa: F811
    authz_api = FakeAuthorizationAPI()
    servers = []

    def make(always_allow: bool = False, client_ca: str = ""):
        plain = adapter_factory(cluster_prom.url)
        rh = RequestHeaderConfig(client_ca=pki.front.cert_pem.decode(), allowed_names=["front-proxy-client"])
        authz = None if always_allow else Authorizer(authz_api.client())
        ctx = _tls_context(SimpleNamespace(tls_cert_file=pki.files["serving"][0],
                                           tls_private_key_file=pki.files["serving"][1], cert_dir=str(pki.dir)),
                           rh.client_ca, client_ca)
        server = AdapterServer(("127.0.0.1", 0), plain.adapter, plain.provider,
                               Authenticator(rh, authz_api.client(), client_ca=client_ca), authz, ctx)
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
    assert review["spec"]["groups"] == ["team-a", "system:authenticated"]   # as the generic apiserver adds it
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

    # kube-aggregator's legacy discovery fallback: system:kube-aggregator without groups, reviewed as
    # system:authenticated (whom RBAC's system:discovery grants discovery paths)
    _get(base + "/apis/custom.metrics.k8s.io/v1beta2", pki, "proxy", user="system:kube-aggregator")
    assert api.reviews[-1]["spec"]["groups"] == ["system:authenticated"]
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
    assert api.reviews[1]["spec"]["user"] == "alice"
    assert api.reviews[1]["spec"]["groups"] == ["devs", "system:authenticated"]
    bad = requests.get(base + PATH, headers={"Authorization": "Bearer nope"}, verify=pki.serving_ca, timeout=10)
    assert bad.status_code == 401 and "not valid" in bad.json()["message"]


def test_authorization_always_allow(secure, pki) -> None:
    make, api = secure
    base, _ = make(always_allow=True)
    assert _get(base + PATH, pki, "proxy", user="bob").status_code == 200
    assert _get(base + PATH, pki, None).status_code == 401     # authentication still applies
    assert api.reviews == []


def test_client_ca_certificates_are_users(secure, pki) -> None:
    """--client-ca-file: a certificate the client CA signed logs in as CN (user) and O (groups); its
    X-Remote-* headers mean nothing, whatever its CN; the front proxy keeps working alongside."""
    make, api = secure
    base, _ = make(client_ca=pki.users.cert_pem.decode())
    r = _get(base + PATH, pki, "carol")
    assert r.status_code == 200 and len(r.json()["items"]) == 2
    assert api.reviews[-1]["spec"]["user"] == "carol"
    assert api.reviews[-1]["spec"]["groups"] == ["system:masters", "team-x", "system:authenticated"]
    # a user cannot claim to be someone else with the front proxy's headers
    r = _get(base + PATH, pki, "dave", user="alice", groups=("system:masters",))
    assert r.status_code == 403 and 'User "dave"' in r.json()["message"]
    assert api.reviews[-1]["spec"] == {**api.reviews[-1]["spec"], "user": "dave", "groups": ["system:authenticated"]}
    # not even with the front proxy's CN: only the requestheader CA's signature makes a front proxy
    r = _get(base + PATH, pki, "user-named-like-the-proxy", user="alice")
    assert r.status_code == 403 and 'User "front-proxy-client"' in r.json()["message"]
    r = _get(base + PATH, pki, "no-cn")
    assert r.status_code == 401 and "no common name" in r.json()["message"]
    # the front proxy still speaks for its users
    r = _get(base + PATH, pki, "proxy", user="alice", groups=("team-a",))
    assert r.status_code == 200 and api.reviews[-1]["spec"]["user"] == "alice"
    # and a third CA is still refused at the handshake
    with pytest.raises(requests.exceptions.SSLError):
        _get(base + PATH, pki, "rogue", user="alice")


def test_without_client_ca_user_certificates_are_refused(secure, pki) -> None:
    make, _ = secure
    base, _ = make()
    with pytest.raises(requests.exceptions.SSLError):
        _get(base + PATH, pki, "carol")


def test_client_ca_file_flag(cluster_prom, pki, tmp_path) -> None:  # noqa: F811
    """The flag as users pass it: `promop adapter --client-ca-file` wires the CA into TLS and login."""
    import yaml

    from adapter.adapter_fixtures import CONFIG
    from prom.prom_fixtures import free_port
    from promop.adapter.main import StartupError, build
    from promop.cli import build_parser

    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(CONFIG))

    def args(*extra: str):
        return build_parser().parse_args([
            "adapter", f"--config={config}", f"--prometheus-url={cluster_prom.url}", "--no-kube",
            "--authorization-always-allow", f"--secure-port={free_port()}", "--bind-address=127.0.0.1",
            f"--tls-cert-file={pki.files['serving'][0]}", f"--tls-private-key-file={pki.files['serving'][1]}",
            *extra])

    with pytest.raises(StartupError, match="--client-ca-file: .* holds no PEM certificate"):
        build(args(f"--client-ca-file={config}"))
    adapter, servers = build(args(f"--client-ca-file={pki.users_ca}"))
    (server,) = servers
    server.serve_in_background()
    try:
        assert adapter.relist() is not None
        base = f"https://127.0.0.1:{server.port}"
        queue = base + "/apis/custom.metrics.k8s.io/v1beta2/namespaces/shop/metrics/queue_depth"  # no listing
        assert _get(queue, pki, "carol").status_code == 200
        assert _get(queue, pki, None).status_code == 401
    finally:
        server.shutdown()
        server.server_close()
        adapter.stop()


def test_client_ca_from_the_authentication_configmap(sandbox, sandbox_kubeconfig, pki) -> None:
    """Without --client-ca-file, `client-ca-file` of kube-system/extension-apiserver-authentication is
    the client CA (upstream's lookup), re-read like the front proxy's CA so a later one is trusted."""
    import ssl

    from promop.adapter.main import RequestHeaderRefresher, _auth_sources
    from promop.cli import build_parser
    from promop.kube.client import KubeClient
    from promop.kube.resources import Resource

    kube = KubeClient.from_kubeconfig(sandbox_kubeconfig)
    cms = Resource("", "v1", "configmaps", True, "ConfigMap")
    kube.create(cms, {"metadata": {"name": "extension-apiserver-authentication", "namespace": "kube-system"},
                      "data": {"requestheader-client-ca-file": pki.front.cert_pem.decode()}}, "kube-system")
    args = build_parser().parse_args(["adapter", "--config=x", f"--kubeconfig={sandbox_kubeconfig}"])
    rh, client_ca = _auth_sources(args, kube)
    assert rh.client_ca == pki.front.cert_pem.decode() and client_ca == ""

    authn = Authenticator(rh, kube)
    ctx = _tls_context(SimpleNamespace(tls_cert_file=pki.files["serving"][0],
                                       tls_private_key_file=pki.files["serving"][1], cert_dir=str(pki.dir)),
                       rh.client_ca)
    refresher = RequestHeaderRefresher(args, kube, ctx, authn, rh.client_ca, interval=3600)
    try:
        assert refresher.refresh() is False                    # nothing new
        cm = kube.get(cms, "extension-apiserver-authentication", "kube-system")
        cm["data"]["client-ca-file"] = pki.users.cert_pem.decode()
        kube.update(cms, cm, "kube-system")
        assert refresher.refresh() is True
        assert authn.client_ca == pki.users.cert_pem.decode()
        assert ctx.verify_mode == ssl.CERT_OPTIONAL
        assert {c["subject"] for c in ctx.get_ca_certs()} >= {((("commonName", "kubernetes-ca"),),),
                                                               ((("commonName", "front-proxy-ca"),),)}
        # and the flag wins over the ConfigMap
        flagged = build_parser().parse_args(["adapter", "--config=x", f"--client-ca-file={pki.serving_ca}"])
        assert _auth_sources(flagged, kube)[1] == (pki.dir / "serving-ca.crt").read_text()
    finally:
        refresher.stop.set()
