"""The benchmark workload: one Alertmanager, 500 AlertmanagerConfigs (10 receivers, 20 routes each)."""

from __future__ import annotations

NAMESPACES = 20
CONFIGS = 500


def alertmanager() -> dict:
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "Alertmanager",
            "metadata": {"name": "main", "namespace": "monitoring", "uid": "am-uid"},
            "spec": {"version": "v0.27.0", "alertmanagerConfigSelector": {"matchLabels": {"bench": "yes"}},
                     "alertmanagerConfigNamespaceSelector": {}}}


def config(i: int, generation: int = 1) -> dict:
    ns = f"team-{i % NAMESPACES}"
    receivers = []
    for r in range(10):
        if r % 3 == 0:
            receivers.append({"name": f"slack-{r}", "slackConfigs": [{
                "apiURL": {"name": "slack", "key": "url"}, "channel": f"#team-{i}-{r}", "sendResolved": True,
                "title": '{{ template "slack.title" . }}', "text": '{{ template "slack.text" . }}'}]})
        elif r % 3 == 1:
            receivers.append({"name": f"pager-{r}", "pagerdutyConfigs": [{
                "routingKey": {"name": "pagerduty", "key": "key"}, "severity": "critical",
                "details": [{"key": "team", "value": ns}]}]})
        else:
            receivers.append({"name": f"hook-{r}", "webhookConfigs": [{
                "url": f"http://hooks.{ns}.svc:8080/alerts/{i}/{r}", "maxAlerts": 10,
                "httpConfig": {"bearerTokenSecret": {"name": "hook", "key": "token"}}}]})
    children = [{"receiver": receivers[(c + 1) % 10]["name"], "groupBy": ["alertname", "job"],
                 "groupWait": "30s", "repeatInterval": "4h", "continue": c % 4 == 0,
                 "matchers": [{"name": "severity", "value": "critical" if c % 2 else "warning", "matchType": "="},
                              {"name": "service", "value": f"svc-{c}.*", "matchType": "=~"}]}
                for c in range(19)]
    return {"apiVersion": "monitoring.coreos.com/v1alpha1", "kind": "AlertmanagerConfig",
            "metadata": {"name": f"cfg-{i}", "namespace": ns, "labels": {"bench": "yes"}, "uid": f"amc-{i}",
                         "resourceVersion": str(generation), "generation": generation},
            "spec": {"route": {"receiver": receivers[0]["name"], "groupBy": ["alertname"], "routes": children},
                     "receivers": receivers,
                     "inhibitRules": [{"sourceMatch": [{"name": "severity", "value": "critical", "matchType": "="}],
                                       "targetMatch": [{"name": "severity", "value": "warning", "matchType": "="}],
                                       "equal": ["alertname"]}]}}


def secrets() -> dict:
    out = {}
    for n in range(NAMESPACES):
        ns = f"team-{n}"
        for name, data in (("slack", {"url": "https://hooks.slack.com/services/T000/B000/XXXX"}),
                           ("pagerduty", {"key": "0123456789abcdef"}), ("hook", {"token": "s3cr3t"})):
            out[(ns, name)] = {"metadata": {"name": name, "namespace": ns, "resourceVersion": "1"}, "stringData": data}
    out[("monitoring", "alertmanager-main")] = {
        "metadata": {"name": "alertmanager-main", "namespace": "monitoring"},
        "stringData": {"alertmanager.yaml": 'route:\n  receiver: "null"\nreceivers:\n- name: "null"\n'}}
    return out


def namespaces() -> list[dict]:
    return [{"metadata": {"name": f"team-{n}"}} for n in range(NAMESPACES)] + [{"metadata": {"name": "monitoring"}}]
