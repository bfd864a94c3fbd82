"""`promop admission-webhook` in real pods behind a real ValidatingWebhookConfiguration.

Installed as docs/admission.md says for a cluster without cert-manager: a CA and a serving pair
for `promop-admission-webhook.<ns>.svc`, the pair in the Secret `promop-admission-webhook-tls`,
and `promop manifests --component admission-webhook --ca-bundle ca.crt | kubectl apply -f -`.
The kube-apiserver then calls the webhook through its Service (ClusterIP, kube-proxy), verifies
its certificate against `caBundle`, and `kubectl apply` of a broken PrometheusRule fails.

The oracle for the refusal is the apiserver's own wording (`admission webhook "<name>" denied the
request: ...`) around the message docs/admission.md documents; for the mutation, upstream's
(non-string label values become strings, annotation `prometheus-operator-validated: "true"`).
"""

from __future__ import annotations

import base64
import json
import tempfile
from pathlib import Path
from typing import Iterator

import pytest

import realkube
from deadlines import scaled
from promop.certs import CA

from .components_kit import render_bundle
from .stack import install_crds, record

WEBHOOK = "promop-admission-webhook"
AMCONFIG_CRD = realkube.REPO / "crds" / "monitoring.coreos.com_alertmanagerconfigs.yaml"


def rule(namespace: str, name: str, expr: str, labels: dict | None = None) -> str:
    body = {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"groups": [{"name": "app.rules", "rules": [
                {"alert": "HighErrors", "expr": expr, **({"labels": labels} if labels else {})}]}]}}
    return json.dumps(body)


class Webhook:
    def __init__(self, cluster: realkube.RealCluster, namespace: str, bundle: str, ca_pem: bytes) -> None:
        self.cluster, self.namespace, self.bundle, self.ca_pem = cluster, namespace, bundle, ca_pem


@pytest.fixture(scope="module")
def webhook(real_cluster: realkube.RealCluster) -> Iterator[Webhook]:
    cp = real_cluster.cp
    install_crds(real_cluster)
    ns = realkube.create_namespace(cp, "adm")
    service = f"{WEBHOOK}.{ns}.svc"
    ca = CA.create("promop-e2e-webhook-ca")
    cert, key = ca.issue(service, hosts=[service, f"{service}.cluster.local"])
    bundle = ""
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for name, data in (("ca.crt", ca.cert_pem), ("tls.crt", cert), ("tls.key", key)):
                (Path(tmp) / name).write_bytes(data)
            cp.kubectl("-n", ns, "create", "secret", "tls", f"{WEBHOOK}-tls",
                       f"--cert={tmp}/tls.crt", f"--key={tmp}/tls.key")
            bundle = render_bundle("admission-webhook", ns, real_cluster.image, "--ca-bundle", f"{tmp}/ca.crt")
        real_cluster.apply(bundle)
        cp.kubectl("-n", ns, "rollout", "status", f"deploy/{WEBHOOK}", f"--timeout={int(scaled(60))}s",
                   timeout=scaled(60) + 30)
        pods = real_cluster.get_json("pods", "-n", ns, "-l", f"app.kubernetes.io/name={WEBHOOK}")["items"]
        record("components: admission-webhook pods creation -> Ready (s)",
               [realkube.pod_ready_seconds(pod) for pod in pods])
        # Ready pods are not yet a path from the apiserver: the Service's endpoints and kube-proxy's
        # rules follow a moment later (CI once saw "connection refused" right after the rollout). A
        # server-side dry run of a valid rule goes through the webhook: wait until it answers.
        realkube.wait_for(lambda: cp.kubectl("apply", "--dry-run=server", "-f", "-", input=rule(ns, "probe", "up"),
                                             check=False).returncode == 0 or None,
                          scaled(60), "the webhook answering through its Service", interval=0.5)
        yield Webhook(real_cluster, ns, bundle, ca.cert_pem)
    finally:
        # failurePolicy Fail in every namespace: the configurations go first, or every later
        # PrometheusRule write of the tier fails; the AlertmanagerConfig CRD gets back the
        # crds/ version (no conversion webhook pointing at a deleted Service).
        cp.kubectl("delete", "validatingwebhookconfiguration,mutatingwebhookconfiguration", WEBHOOK,
                   "--ignore-not-found", check=False)
        if bundle:
            cp.kubectl("apply", "-f", str(AMCONFIG_CRD), check=False, timeout=120)
        realkube.delete_namespace(cp, ns)


