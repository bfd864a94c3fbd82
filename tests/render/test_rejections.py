"""One test per rejection reason: the message names the field and says what to do, and
every other object still renders. Where Prometheus itself would refuse the
unvalidated output, a second test proves it with promtool (so the check matters).
"""

from __future__ import annotations

import copy

import pytest

from promop.render import RenderInputs, render
from promop.render.config import assemble, dump_job
from promop.render.generate import new_context
from promop.render.globals import global_section
from promop.render.model import RenderOptions
from promop.render.scrape import service_monitor_jobs
from promop.render.store import Scope, Store

from .helpers import PROMTOOL_VERSION, lay_out, promtool_check_config, prometheus_obj, secret, service_monitor

PEM_CERT = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
PEM_KEY = "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n"


def ep(**fields):
    return {"port": "web", **fields}


def rl(**fields):
    return {"relabelings": [fields]}


# id -> (endpoint, prometheus spec extras, field path, message fragment, promtool refuses it unvalidated)
CASES = {
    "regex-lookahead": (ep(**rl(sourceLabels=["__name__"], regex="foo(?=bar)", action="keep")), {},
                        "spec.endpoints[0].relabelings[0].regex", "invalid or unsupported Perl syntax: `(?=`", True),
    "regex-backreference": (ep(**rl(sourceLabels=["a"], regex="(a)\\1", targetLabel="b")), {},
                            "spec.endpoints[0].relabelings[0].regex", "invalid escape sequence: `\\1`", True),
    "regex-possessive": (ep(metricRelabelings=[{"sourceLabels": ["a"], "regex": "a*+", "action": "drop"}]), {},
                         "spec.endpoints[0].metricRelabelings[0].regex", "invalid nested repetition operator: `*+`", True),
    "unknown-action": (ep(**rl(sourceLabels=["a"], action="explode")), {},
                       "spec.endpoints[0].relabelings[0].action", "unknown relabel action 'explode'", True),
    "hashmod-no-modulus": (ep(**rl(sourceLabels=["a"], targetLabel="b", action="hashmod")), {},
                           "spec.endpoints[0].relabelings[0].modulus", "hashmod needs a non-zero modulus", True),
    "replace-no-target": (ep(**rl(sourceLabels=["a"], action="replace")), {},
                          "spec.endpoints[0].relabelings[0].targetLabel", "action replace needs targetLabel", True),
    "labeldrop-extra-fields": (ep(**rl(sourceLabels=["a"], regex="x", action="labeldrop")), {},
                               "spec.endpoints[0].relabelings[0].action", "takes only a regex", True),
    "labelmap-bad-replacement": (ep(**rl(regex="(.+)", replacement="1-bad", action="labelmap")), {},
                                 "spec.endpoints[0].relabelings[0].replacement", "not a valid label name template", True),
    "bad-source-label": (ep(**rl(sourceLabels=["my-label"], action="keep", regex="x")), {},
                         "spec.endpoints[0].relabelings[0].sourceLabels[0]", "not a valid label name", True),
    "action-too-new": (ep(**rl(sourceLabels=["a"], targetLabel="b", action="lowercase")), {"version": "v2.30.0"},
                       "spec.endpoints[0].relabelings[0].action", "needs Prometheus >= 2.36.0", None),
    "timeout-over-interval": (ep(interval="10s", scrapeTimeout="20s"), {},
                              "spec.endpoints[0].scrapeTimeout", "greater than the scrape interval 10s", True),
    "timeout-over-default-interval": (ep(scrapeTimeout="1m"), {"scrapeInterval": "30s"},
                                      "spec.endpoints[0].scrapeTimeout", "greater than the scrape interval 30s", True),
    "bad-duration": (ep(interval="5 minutes"), {}, "spec.endpoints[0].interval", "not a valid duration", True),
    "conflicting-auth": (ep(basicAuth={"username": {"name": "creds", "key": "user"}},
                            bearerTokenSecret={"name": "creds", "key": "token"}), {},
                         "spec.endpoints[0]", "basicAuth and bearerTokenSecret are mutually exclusive", True),
    "authorization-basic": (ep(authorization={"type": "Basic", "credentials": {"name": "creds", "key": "token"}}), {},
                            "spec.endpoints[0].authorization.type", "use basicAuth instead", True),
    "missing-secret": (ep(bearerTokenSecret={"name": "nope", "key": "token"}), {},
                       "spec.endpoints[0].bearerTokenSecret", "Secret monitoring/nope not found", None),
    "missing-key": (ep(basicAuth={"username": {"name": "creds", "key": "user"}, "password": {"name": "creds", "key": "pw"}}), {},
                    "spec.endpoints[0].basicAuth.password", "key 'pw' not found in Secret monitoring/creds", None),
    "missing-configmap": (ep(scheme="https", tlsConfig={"ca": {"configMap": {"name": "nope", "key": "ca"}}}), {},
                          "spec.endpoints[0].tlsConfig.ca.configMap", "ConfigMap monitoring/nope not found", None),
    "fs-access-token-file": (ep(bearerTokenFile="/etc/passwd"), {"arbitraryFSAccessThroughSMs": {"deny": True}},
                             "spec.endpoints[0].bearerTokenFile", "arbitraryFSAccessThroughSMs.deny", None),
    "fs-access-tls-file": (ep(scheme="https", tlsConfig={"caFile": "/etc/ssl/ca.pem"}), {"arbitraryFSAccessThroughSMs": {"deny": True}},
                           "spec.endpoints[0].tlsConfig.caFile", "reference a Secret or ConfigMap", None),
    "tls-ca-not-pem": (ep(scheme="https", tlsConfig={"ca": {"secret": {"name": "creds", "key": "user"}}}), {},
                       "spec.endpoints[0].tlsConfig.ca", "does not hold a PEM certificate", None),
    "tls-cert-without-key": (ep(scheme="https", tlsConfig={"cert": {"secret": {"name": "tls", "key": "cert"}}}), {},
                             "spec.endpoints[0].tlsConfig", "needs both cert and key", True),
    "bad-scheme": (ep(scheme="ftp"), {}, "spec.endpoints[0].scheme", "use http or https", False),
}


