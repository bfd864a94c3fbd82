"""The admission webhook's ScaledObject route: KEDA's refusals (reference §1.7) through the real server."""

from __future__ import annotations

import json
import urllib.request

import pytest

from promop.admission.server import Options, WebhookServer


def _so(name: str, target: str = "web", **spec) -> dict:
    body = {"scaleTargetRef": {"name": target},
            "triggers": [{"type": "prometheus", "metadata": {"serverAddress": "http://p:9090", "query": "q",
                                                             "threshold": "10"}}]}
    body.update(spec)
    return {"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject",
            "metadata": {"name": name, "namespace": "apps", "uid": f"uid-{name}"}, "spec": body}


@pytest.fixture
def post():
    listed = {"sos": [], "hpas": []}
    server = WebhookServer("127.0.0.1", 0, None, Options(keda_lister=lambda ns: (listed["sos"], listed["hpas"])))
    server.start()

    def send(obj: dict, operation: str = "CREATE") -> dict:
        body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                "request": {"uid": "u1", "operation": operation, "namespace": "apps", "object": obj}}
        req = urllib.request.Request(f"http://127.0.0.1:{server.port}/validate-keda-sh-v1alpha1-scaledobject",
                                     data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            return json.loads(resp.read())["response"]

    send.listed = listed  # type: ignore[attr-defined]
    yield send
    server.stop()


def test_valid_scaled_object_is_allowed(post):
    assert post(_so("a"))["allowed"] is True


def test_second_scaled_object_on_the_target_is_refused(post):
    post.listed["sos"] = [_so("first")]
    out = post(_so("second"))
    assert out["allowed"] is False
    assert out["status"]["message"] == ("the workload 'web' of type 'apps/v1.Deployment' is already managed by the "
                                        "ScaledObject 'first'")
    assert post(_so("second", target="other"))["allowed"] is True


def test_foreign_hpa_on_the_target_is_refused(post):
    post.listed["hpas"] = [{"metadata": {"name": "mine", "namespace": "apps"},
                            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}}}]
    out = post(_so("a"))
    assert out["allowed"] is False
    assert "already managed by the hpa 'mine'" in out["status"]["message"]


def test_min_zero_max_zero_has_keda_message(post):
    out = post(_so("a", minReplicaCount=0, maxReplicaCount=0))
    assert out["allowed"] is False
    assert "MinReplicaCount=1 must be less than MaxReplicaCount=0" in out["status"]["message"]


def test_delete_is_allowed(post):
    post.listed["sos"] = [_so("first")]
    assert post(_so("second"), operation="DELETE")["allowed"] is True
