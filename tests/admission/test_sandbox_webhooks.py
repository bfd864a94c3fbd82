"""The webhook registered in the sandbox, which calls it as kube-apiserver does, driven by real kubectl:
refusals read as the apiserver words them, mutations land, and AlertmanagerConfig v1alpha1/v1beta1
round-trip through the conversion webhook."""

from __future__ import annotations

import base64
import json

import pytest


from promop.admission.server import Options, WebhookServer
from promop.admission.tls import ReloadingContext
from promop.certs import CA

from .helpers import kubectl_runner

pytestmark = pytest.mark.kubectl

RULE_RULES = [{"operations": ["CREATE", "UPDATE"], "apiGroups": ["monitoring.coreos.com"], "apiVersions": ["*"],
               "resources": ["prometheusrules"]}]


@pytest.fixture
def served(tmp_path):
    """A TLS webhook (certificate for 127.0.0.1 and the Service name) and its CA bundle (base64)."""
    ca = CA.create("sandbox-webhook-ca")
    cert, key = ca.issue("webhook", hosts=["127.0.0.1", "promop-admission-webhook.promop.svc"])
    (tmp_path / "tls.crt").write_bytes(cert)
    (tmp_path / "tls.key").write_bytes(key)
    tls = ReloadingContext(str(tmp_path / "tls.crt"), str(tmp_path / "tls.key"))
    server = WebhookServer("127.0.0.1", 0, tls, Options("utf8")).start()
    yield server, base64.b64encode(ca.cert_pem).decode()
    server.stop()


def _config(kind: str, name: str, client: dict, rules: list, **extra) -> dict:
    hook = {"name": name, "clientConfig": client, "rules": rules, "sideEffects": "None",
            "admissionReviewVersions": ["v1"], "failurePolicy": "Fail", "timeoutSeconds": 5, **extra}
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": {"name": name},
            "webhooks": [hook]}


def _rule(name: str, expr: str, namespace: str = "team", **meta) -> dict:
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
            "metadata": {"name": name, "namespace": namespace, **meta},
            "spec": {"groups": [{"name": "app.rules", "rules": [{"alert": "HighErrors", "expr": expr,
                                                                  "labels": {"severity": "page"}}]}]}}


def _setup(sandbox, tmp_path, *docs: dict):
    kubectl = kubectl_runner(sandbox, tmp_path)
    kubectl("apply", "-f", "crds/")
    kubectl("wait", "--for=condition=Established", "--timeout=60s", "-f", "crds/")
    kubectl("create", "namespace", "team")
    for doc in docs:
        kubectl("apply", "-f", "-", input=json.dumps(doc))
    return kubectl


def test_a_promql_syntax_error_is_refused_naming_group_rule_and_error(sandbox, tmp_path, served):
    server, bundle = served
    url = f"https://127.0.0.1:{server.port}/admission-prometheusrules/validate"
    kubectl = _setup(sandbox, tmp_path, _config("ValidatingWebhookConfiguration", "prometheusrulevalidate.monitoring"
                                                ".coreos.com", {"url": url, "caBundle": bundle}, RULE_RULES))
    bad = kubectl("apply", "-f", "-", input=json.dumps(_rule("broken", "sum(rate(errors_total[5m])")), check=False)
    assert bad.returncode != 0
    err = bad.stderr
    assert 'admission webhook "prometheusrulevalidate.monitoring.coreos.com" denied the request:' in err, err
    assert '"app.rules"' in err and '"HighErrors"' in err and "PromQL does not parse" in err, err
    assert kubectl("get", "prometheusrules", "-n", "team", "-o", "name").stdout.strip() == ""
    good = kubectl("apply", "-f", "-", input=json.dumps(_rule("fine", "sum(rate(errors_total[5m])) > 1")))
    assert "prometheusrule.monitoring.coreos.com/fine created" in good.stdout
    # an update is checked too
    bad_update = kubectl("apply", "-f", "-", input=json.dumps(_rule("fine", "vector(1))")), check=False)
    assert bad_update.returncode != 0 and "denied the request" in bad_update.stderr