def _good():
    return service_monitor("good", labels={"team": "web"})


def _bad(endpoint, selector=None):
    sm = service_monitor("bad", labels={"team": "web"}, endpoints=[endpoint])
    if selector is not None:
        sm["spec"]["selector"] = selector
    return sm


def _inputs(sms, **spec):
    return RenderInputs(
        prometheus=prometheus_obj(**spec),
        service_monitors=sms,
        secrets={
            ("monitoring", "creds"): secret("creds", user="alice", token="t0k3n"),
            ("monitoring", "tls"): secret("tls", cert=PEM_CERT, key=PEM_KEY),
        },
    )


@pytest.mark.parametrize("case", sorted(CASES), ids=sorted(CASES))
def test_rejection(case):
    endpoint, spec, field, fragment, _ = CASES[case]
    result = render(_inputs([_good(), _bad(endpoint)], **spec))
    bad = [p for p in result.rejected if p.name == "bad"]
    assert len(bad) == 1, result.rejected
    assert (bad[0].kind, bad[0].namespace, bad[0].field) == ("ServiceMonitor", "monitoring", field)
    assert fragment in bad[0].message
    assert not [p for p in result.rejected if p.name != "bad"]
    # the other ServiceMonitor still renders, the bad one contributes nothing
    names = [j["job_name"] for j in result.config["scrape_configs"]]
    assert names == ["serviceMonitor/monitoring/good/0"]
    assert result.accepted("ServiceMonitor") == [("monitoring", "good")]
    assert ("ServiceMonitor", "monitoring", "bad") not in result.jobs


