"""The controller with spec.web.tlsConfig against the sandbox: a missing certificate Secret rejects that
Alertmanager alone (Reconciled=False and an Event naming the field); creating the Secret heals it. An empty
`tlsConfig: {}` is rejected the same way (upstream's WebTLSConfig.Validate), not treated as unset."""

from __future__ import annotations

import base64

import yaml

from promop.certs import CA
from promop.kube.resources import EVENTS, NAMESPACES, SECRETS, STATEFULSETS
from promop.operator.alertmanager import ALERTMANAGERS

from .operator_helpers import alertmanager, eventually

NS = "monitoring"
TLS = {"cert": {"secret": {"name": "web-tls", "key": "tls.crt"}}, "keySecret": {"name": "web-tls", "key": "tls.key"}}


def reconciled(kube, name: str) -> dict:
    conds = {c["type"]: c for c in (kube.get(ALERTMANAGERS, name, NS).get("status") or {}).get("conditions") or []}
    return conds.get("Reconciled") or {}


def test_missing_tls_secret_rejects_that_alertmanager_alone_until_created(kube, start_operator):
    kube.create(NAMESPACES, {"metadata": {"name": NS}})
    start_operator()
    kube.create(ALERTMANAGERS, alertmanager("secure", web={"tlsConfig": TLS}))
    kube.create(ALERTMANAGERS, alertmanager("plain"))
    kube.create(ALERTMANAGERS, alertmanager("empty", web={"tlsConfig": {}}))

    eventually(lambda: reconciled(kube, "secure").get("status") == "False", 20, "secure: Reconciled=False")
    message = reconciled(kube, "secure")["message"]
    assert "spec.web.tlsConfig.cert.secret" in message and "Secret monitoring/web-tls not found" in message
    eventually(lambda: any(e["involvedObject"]["name"] == "secure" and "web-tls" in e["message"]
                           for e in kube.list(EVENTS, NS)["items"]), 20, "an Event for secure")
    eventually(lambda: reconciled(kube, "empty").get("status") == "False", 20, "empty: Reconciled=False")
    assert "spec.web.tlsConfig" in reconciled(kube, "empty")["message"]
    eventually(lambda: any(e["involvedObject"]["name"] == "empty" and "spec.web.tlsConfig" in e["message"]
                           for e in kube.list(EVENTS, NS)["items"]), 20, "an Event for empty")
    # the other Alertmanager is unaffected
    eventually(lambda: reconciled(kube, "plain").get("status") == "True", 20, "plain: Reconciled=True")
    eventually(lambda: kube.get(STATEFULSETS, "alertmanager-plain", NS), 20, "plain's StatefulSet")
    assert not [s for s in kube.list(SECRETS, NS)["items"]
                if s["metadata"]["name"].startswith(("alertmanager-secure", "alertmanager-empty"))]

    ca = CA.create("am-operator-test")
    cert, key = ca.issue("localhost", hosts=["localhost"])
    kube.create(SECRETS, {"metadata": {"name": "web-tls", "namespace": NS},
                          "data": {"tls.crt": base64.b64encode(cert).decode(), "tls.key": base64.b64encode(key).decode()}})
    eventually(lambda: reconciled(kube, "secure").get("status") == "True", 20, "secure healed by the Secret")

    def web_config() -> dict:
        secret = kube.get(SECRETS, "alertmanager-secure-web-config", NS)
        return yaml.safe_load(base64.b64decode(secret["data"]["web-config.yaml"])) or {}
    server = eventually(lambda: web_config().get("tls_server_config"), 20, "the web config with TLS")
    assert server["cert_file"].endswith("/tls.crt") and server["key_file"].endswith("/tls.key")
    sts = eventually(lambda: kube.get(STATEFULSETS, "alertmanager-secure", NS), 20, "secure's StatefulSet")
    am = next(c for c in sts["spec"]["template"]["spec"]["containers"] if c["name"] == "alertmanager")
    assert am["readinessProbe"]["httpGet"]["scheme"] == "HTTPS"