def test_selectors_scope_the_webhook(sandbox, tmp_path, served):
    server, bundle = served
    url = f"https://127.0.0.1:{server.port}/admission-prometheusrules/validate"
    config = _config("ValidatingWebhookConfiguration", "v.promop.example", {"url": url, "caBundle": bundle}, RULE_RULES,
                     namespaceSelector={"matchLabels": {"checked": "yes"}},
                     objectSelector={"matchExpressions": [{"key": "skip", "operator": "DoesNotExist"}]})
    kubectl = _setup(sandbox, tmp_path, config)
    kubectl("create", "namespace", "other")
    kubectl("label", "namespace", "team", "checked=yes")
    assert kubectl("apply", "-f", "-", input=json.dumps(_rule("a", "vector(1))")), check=False).returncode != 0
    kubectl("apply", "-f", "-", input=json.dumps(_rule("b", "vector(1))", labels={"skip": "1"})))
    kubectl("apply", "-f", "-", input=json.dumps(_rule("c", "vector(1))", namespace="other")))


def test_failure_policy_and_ca_bundle(sandbox, tmp_path, served):
    server, bundle = served
    wrong_ca = base64.b64encode(CA.create("someone-else").cert_pem).decode()
    url = f"https://127.0.0.1:{server.port}/admission-prometheusrules/validate"
    fail = _config("ValidatingWebhookConfiguration", "a.fail.example", {"url": url, "caBundle": wrong_ca}, RULE_RULES)
    kubectl = _setup(sandbox, tmp_path, fail)
    out = kubectl("apply", "-f", "-", input=json.dumps(_rule("x", "vector(1)")), check=False)
    assert out.returncode != 0
    assert 'Internal error occurred: failed calling webhook "a.fail.example"' in out.stderr, out.stderr
    kubectl("delete", "validatingwebhookconfiguration", "a.fail.example")
    ignore = _config("ValidatingWebhookConfiguration", "b.ignore.example", {"url": url, "caBundle": wrong_ca}, RULE_RULES,
                     failurePolicy="Ignore")
    kubectl("apply", "-f", "-", input=json.dumps(ignore))
    kubectl("apply", "-f", "-", input=json.dumps(_rule("x", "vector(1))")))  # not checked: the call failed


def test_mutation_by_service_reference(sandbox, tmp_path, served):
    server, bundle = served
    sandbox.api.webhook_services.register("promop", "promop-admission-webhook", 443, f"127.0.0.1:{server.port}")
    client = {"service": {"namespace": "promop", "name": "promop-admission-webhook",
                          "path": "/admission-prometheusrules/mutate"}, "caBundle": bundle}
    kubectl = _setup(sandbox, tmp_path, _config("MutatingWebhookConfiguration", "m.promop.example", client, RULE_RULES))
    rule = _rule("m", "vector(1)")
    rule["spec"]["groups"][0]["rules"][0]["labels"]["count"] = 3  # upstream's mutation makes it a string
    kubectl("create", "-f", "-", input=json.dumps(rule))
    stored = json.loads(kubectl("get", "prometheusrule", "m", "-n", "team", "-o", "json").stdout)
    assert stored["metadata"]["annotations"]["prometheus-operator-validated"] == "true"
    assert stored["spec"]["groups"][0]["rules"][0]["labels"]["count"] == "3"


def _amc(version: str, spec: dict) -> dict:
    return {"apiVersion": f"monitoring.coreos.com/{version}", "kind": "AlertmanagerConfig",
            "metadata": {"name": "oncall", "namespace": "team"}, "spec": spec}


INTERVALS = [{"name": "weekend", "timeIntervals": [{"weekdays": ["saturday", "sunday"]}]}]
ROUTE = {"receiver": "null", "matchers": [{"name": "team", "value": "a.*", "matchType": "=~"}]}


def _with_conversion(sandbox, tmp_path, served):
    server, bundle = served
    kubectl = _setup(sandbox, tmp_path)
    patch = {"spec": {"conversion": {"strategy": "Webhook", "webhook": {
        "conversionReviewVersions": ["v1"],
        "clientConfig": {"url": f"https://127.0.0.1:{server.port}/convert", "caBundle": bundle}}}}}
    kubectl("patch", "crd", "alertmanagerconfigs.monitoring.coreos.com", "--type=merge", "-p", json.dumps(patch))
    return kubectl


