"""promop's own admission webhook behind a matchCondition, registered in the sandbox and driven by kubectl:
objects the condition excludes are never sent to it (an invalid PrometheusRule labelled to skip is stored),
the others are checked as before."""

from __future__ import annotations

import json

import pytest

from .test_sandbox_webhooks import RULE_RULES, _config, _rule, _setup, served  # noqa: F401 - fixture

pytestmark = pytest.mark.kubectl

SKIP = "example.com/skip-validation"


def test_a_match_condition_keeps_objects_from_promops_webhook(sandbox, tmp_path, served):  # noqa: F811
    server, bundle = served
    url = f"https://127.0.0.1:{server.port}/admission-prometheusrules/validate"
    condition = {"name": "not-skipped",
                 "expression": f"!has(object.metadata.labels) || !('{SKIP}' in object.metadata.labels)"}
    kubectl = _setup(sandbox, tmp_path, _config("ValidatingWebhookConfiguration",
                                                "prometheusrulevalidate.monitoring.coreos.com",
                                                {"url": url, "caBundle": bundle}, RULE_RULES,
                                                matchConditions=[condition]))
    bad = kubectl("apply", "-f", "-", input=json.dumps(_rule("broken", "sum(rate(errors_total[5m])")), check=False)
    assert bad.returncode != 0 and "denied the request" in bad.stderr and "PromQL does not parse" in bad.stderr
    skipped = kubectl("apply", "-f", "-", input=json.dumps(_rule("skipped", "sum(rate(errors_total[5m])",
                                                                 labels={SKIP: "true"})))
    assert "prometheusrule.monitoring.coreos.com/skipped created" in skipped.stdout
    assert kubectl("get", "prometheusrules", "-n", "team", "-o", "name").stdout.split() == [
        "prometheusrule.monitoring.coreos.com/skipped"]