def test_the_webhook_configurations_carry_the_ca_bundle(webhook: Webhook):
    want = base64.b64encode(webhook.ca_pem).decode()
    for kind in ("validatingwebhookconfiguration", "mutatingwebhookconfiguration"):
        cfg = webhook.cluster.get_json(kind, WEBHOOK)
        for hook in cfg["webhooks"]:
            assert hook["clientConfig"]["caBundle"] == want, (kind, hook["name"])
            assert hook["clientConfig"]["service"] == {
                "namespace": webhook.namespace, "name": WEBHOOK, "port": 443,
                "path": hook["clientConfig"]["service"]["path"]}
    crd = webhook.cluster.get_json("crd", "alertmanagerconfigs.monitoring.coreos.com")
    assert crd["spec"]["conversion"]["webhook"]["clientConfig"]["caBundle"] == want


def test_kubectl_apply_of_a_broken_rule_is_refused_with_the_reason(webhook: Webhook):
    ns = webhook.namespace
    proc = webhook.cluster.kubectl("apply", "-f", "-", input=rule(ns, "broken", "sum(rate(errors_total[5m])"),
                                   check=False)
    assert proc.returncode == 1, (proc.returncode, proc.stdout, proc.stderr)
    assert ('admission webhook "prometheusrulevalidate.monitoring.coreos.com" denied the request: '
            f'PrometheusRule {ns}/broken is invalid: group "app.rules", rule 1, "HighErrors": '
            'spec.groups[0].rules[0].expr: PromQL does not parse: unclosed left parenthesis') in proc.stderr
    assert webhook.cluster.get_json("prometheusrule", "broken", "-n", ns, check=False) is None


def test_a_good_rule_is_accepted_and_mutated_as_upstream(webhook: Webhook):
    ns = webhook.namespace
    # `page: true` is a YAML boolean: the CRD's schema wants strings. Upstream's mutating webhook
    # turns it into "true" before validation, so the object is stored instead of refused.
    text = rule(ns, "good", "sum(rate(errors_total[5m])) > 1", labels={"page": True, "severity": "critical"})
    proc = webhook.cluster.kubectl("apply", "-f", "-", input=text, check=False)
    assert proc.returncode == 0, proc.stderr
    stored = webhook.cluster.get_json("prometheusrule", "good", "-n", ns)
    assert stored["metadata"]["annotations"]["prometheus-operator-validated"] == "true"
    assert stored["spec"]["groups"][0]["rules"][0]["labels"] == {"page": "true", "severity": "critical"}
    # an update goes through the webhook too
    bad_update = rule(ns, "good", "rate(errors_total[5m]) >")
    proc = webhook.cluster.kubectl("apply", "-f", "-", input=bad_update, check=False)
    assert proc.returncode == 1 and "denied the request" in proc.stderr, proc.stderr
    assert webhook.cluster.get_json("prometheusrule", "good", "-n", ns)["spec"]["groups"][0]["rules"][0][
        "expr"] == "sum(rate(errors_total[5m])) > 1"


def test_alertmanagerconfig_v1beta1_goes_through_the_conversion_webhook(webhook: Webhook):
    """The CRD's conversion (`strategy: Webhook`, with the caBundle) through the real apiserver:
    written as v1beta1, stored as v1alpha1 (the storage version), read back in both."""
    ns = webhook.namespace
    body = {"apiVersion": "monitoring.coreos.com/v1beta1", "kind": "AlertmanagerConfig",
            "metadata": {"name": "weekdays", "namespace": ns},
            "spec": {"route": {"receiver": "null",
                               "matchers": [{"name": "team", "value": "db|web", "matchType": "=~"}]},
                     "receivers": [{"name": "null"}],
                     "timeIntervals": [{"name": "weekdays", "timeIntervals": [{"weekdays": ["monday:friday"]}]}]}}
    proc = webhook.cluster.kubectl("apply", "-f", "-", input=json.dumps(body), check=False)
    assert proc.returncode == 0, proc.stderr
    alpha = webhook.cluster.get_json("alertmanagerconfigs.v1alpha1.monitoring.coreos.com", "weekdays", "-n", ns)
    # v1alpha1's name is muteTimeIntervals; its matchers have matchType too (copied as upstream does)
    assert "timeIntervals" not in alpha["spec"]
    assert alpha["spec"]["muteTimeIntervals"] == body["spec"]["timeIntervals"]
    assert alpha["spec"]["route"]["matchers"] == body["spec"]["route"]["matchers"]
    beta = webhook.cluster.get_json("alertmanagerconfigs.v1beta1.monitoring.coreos.com", "weekdays", "-n", ns)
    assert beta["spec"]["timeIntervals"] == body["spec"]["timeIntervals"]
    assert beta["spec"]["route"]["matchers"] == body["spec"]["route"]["matchers"]