def test_v1beta1_applied_reads_back_as_v1alpha1(sandbox, tmp_path, served):
    kubectl = _with_conversion(sandbox, tmp_path, served)
    beta = _amc("v1beta1", {"route": ROUTE, "receivers": [{"name": "null"}], "timeIntervals": INTERVALS})
    kubectl("apply", "-f", "-", input=json.dumps(beta))
    alpha = json.loads(kubectl("get", "alertmanagerconfigs.v1alpha1.monitoring.coreos.com", "oncall", "-n", "team",
                               "-o", "json").stdout)
    assert alpha["apiVersion"] == "monitoring.coreos.com/v1alpha1"
    assert alpha["spec"]["muteTimeIntervals"] == INTERVALS and "timeIntervals" not in alpha["spec"]
    again = json.loads(kubectl("get", "alertmanagerconfigs.v1beta1.monitoring.coreos.com", "oncall", "-n", "team",
                               "-o", "json").stdout)
    assert again["spec"]["timeIntervals"] == INTERVALS and "muteTimeIntervals" not in again["spec"]
    assert kubectl("apply", "-f", "-", input=json.dumps(beta)).stdout.strip().endswith("unchanged")


def test_v1alpha1_applied_reads_back_as_v1beta1(sandbox, tmp_path, served):
    kubectl = _with_conversion(sandbox, tmp_path, served)
    route = {"receiver": "null", "matchers": [{"name": "team", "value": "a.*", "regex": True}]}
    kubectl("apply", "-f", "-", input=json.dumps(
        _amc("v1alpha1", {"route": route, "receivers": [{"name": "null"}], "muteTimeIntervals": INTERVALS})))
    beta = json.loads(kubectl("get", "alertmanagerconfigs.v1beta1.monitoring.coreos.com", "-n", "team",
                              "-o", "json").stdout)["items"][0]
    assert beta["apiVersion"] == "monitoring.coreos.com/v1beta1"
    assert beta["spec"]["timeIntervals"] == INTERVALS
    assert beta["spec"]["route"]["matchers"] == [{"name": "team", "value": "a.*", "matchType": "=~"}]
    # a watch in v1beta1 sees the object converted too (the initial ADDED event, then a change)
    kubectl("label", "alertmanagerconfigs.v1alpha1.monitoring.coreos.com", "oncall", "-n", "team", "x=y")
    raw = kubectl("get", "--raw", "/apis/monitoring.coreos.com/v1beta1/namespaces/team/alertmanagerconfigs"
                  "?watch=true&timeoutSeconds=1").stdout
    events = [json.loads(line) for line in raw.splitlines() if line.strip()]
    assert events and all(e["object"]["apiVersion"] == "monitoring.coreos.com/v1beta1" for e in events)
    assert all(e["object"]["spec"]["timeIntervals"] == INTERVALS for e in events), events



def test_alertmanagerconfig_validation_in_both_versions(sandbox, tmp_path, served):
    server, bundle = served
    kubectl = _with_conversion(sandbox, tmp_path, served)
    rules = [{"operations": ["CREATE", "UPDATE"], "apiGroups": ["monitoring.coreos.com"], "apiVersions": ["*"],
              "resources": ["alertmanagerconfigs"]}]
    url = f"https://127.0.0.1:{server.port}/admission-alertmanagerconfigs/validate"
    kubectl("apply", "-f", "-", input=json.dumps(_config("ValidatingWebhookConfiguration",
                                                         "alertmanagerconfigsvalidate.monitoring.coreos.com",
                                                         {"url": url, "caBundle": bundle}, rules)))
    # (a bad weekday never gets this far: the CRD's schema refuses it first, as on a cluster)
    out = kubectl("apply", "-f", "-", check=False, input=json.dumps(
        _amc("v1beta1", {"route": ROUTE, "receivers": [{"name": "null"}, {"name": "null"}]})))
    assert out.returncode != 0
    assert 'admission webhook "alertmanagerconfigsvalidate.monitoring.coreos.com" denied the request' in out.stderr
    assert "spec.receivers[1].name: duplicate receiver name 'null'" in out.stderr, out.stderr
    out = kubectl("apply", "-f", "-", check=False, input=json.dumps(
        _amc("v1alpha1", {"route": {"receiver": "missing"}, "receivers": [{"name": "null"}]})))
    assert out.returncode != 0 and "missing" in out.stderr, out.stderr
    kubectl("apply", "-f", "-", input=json.dumps(
        _amc("v1beta1", {"route": ROUTE, "receivers": [{"name": "null"}], "timeIntervals": INTERVALS})))
