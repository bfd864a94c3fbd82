"""The ThanosRuler controller and the Thanos sidecar end to end on the sandbox (the operator in-process)."""

from __future__ import annotations

import yaml
from operator_testlib import NS, eventually, names, prometheus, rule

from promop.kube.errors import NotFound
from promop.kube.resources import CONFIGMAPS, EVENTS, NAMESPACES, PROMETHEUSRULES, SECRETS, SERVICES, STATEFULSETS
from promop.operator.thanos import THANOSRULERS


def thanos_ruler(name: str = "tr", **spec) -> dict:
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "ThanosRuler", "metadata": {"name": name, "namespace": NS},
            "spec": {"queryEndpoints": ["dnssrv+_http._tcp.thanos-query.monitoring.svc"], "ruleSelector": {}, **spec}}


def _get(kube, res, name):
    try:
        return kube.get(res, name, NS)
    except NotFound:
        return None


def _condition(obj: dict | None, ctype: str) -> dict:
    return next((c for c in ((obj or {}).get("status") or {}).get("conditions") or [] if c["type"] == ctype), {})


def test_thanos_ruler_gets_its_statefulset_rule_configmaps_service_and_status(cluster, kube, start_operator):
    kube.create(NAMESPACES, {"metadata": {"name": NS}})
    op = start_operator()
    kube.create(PROMETHEUSRULES, rule("r", "sum(up)"))
    kube.create(THANOSRULERS, thanos_ruler(labels={"cluster": "eu"}, alertmanagersUrl=["http://am:9093"]))
    sts = eventually(lambda: _get(kube, STATEFULSETS, "thanos-ruler-tr"), 20, "the ThanosRuler StatefulSet")
    container = sts["spec"]["template"]["spec"]["containers"][0]
    assert container["name"] == "thanos-ruler" and container["args"][0] == "rule"
    for arg in ('--label=cluster="eu"', "--query=dnssrv+_http._tcp.thanos-query.monitoring.svc",
                "--alertmanagers.url=http://am:9093", "--rule-file=/etc/thanos/rules/*/*.yaml"):
        assert arg in container["args"]
    assert sts["spec"]["serviceName"] == "thanos-ruler-operated"
    assert sts["metadata"]["ownerReferences"][0]["kind"] == "ThanosRuler"
    cm = eventually(lambda: _get(kube, CONFIGMAPS, "thanos-ruler-tr-rulefiles-0"), 20, "the rule ConfigMap")
    assert cm["metadata"]["labels"]["thanos-ruler-name"] == "tr"
    (content,) = cm["data"].values()
    assert yaml.safe_load(content)["groups"][0]["rules"][0] == {"expr": "sum(up)", "record": "rec_0"}
    svc = _get(kube, SERVICES, "thanos-ruler-operated")
    assert [p["port"] for p in svc["spec"]["ports"]] == [10901, 10902]
    assert {"thanos-ruler-tr-config", "thanos-ruler-tr-web-config", "thanos-ruler-tr-tls-assets-0"} <= set(
        names(kube, SECRETS))
    eventually(lambda: _condition(_get(kube, THANOSRULERS, "tr"), "Available").get("status") == "True", 20,
               "Available")
    assert _condition(_get(kube, THANOSRULERS, "tr"), "Reconciled")["status"] == "True"

    # a rule change reaches the ConfigMap; a spec change rolls the StatefulSet
    groups = kube.get(PROMETHEUSRULES, "r", NS)["spec"]["groups"]
    groups[0]["rules"][0]["expr"] = "sum(up) by (job)"
    kube.patch(PROMETHEUSRULES, "r", {"spec": {"groups": groups}}, NS)  # a patch: no 409 from a status write
    eventually(lambda: "by (job)" in next(iter(kube.get(CONFIGMAPS, "thanos-ruler-tr-rulefiles-0", NS)["data"].values())),
               20, "the updated rule")
    kube.patch(THANOSRULERS, "tr", {"spec": {"retention": "3d"}}, NS)
    eventually(lambda: "--tsdb.retention=3d" in kube.get(STATEFULSETS, "thanos-ruler-tr", NS)
               ["spec"]["template"]["spec"]["containers"][0]["args"], 20, "the new retention")
    eventually(op.idle, 20)


def test_refused_thanos_ruler_says_why_in_status_and_an_event(cluster, kube, start_operator):
    kube.create(NAMESPACES, {"metadata": {"name": NS}})
    start_operator()
    bad = thanos_ruler("bad")
    bad["spec"].pop("queryEndpoints")
    kube.create(THANOSRULERS, bad)
    cond = eventually(lambda: _condition(_get(kube, THANOSRULERS, "bad"), "Reconciled") or None, 20, "status")
    assert cond["status"] == "False" and "queryEndpoints or queryConfig" in cond["message"]
    eventually(lambda: any(e["reason"] == "ReconciliationFailed" and e["involvedObject"]["name"] == "bad"
                           for e in kube.list(EVENTS, NS)["items"]), 20, "an Event")
    assert _get(kube, STATEFULSETS, "thanos-ruler-bad") is None