def test_invalid_selector_is_rejected():
    bad = _bad(ep(), selector={"matchExpressions": [{"key": "app", "operator": "Near", "values": ["x"]}]})
    result = render(_inputs([_good(), bad]))
    [problem] = result.rejected
    assert problem.field == "spec.selector"
    assert "'Near' is not a valid operator" in problem.message
    assert [j["job_name"] for j in result.config["scrape_configs"]] == ["serviceMonitor/monitoring/good/0"]


def test_unknown_scrape_class_is_rejected():
    bad = _bad(ep())
    bad["spec"]["scrapeClass"] = "missing"
    result = render(_inputs([_good(), bad]))
    [problem] = result.rejected
    assert problem.field == "spec.scrapeClass"
    assert "scrape class 'missing' is not defined" in problem.message


def test_pod_monitor_rejection_keeps_service_monitors():
    from .helpers import pod_monitor

    pm = pod_monitor("pm", podMetricsEndpoints=[{"port": "m", "interval": "5s", "scrapeTimeout": "6s"}])
    inputs = _inputs([_good()])
    inputs.pod_monitors = [pm, pod_monitor("okpm")]
    result = render(inputs)
    [problem] = result.rejected
    assert (problem.kind, problem.field) == ("PodMonitor", "spec.podMetricsEndpoints[0].scrapeTimeout")
    assert [j["job_name"] for j in result.config["scrape_configs"]] == [
        "serviceMonitor/monitoring/good/0", "podMonitor/monitoring/okpm/0"]


