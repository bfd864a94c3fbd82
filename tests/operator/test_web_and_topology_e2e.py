"""On the sandbox: a Prometheus with spec.web.tlsConfig gets its web config Secret and an HTTPS
StatefulSet; with the PrometheusTopologySharding gate on, each shard is pinned to its zone."""

from __future__ import annotations

import base64

import pytest
import yaml
from operator_testlib import NS, eventually, names, prometheus

from promop.certs import CA
from promop.featuregates import TOPOLOGY_SHARDING, FeatureGates
from promop.kube.errors import NotFound
from promop.kube.resources import NAMESPACES, PROMETHEUSES, SECRETS, STATEFULSETS


@pytest.fixture
def ns(kube):
    kube.create(NAMESPACES, {"metadata": {"name": NS}})
    return NS


def _get(kube, res, name):
    try:
        return kube.get(res, name, NS)
    except NotFound:
        return None


def test_web_tls_reaches_the_cluster(kube, start_operator, ns):
    start_operator()
    ca = CA.create("promop-e2e-web-ca")
    cert, key = ca.issue("localhost", hosts=["localhost"])
    kube.create(SECRETS, {"metadata": {"name": "web-tls", "namespace": NS},
                          "stringData": {"tls.crt": cert.decode(), "tls.key": key.decode()}})
    web = {"tlsConfig": {"cert": {"secret": {"name": "web-tls", "key": "tls.crt"}},
                         "keySecret": {"name": "web-tls", "key": "tls.key"}}}
    kube.create(PROMETHEUSES, prometheus(web=web))

    def web_config() -> dict | None:
        secret = _get(kube, SECRETS, "prometheus-p-web-config")
        text = base64.b64decode((secret or {}).get("data", {}).get("web-config.yaml", "")).decode()
        return yaml.safe_load(text) if text else None

    eventually(lambda: (web_config() or {}).get("tls_server_config"), 20, "tls_server_config in the web config")
    assert web_config()["tls_server_config"]["cert_file"].startswith("/etc/prometheus/web_config/secret/web-tls-cert/")

    def https() -> bool:
        sts = _get(kube, STATEFULSETS, "prometheus-p")
        if sts is None:
            return False
        prom = sts["spec"]["template"]["spec"]["containers"][0]
        return prom["readinessProbe"]["httpGet"]["scheme"] == "HTTPS"

    eventually(https, 20, "HTTPS probes")


def test_a_missing_tls_secret_is_reported_on_the_prometheus(kube, start_operator, ns):
    start_operator()
    web = {"tlsConfig": {"cert": {"secret": {"name": "absent", "key": "tls.crt"}},
                         "keySecret": {"name": "absent", "key": "tls.key"}}}
    kube.create(PROMETHEUSES, prometheus(web=web))

    def reconciled() -> dict | None:
        conditions = (kube.get(PROMETHEUSES, "p", NS).get("status") or {}).get("conditions") or []
        return next((c for c in conditions if c["type"] == "Reconciled" and c["status"] == "False"), None)

    condition = eventually(reconciled, 20, "Reconciled=False")
    assert "absent" in condition["message"] and "\n" not in condition["message"]
    assert _get(kube, STATEFULSETS, "prometheus-p") is None


def test_topology_shards_are_pinned_to_their_zones(kube, start_operator, ns):
    start_operator(feature_gates=FeatureGates(((TOPOLOGY_SHARDING, True),)))
    kube.create(PROMETHEUSES, prometheus(shards=4, shardingStrategy={
        "mode": "Topology", "topology": {"values": ["zone-a", "zone-b"]}}))
    four = ["prometheus-p", "prometheus-p-shard-1", "prometheus-p-shard-2", "prometheus-p-shard-3"]
    eventually(lambda: names(kube, STATEFULSETS) == four, 20, "4 shards")
    for shard, name in enumerate(four):
        pod = kube.get(STATEFULSETS, name, NS)["spec"]["template"]["spec"]
        assert pod["nodeSelector"] == {"topology.kubernetes.io/zone": ["zone-a", "zone-b"][shard % 2]}
        env = {e["name"]: e.get("value") for e in pod["containers"][1]["env"]}
        assert env["INZONE_SHARD"] == str(shard // 2)
