"""Garbage in a monitor never crashes a render: it is rejected, and the good monitor still renders."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from promop.render import RenderInputs, render

from .helpers import prometheus_obj, service_monitor, pod_monitor

scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 70000), st.sampled_from(["", "x", "30s", "web", "(", "$1", "a-b"]))
junk = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                     st.dictionaries(st.sampled_from(["name", "key", "secret", "configMap", "x"]), inner, max_size=3)),
                    max_leaves=8)

ENDPOINT_FIELDS = ["port", "targetPort", "portNumber", "path", "scheme", "params", "interval", "scrapeTimeout",
                   "honorLabels", "honorTimestamps", "tlsConfig", "bearerTokenFile", "bearerTokenSecret",
                   "authorization", "basicAuth", "oauth2", "proxyUrl", "noProxy", "proxyConnectHeader",
                   "relabelings", "metricRelabelings", "filterRunning", "followRedirects", "enableHttp2"]
SPEC_FIELDS = ["selector", "namespaceSelector", "jobLabel", "targetLabels", "podTargetLabels", "sampleLimit",
               "bodySizeLimit", "attachMetadata", "scrapeClass", "selectorMechanism", "scrapeProtocols"]

endpoint = st.dictionaries(st.sampled_from(ENDPOINT_FIELDS), junk, max_size=4)
spec_extra = st.dictionaries(st.sampled_from(SPEC_FIELDS), junk, max_size=3)


@settings(max_examples=150, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(endpoints=st.one_of(st.lists(st.one_of(endpoint, junk), max_size=3), junk), extra=spec_extra,
       pod=st.booleans())
def test_garbage_is_rejected_not_fatal(endpoints, extra, pod):
    if pod:
        bad = pod_monitor("bad")
        bad["spec"]["podMetricsEndpoints"] = endpoints
    else:
        bad = service_monitor("bad")
        bad["spec"]["endpoints"] = endpoints
    bad["spec"].update(extra)
    inputs = RenderInputs(prometheus=prometheus_obj(), service_monitors=[service_monitor("good")])
    if pod:
        inputs.pod_monitors = [bad]
    else:
        inputs.service_monitors = [*inputs.service_monitors, bad]
    result = render(inputs)
    names = [j["job_name"] for j in result.config["scrape_configs"]]
    assert "serviceMonitor/monitoring/good/0" in names
    assert not [p for p in result.rejected if p.name != "bad"]
    for p in result.rejected:
        assert p.field and p.message
        assert "promop bug" not in p.message, p  # handled by validation, not by the safety net


PROMETHEUS_FIELDS = [
    "scrapeInterval", "scrapeTimeout", "evaluationInterval", "externalLabels", "prometheusExternalLabelName",
    "replicaExternalLabelName", "scrapeProtocols", "enforcedNamespaceLabel", "excludedFromEnforcement",
    "enforcedSampleLimit", "enforcedBodySizeLimit", "bodySizeLimit", "scrapeClasses", "apiserverConfig",
    "arbitraryFSAccessThroughSMs", "additionalScrapeConfigs", "additionalAlertRelabelConfigs", "alerting",
    "remoteWrite", "tsdb", "exemplars", "ruleQueryOffset", "runtime", "queryLogFile", "podTargetLabels", "shards",
]


@settings(max_examples=150, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(extra=st.dictionaries(st.sampled_from(PROMETHEUS_FIELDS), junk, max_size=3))
def test_malformed_prometheus_is_rejected_by_its_schema_or_rendered(extra):
    """Never a crash: either the CRD schema refuses the Prometheus (naming fields it was given),
    or it renders, with the good monitor (or a reason it could not)."""
    from promop.render import references
    from promop.render.schema_check import InvalidPrometheus

    inputs = RenderInputs(prometheus=prometheus_obj(**extra), service_monitors=[service_monitor("good")])
    try:
        references(inputs)
        result = render(inputs)
    except InvalidPrometheus as exc:
        assert exc.problems
        for p in exc.problems:
            assert any(p.field == f"spec.{k}" or p.field.startswith((f"spec.{k}.", f"spec.{k}[")) for k in extra), p
        return
    names = [j["job_name"] for j in result.config["scrape_configs"]]
    assert "serviceMonitor/monitoring/good/0" in names or result.rejected


def test_malformed_prometheus_is_rejected_naming_each_field():
    from promop.render.schema_check import InvalidPrometheus

    with pytest.raises(InvalidPrometheus) as info:
        render(RenderInputs(prometheus=prometheus_obj(remoteWrite={"url": "x"}, externalLabels={"a": ["b"]}),
                            service_monitors=[service_monitor("good")]))
    assert {p.field: p.message for p in info.value.problems} == {
        "spec.externalLabels[a]": 'Invalid value: "array": must be of type string (CRD schema)',
        "spec.remoteWrite": 'Invalid value: "object": must be of type array (CRD schema)',
    }