@pytest.mark.prometheus
def test_all_rejections_together_still_pass_promtool(tmp_path):
    """Every bad monitor at once: the rest renders and Prometheus accepts the result."""
    sms = [_good()]
    for i, case in enumerate(sorted(c for c in CASES if not CASES[c][1])):
        sm = _bad(CASES[case][0])
        sm["metadata"]["name"] = f"bad-{i}"
        sms.append(sm)
    result = render(_inputs(sms))
    assert len(result.rejected) == len(sms) - 1
    proc = promtool_check_config(lay_out(result, tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.prometheus
def test_promtool_refuses_what_validation_rejects(tmp_path):
    """Generate the bad monitors WITHOUT validation: Prometheus must refuse each config.

    This shows each check guards a real failure, not a style preference.
    """
    refused = sorted(c for c in CASES if CASES[c][4] and not CASES[c][1])
    paths = []
    for case in refused:
        prom = prometheus_obj(version=PROMTOOL_VERSION)
        store = Store({("monitoring", "creds"): secret("creds", user="u", token="t"),
                       ("monitoring", "tls"): secret("tls", cert=PEM_CERT, key=PEM_KEY)})
        ctx, scope = new_context(prom, RenderOptions(), store)
        sm = _bad(copy.deepcopy(CASES[case][0]))
        sm_scope = Scope(store, "ServiceMonitor", "monitoring", "bad", ctx.version)
        try:
            jobs = service_monitor_jobs(ctx, sm, sm_scope)
        except Exception:  # generation itself refuses (e.g. cert without key): nothing to feed promtool
            continue
        text = assemble({"global": global_section(ctx, scope)}, [dump_job(j) for j in jobs], {})
        d = tmp_path / case
        d.mkdir()
        (d / "certs").mkdir()
        for name, content in sm_scope.assets.items():
            (d / "certs" / name).write_text(content)
        text = text.replace("/etc/prometheus/certs", str(d / "certs"))
        from .helpers import without_kubernetes_sd

        path = d / "prometheus.yaml"
        path.write_text(without_kubernetes_sd(text))
        paths.append((case, path))
    assert len(paths) >= 10
    accepted = [case for case, path in paths if promtool_check_config(path).returncode == 0]
    assert accepted == [], f"promtool accepted the unvalidated configs of {accepted}"


def test_invalid_default_scrape_class_rejects_its_users_only():
    classes = [{"name": "bad", "default": True, "relabelings": [{"action": "hashmod", "sourceLabels": ["a"], "targetLabel": "b"}]},
               {"name": "ok", "relabelings": [{"action": "labeldrop", "regex": "tmp_.*"}]}]
    good = _good()
    good["spec"]["scrapeClass"] = "ok"
    result = render(_inputs([good, _bad(ep())], scrapeClasses=classes))
    [problem] = result.rejected
    assert (problem.name, problem.field) == ("bad", "spec.scrapeClass")
    assert "scrape class 'bad' has an invalid relabelings[0]: action hashmod needs a non-zero modulus" in problem.message
    job = result.config["scrape_configs"][0]
    assert {"regex": "tmp_.*", "action": "labeldrop"} in job["relabel_configs"]


def test_invalid_enforced_namespace_label_rejects_monitors_instead_of_dropping_enforcement():
    result = render(_inputs([_good()], enforcedNamespaceLabel="tenant-ns"))
    [problem] = result.rejected
    assert "spec.enforcedNamespaceLabel 'tenant-ns' is not a valid label name" in problem.message
    assert result.config["scrape_configs"] == []


@pytest.mark.parametrize("endpoint,field", [
    (ep(bearerTokenSecret={"name": "creds", "key": "token"}), "spec.endpoints[0].bearerTokenSecret"),
    (ep(basicAuth={"username": {"name": "creds", "key": "user"}, "password": {"name": "creds", "key": "token"}}),
     "spec.endpoints[0].basicAuth.username"),
    (ep(authorization={"credentials": {"name": "creds", "key": "token"}}), "spec.endpoints[0].authorization.credentials"),
])
def test_credentials_come_only_from_the_monitors_own_namespace(endpoint, field):
    """Secret monitoring/creds exists, but a monitor in `apps` naming `creds` means apps/creds."""
    bad = service_monitor("bad", namespace="apps", endpoints=[endpoint])
    result = render(_inputs([_good(), bad]))
    [problem] = result.rejected
    assert (problem.namespace, problem.name, problem.field) == ("apps", "bad", field)
    assert "Secret apps/creds not found" in problem.message
    assert "t0k3n" not in result.config_text and "alice" not in result.config_text
    assert [j["job_name"] for j in result.config["scrape_configs"]] == ["serviceMonitor/monitoring/good/0"]


def test_schema_rejections_say_what_to_write_for_common_patterns():
    from promop.render.schema_check import schema_problems

    sm = {"metadata": {"name": "a", "namespace": "b"},
          "spec": {"selector": {}, "bodySizeLimit": "ten", "endpoints": [{"interval": "5 min", "proxyUrl": "x"}]}}
    hints = {p.field: p.message for p in schema_problems("ServiceMonitor", sm)}
    assert hints["spec.bodySizeLimit"].endswith("use a size such as 512MB or 1GiB (CRD schema)")
    assert hints["spec.endpoints[0].interval"].endswith("use a duration such as 30s, 5m or 1h30m (CRD schema)")
    assert "use a URL starting with http://" in hints["spec.endpoints[0].proxyUrl"]


def test_a_status_the_schema_refuses_does_not_reject_the_monitor():
    """The render checks what it reads, the spec: a status kept from before a CRD upgrade (here
    one the schema refuses) must not take a monitor's jobs away."""
    from promop.render.schema_check import schema_problems

    status = {"bindings": [{"group": 5, "resource": "prometheuses"}], "unknownField": "x"}
    sm = service_monitor("ok", endpoints=[ep()])
    assert schema_problems("ServiceMonitor", {**sm, "status": status}) == []
    broken = copy.deepcopy(sm)
    broken["spec"]["endpoints"][0]["interval"] = "5 min"
    assert [p.field for p in schema_problems("ServiceMonitor", {**broken, "status": status})] \
        == ["spec.endpoints[0].interval"]
    result = render(RenderInputs(prometheus=prometheus_obj(), service_monitors=[{**sm, "status": status}]))
    assert [j["job_name"] for j in result.config["scrape_configs"]] == ["serviceMonitor/monitoring/ok/0"]