def test_prometheus_with_spec_thanos_gets_the_sidecar(cluster, kube, start_operator):
    kube.create(NAMESPACES, {"metadata": {"name": NS}})
    start_operator()
    from promop.kube.resources import PROMETHEUSES

    kube.create(PROMETHEUSES, prometheus(version="v2.55.0", thanos={
        "objectStorageConfig": {"name": "objstore", "key": "config.yaml"}}))
    sts = eventually(lambda: _get(kube, STATEFULSETS, "prometheus-p"), 20, "the Prometheus StatefulSet")
    containers = {c["name"]: c for c in sts["spec"]["template"]["spec"]["containers"]}
    sidecar = containers["thanos-sidecar"]
    assert sidecar["args"][:2] == ["sidecar", "--prometheus.url=http://localhost:9090/"]
    assert "--objstore.config=$(OBJSTORE_CONFIG)" in sidecar["args"]
    assert "--storage.tsdb.min-block-duration=2h" in containers["prometheus"]["args"]
    svc = eventually(lambda: _get(kube, SERVICES, "prometheus-operated"), 20, "the governing Service")
    assert {"name": "grpc", "port": 10901, "protocol": "TCP", "targetPort": "grpc"} in svc["spec"]["ports"]
    eventually(lambda: _get(kube, SECRETS, "prometheus-p-thanos-prometheus-http-client-file"), 20,
               "the sidecar's http client Secret")


def test_web_tls_secret_is_checked_and_its_fix_resyncs_the_ruler(cluster, kube, start_operator):
    """The operator reads the web TLS Secret the ruler names: a key that is not the certificate's refuses the
    ruler (nothing rolled), and fixing the Secret alone brings the ruler back (the Secret maps to its reader)."""
    from promop.certs import CA

    ca = CA.create("promop-thanos-operator-web-ca")
    cert, key = ca.issue("localhost", hosts=["localhost"])
    _, other_key = ca.issue("other", hosts=["other"])
    kube.create(NAMESPACES, {"metadata": {"name": NS}})
    start_operator()
    kube.create(SECRETS, {"metadata": {"name": "web-tls", "namespace": NS},
                          "stringData": {"tls.crt": cert.decode(), "tls.key": other_key.decode()}}, NS)
    tls = {"cert": {"secret": {"name": "web-tls", "key": "tls.crt"}}, "keySecret": {"name": "web-tls", "key": "tls.key"}}
    kube.create(THANOSRULERS, thanos_ruler(web={"tlsConfig": tls}))
    cond = eventually(lambda: _condition(_get(kube, THANOSRULERS, "tr"), "Reconciled") or None, 20, "status")
    assert cond["status"] == "False" and "does not belong to the certificate" in cond["message"]
    assert _get(kube, STATEFULSETS, "thanos-ruler-tr") is None
    fixed = kube.get(SECRETS, "web-tls", NS)
    fixed["stringData"] = {"tls.key": key.decode()}
    kube.update(SECRETS, fixed, NS)
    sts = eventually(lambda: _get(kube, STATEFULSETS, "thanos-ruler-tr"), 20, "the StatefulSet once the key fits")
    web = kube.get(SECRETS, "thanos-ruler-tr-web-config", NS)
    import base64
    assert "tls_server_config" in base64.b64decode(web["data"]["web-config.yaml"]).decode()
    reloader = next(c for c in sts["spec"]["template"]["spec"]["containers"] if c["name"] == "config-reloader")
    assert any(a.startswith("--reload-url=https://localhost:10902") for a in reloader["args"])
    eventually(lambda: _condition(_get(kube, THANOSRULERS, "tr"), "Reconciled").get("status") == "True", 20,
               "Reconciled=True")


def test_stale_tls_asset_shards_are_deleted(cluster, kube, start_operator):
    """A -tls-assets-<i> Secret the ruler owns but no longer renders (fewer shards) is deleted."""
    kube.create(NAMESPACES, {"metadata": {"name": NS}})
    start_operator()
    kube.create(THANOSRULERS, thanos_ruler())
    eventually(lambda: _get(kube, STATEFULSETS, "thanos-ruler-tr"), 20, "the StatefulSet")
    ruler = kube.get(THANOSRULERS, "tr", NS)
    owner = {"apiVersion": "monitoring.coreos.com/v1", "kind": "ThanosRuler", "name": "tr",
             "uid": ruler["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}
    kube.create(SECRETS, {"metadata": {"name": "thanos-ruler-tr-tls-assets-1", "namespace": NS,
                                       "ownerReferences": [owner]}, "data": {}}, NS)
    eventually(lambda: _get(kube, SECRETS, "thanos-ruler-tr-tls-assets-1") is None, 20, "the stale shard deleted")
    assert _get(kube, SECRETS, "thanos-ruler-tr-tls-assets-0") is not None
