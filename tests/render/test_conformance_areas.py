"""Upstream conformance, area by area (issue 11 s1): remote write, remote read, name validation
and native-histogram fields, version gates (pre-releases included), PodMonitor portNumber,
endpoints with port 0 or none, log file paths.

Inputs are upstream's test cases (pkg/prometheus/promcfg_test.go, named in `source`); the
expected sections follow upstream 0.93.0's generator (pkg/prometheus/promcfg.go:
GenerateRemoteWriteConfig, generateRemoteReadConfig, addScrapeProtocols,
addNativeHistogramConfig, generatePodMonitorConfig, generateAlertmanagerConfig,
appendQueryLogFile) and, where upstream has a golden for the same output, that golden's
section. `CASES` is the tally the report gives.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from promop.render import RenderInputs, RenderOptions, generate_config, render
from promop.render.context import VersionError
from promop.render.versions import Version

OPTIONS = RenderOptions(endpointslice_supported=False, shard_retention_policy=False)

SECRETS = {
    ("default", "oauth2"): {"metadata": {"name": "oauth2", "namespace": "default"},
                            "stringData": {"client_secret": "client-secret"}},
    ("default", "auth"): {"metadata": {"name": "auth", "namespace": "default"}, "stringData": {"bearer": "secret"}},
    ("default", "foo"): {"metadata": {"name": "foo", "namespace": "default"},
                         "stringData": {"proxy-header": "value", "token": "value"}},
}
CONFIGMAPS = {("default", "oauth2"): {"metadata": {"name": "oauth2", "namespace": "default"},
                                      "data": {"client_id": "client-id"}}}
OAUTH2 = {"clientId": {"configMap": {"name": "oauth2", "key": "client_id"}},
          "clientSecret": {"name": "oauth2", "key": "client_secret"},
          "tokenUrl": "http://token-url", "scopes": ["scope1"], "endpointParams": {"param": "value"}}
OAUTH2_OUT = {"client_id": "client-id", "client_secret": "client-secret", "token_url": "http://token-url",
              "scopes": ["scope1"], "endpoint_params": {"param": "value"}}
QUEUE = {"capacity": 1000, "minShards": 1, "maxShards": 10, "maxSamplesPerSend": 100, "batchSendDeadline": "20s",
         "maxRetries": 3, "minBackoff": "1s", "maxBackoff": "10s"}
QUEUE_OUT = {"capacity": 1000, "min_shards": 1, "max_shards": 10, "max_samples_per_send": 100,
             "batch_send_deadline": "20s", "min_backoff": "1s", "max_backoff": "10s"}
URL = "http://example.com"


def prom(version: str, **spec: Any) -> dict:
    """upstream's defaultPrometheus() at `version`."""
    return {
        "apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus",
        "metadata": {"name": "test", "namespace": "default"},
        "spec": {"version": version, "scrapeInterval": "30s", "evaluationInterval": "30s",
                 "podMonitorSelector": {"matchLabels": {"group": "group1"}},
                 "probeSelector": {"matchLabels": {"group": "group1"}}, **spec},
    }


def sm(**endpoint: Any) -> dict:
    spec_extra = endpoint.pop("_spec", {})
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
            "metadata": {"name": "test", "namespace": "default"},
            "spec": {"selector": {}, "endpoints": [{"port": "web", "interval": "30s", **endpoint}], **spec_extra}}


def pm(**endpoint: Any) -> dict:
    spec_extra = endpoint.pop("_spec", {})
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "PodMonitor",
            "metadata": {"name": "test", "namespace": "default"},
            "spec": {"selector": {}, "podMetricsEndpoints": [endpoint], **spec_extra}}


def rr(version, expected, **spec):
    return ("remote read", "TestRemoteReadConfig", prom(version, remoteRead=[{"url": URL, **spec}]), [], [],
            "remote_read", [{"url": URL, **expected}])


def rw(version, expected, source="TestRemoteWriteConfig", **spec):
    return ("remote write", source, prom(version, remoteWrite=[{"url": URL, **spec}]), [], [],
            "remote_write", [{"url": URL, **expected}])


def job_keys(area, source, version, monitor, expected, **prom_spec):
    return (area, source, prom(version, **prom_spec), [monitor] if monitor["kind"] == "ServiceMonitor" else [],
            [monitor] if monitor["kind"] == "PodMonitor" else [], "job", expected)


# (area, upstream source, prometheus, service monitors, pod monitors, where, expected)
CASES = {
    # -- remote read: TestRemoteReadConfig, every case ------------------------------------------------
    "rr-oauth2-v2.27.1": rr("v2.27.1", {"oauth2": OAUTH2_OUT}, oauth2=OAUTH2),
    "rr-oauth2-v2.26.0": rr("v2.26.0", {}, oauth2=OAUTH2),  # oauth2 needs 2.27.0
    "rr-follow-redirects-v2.25.0": rr("v2.25.0", {}, followRedirects=True),  # needs 2.26.0
    "rr-not-follow-redirects-v2.26.0": rr("v2.26.0", {"follow_redirects": False}, followRedirects=False),
    "rr-filter-external-labels-v2.26.0": rr("v2.26.0", {}, filterExternalLabels=True),  # needs 2.34.0
    "rr-v2.34.0": rr("v2.34.0", {}),
    "rr-not-filter-external-labels-v2.34.0": rr("v2.34.0", {"filter_external_labels": False},
                                                filterExternalLabels=False),
    "rr-filter-external-labels-v2.34.0": rr("v2.34.0", {"filter_external_labels": True}, filterExternalLabels=True),
    "rr-authorization-safe-v2.26.0": rr("v2.26.0", {"authorization": {"type": "Bearer", "credentials": "secret"}},
                                        authorization={"credentials": {"name": "auth", "key": "bearer"}}),
    "rr-proxy-v2.43.0": rr("v2.43.0", {"proxy_url": "http://no-proxy.com", "no_proxy": "0.0.0.0",
                                       "proxy_from_environment": False,
                                       "proxy_connect_header": {"header": ["value"]}},
                           proxyUrl="http://no-proxy.com", noProxy="0.0.0.0", proxyFromEnvironment=False,
                           proxyConnectHeader={"header": [{"name": "foo", "key": "proxy-header"}]}),
    "rr-matchers-recent-timeout-name": rr("v3.13.2", {"remote_timeout": "1m", "name": "r",
                                                       "required_matchers": {"a": "b", "c": "d"},
                                                       "read_recent": True},
                                          remoteTimeout="1m", name="r", requiredMatchers={"c": "d", "a": "b"},
                                          readRecent=True),
    # -- remote write: TestRemoteWriteConfig ----------------------------------------------------------
    "rw-queue-v2.22.0": rw("v2.22.0", {"queue_config": QUEUE_OUT}, queueConfig=QUEUE,
                           metadataConfig={"send": False, "sendInterval": "1m"}),  # metadata needs 2.23.0
    "rw-queue-metadata-v2.23.0-1": rw("v2.23.0", {"queue_config": QUEUE_OUT,
                                                  "metadata_config": {"send": False, "send_interval": "1m"}},
                                      queueConfig=QUEUE, metadataConfig={"send": False, "sendInterval": "1m"}),
    "rw-queue-metadata-v2.23.0-2": rw("v2.23.0", {"queue_config": QUEUE_OUT,
                                                  "metadata_config": {"send": False, "send_interval": "1m"}},
                                      queueConfig={k: v for k, v in QUEUE.items() if k != "maxRetries"},
                                      metadataConfig={"send": False, "sendInterval": "1m"}),
    "rw-queue-max-retries-v2.10.0": rw("v2.10.0", {"queue_config": {
        "capacity": 1000, "min_shards": 1, "max_shards": 10, "max_samples_per_send": 100,
        "batch_send_deadline": "20s", "max_retries": 3, "min_backoff": "1s", "max_backoff": "10s"}},
        queueConfig=QUEUE, metadataConfig={"send": False, "sendInterval": "1m"}),
    "rw-oauth2-v2.27.1": rw("v2.27.1", {"oauth2": OAUTH2_OUT}, oauth2=OAUTH2),
    "rw-no-default-timeout": rw("v3.13.2", {}, source="GenerateRemoteWriteConfig: remote_timeout only if set"),
    "rw-timeout-and-message-v2": rw("v3.13.2", {"remote_timeout": "10s",
                                                "protobuf_message": "io.prometheus.write.v2.Request",
                                                # v2 messages carry metadata: upstream writes send false
                                                # (RemoteWriteConfig_MessageVersion2_with_metadata.golden)
                                                "metadata_config": {"send": False}},
                                    source="GenerateRemoteWriteConfig: protobuf_message >= 2.54.0",
                                    remoteTimeout="10s", messageVersion="V2.0", metadataConfig={"send": True}),
    "rw-message-v2-before-2.54": rw("v2.53.0", {}, source="GenerateRemoteWriteConfig: protobuf_message >= 2.54.0",
                                    messageVersion="V2.0"),
    "rw-retry-on-429-only-when-true": rw("v2.26.0", {"queue_config": {"retry_on_http_429": True}},
                                         source="GenerateRemoteWriteConfig: retry_on_http_429 >= 2.26.0",
                                         queueConfig={"retryOnRateLimit": True, "capacity": 0}),
    # -- name validation, native histograms, protocols: version gates --------------------------------
    "name-validation-legacy-v3": ("global fields", "NameValidationSchemeLegacyWithPrometheusV3.golden",
                                  prom("v3.0.0", nameValidationScheme="Legacy"), [], [],
                                  "global.metric_name_validation_scheme", "legacy"),
    "name-validation-before-2.55": ("global fields", "CRD: nameValidationScheme requires Prometheus >= v2.55.0",
                                    prom("v2.54.0", nameValidationScheme="UTF8"), [], [],
                                    "global.metric_name_validation_scheme", None),
    "name-escaping-utf8-v3": ("global fields", "NameEscapingSchemeUTF8WithPrometheusV3.golden",
                              prom("v3.4.0", nameEscapingScheme="AllowUTF8"), [], [],
                              "global.metric_name_escaping_scheme", "allow-utf-8"),
    "global-scrape-native-histograms": ("global fields", "CRD: scrapeNativeHistograms requires Prometheus >= v3.8.0",
                                        prom("v3.8.0", scrapeNativeHistograms=True), [], [],
                                        "global.scrape_native_histograms", True),
    "global-scrape-native-histograms-3.7": ("global fields", "CRD: scrapeNativeHistograms requires >= v3.8.0",
                                            prom("v3.7.0", scrapeNativeHistograms=True), [], [],
                                            "global.scrape_native_histograms", None),
    "sm-scrape-native-histograms": job_keys("version gates", "addNativeHistogramConfig (3.8.0)", "v3.8.0",
                                            sm(_spec={"scrapeNativeHistograms": True}),
                                            {"scrape_native_histograms": True}),
    "sm-scrape-native-histograms-3.7": job_keys("version gates", "addNativeHistogramConfig (3.8.0)", "v3.7.0",
                                                sm(_spec={"scrapeNativeHistograms": True}),
                                                {"scrape_native_histograms": None}),
    "classic-histograms-rc-is-v3": job_keys("version gates", "addNativeHistogramConfig: Major == 3",
                                            "v3.0.0-rc.0", sm(_spec={"scrapeClassicHistograms": True}),
                                            {"always_scrape_classic_histograms": True,
                                             "scrape_classic_histograms": None}),
    "classic-histograms-v2.45": job_keys("version gates", "addNativeHistogramConfig: 2.45.0", "v2.45.0",
                                         sm(_spec={"scrapeClassicHistograms": True}),
                                         {"scrape_classic_histograms": True}),
    "nhcb-v3.0.0": job_keys("version gates", "ConvertClassicHistogramsToNHCBTrueWithPrometheusV3.golden", "v3.0.0",
                            sm(_spec={"convertClassicHistogramsToNHCB": True}),
                            {"convert_classic_histograms_to_nhcb": True}),
    "nhcb-rc-before-3.0.0": job_keys("version gates", "addNativeHistogramConfig: 3.0.0", "v3.0.0-rc.0",
                                     sm(_spec={"convertClassicHistogramsToNHCB": True}),
                                     {"convert_classic_histograms_to_nhcb": None}),
    "text1-on-rc": job_keys("version gates", "addScrapeProtocols: PrometheusText1.0.0 >= 3.0.0-rc.0",
                            "v3.0.0-rc.0",
                            sm(_spec={"scrapeProtocols": ["PrometheusText1.0.0", "PrometheusProto"]}),
                            {"scrape_protocols": ["PrometheusText1.0.0", "PrometheusProto"]}),
    "text1-on-v2": job_keys("version gates", "addScrapeProtocols: PrometheusText1.0.0 >= 3.0.0-rc.0", "v2.55.0",
                            sm(_spec={"scrapeProtocols": ["PrometheusText1.0.0", "PrometheusProto"]}),
                            {"scrape_protocols": ["PrometheusProto"]}),
    "fallback-protocol-rc": job_keys("version gates", "addFallbackScrapeProtocol: 3.0.0", "v3.0.0-rc.0",
                                     sm(_spec={"fallbackScrapeProtocol": "PrometheusText0.0.4"}),
                                     {"fallback_scrape_protocol": None}),
    "fallback-protocol-v3": job_keys("version gates", "addFallbackScrapeProtocol: 3.0.0", "v3.0.0",
                                     sm(_spec={"fallbackScrapeProtocol": "PrometheusText0.0.4"}),
                                     {"fallback_scrape_protocol": "PrometheusText0.0.4"}),
    # -- PodMonitor portNumber, ports 0 / none -----------------------------------------------------
    "pm-port-number": ("ports", "generatePodMonitorConfig: portNumber", prom("v3.13.2"), [],
                       [pm(portNumber=8080)], "relabel", {
                           "keep": [{"action": "keep", "source_labels": ["__meta_kubernetes_pod_container_port_number"],
                                     "regex": 8080}],
                           "endpoint": None}),
    "pm-port-name-wins": ("ports", "generatePodMonitorConfig: port before portNumber", prom("v3.13.2"), [],
                          [pm(port="web", portNumber=8080)], "relabel", {
                              "keep": [{"action": "keep", "source_labels": ["__meta_kubernetes_pod_container_port_name"],
                                        "regex": "web"}],
                              "endpoint": "web"}),
    "sm-target-port-0": ("ports", "generateServiceMonitorConfig: TargetPort.IntVal != 0", prom("v3.13.2"),
                         [{**sm(), "spec": {"selector": {}, "endpoints": [{"targetPort": 0}]}}], [], "relabel",
                         {"keep": [], "endpoint": "0"}),
    "sm-no-port": ("ports", "EmptyEndpointPorts.golden", prom("v3.13.2"),
                   [{**sm(), "spec": {"selector": {}, "endpoints": [{}]}}], [], "relabel",
                   {"keep": [], "endpoint": None}),
    "am-port-0": ("ports", "generateAlertmanagerConfig: Port.IntVal != 0", prom(
        "v3.13.2", alerting={"alertmanagers": [{"name": "am", "namespace": "default", "port": 0}]}), [], [],
        "alerting.alertmanagers.0.relabel_configs",
        [{"action": "keep", "source_labels": ["__meta_kubernetes_service_name"], "regex": "am"}]),
    "am-port-number": ("ports", "generateAlertmanagerConfig: int port", prom(
        "v3.13.2", alerting={"alertmanagers": [{"name": "am", "namespace": "default", "port": 9093}]}), [], [],
        "alerting.alertmanagers.0.relabel_configs",
        [{"action": "keep", "source_labels": ["__meta_kubernetes_service_name"], "regex": "am"},
         {"action": "keep", "source_labels": ["__meta_kubernetes_pod_container_port_number"], "regex": 9093}]),
    # -- log files ----------------------------------------------------------------------------------
    "query-log-bare-name": ("paths", "appendQueryLogFile + logFilePath", prom("v3.13.2", queryLogFile="query.log"),
                            [], [], "global.query_log_file", "/var/log/prometheus/query.log"),
    "query-log-stdout": ("paths", "appendQueryLogFile + logFilePath", prom("v3.13.2", queryLogFile="/dev/stdout"),
                         [], [], "global.query_log_file", "/dev/stdout"),
    "query-log-before-2.16": ("paths", "appendQueryLogFile: 2.16.0", prom("v2.15.0", queryLogFile="q.log"),
                              [], [], "global.query_log_file", None),
    "scrape-failure-log-bare-name": ("paths", "appendScrapeFailureLogFile + logFilePath",
                                     prom("v3.13.2", scrapeFailureLogFile="failures.log"), [], [],
                                     "global.scrape_failure_log_file", "/var/log/prometheus/failures.log"),
}


def _get(config: dict, path: str) -> Any:
    node: Any = config
    for part in path.split("."):
        if isinstance(node, list):
            node = node[int(part)]
        elif isinstance(node, dict):
            if part not in node:
                return None
            node = node[part]
        else:
            return None
    return node


def _generate(prometheus, sms, pms):
    return generate_config(copy.deepcopy(prometheus), sms, pms, secrets=SECRETS, configmaps=CONFIGMAPS,
                           options=OPTIONS)


@pytest.mark.parametrize("name", sorted(CASES))
def test_area_case(name):
    _area, _source, prometheus, sms, pms, where, expected = CASES[name]
    result = _generate(prometheus, sms, pms)
    assert result.rejected == []
    config = result.config
    if where == "job":
        [job] = config["scrape_configs"]
        for key, value in expected.items():
            assert job.get(key) == value, (key, job)
    elif where == "relabel":
        [job] = config["scrape_configs"]
        rules = job["relabel_configs"]
        keeps = [r for r in rules if r.get("action") == "keep" and any("port" in s for s in r.get("source_labels", []))]
        assert keeps == expected["keep"]
        endpoint = [r["replacement"] for r in rules if r.get("target_label") == "endpoint"]
        assert endpoint == ([] if expected["endpoint"] is None else [expected["endpoint"]])
    else:
        assert _get(config, where) == expected


def test_tally():
    """The count the report gives: every case above matches upstream."""
    areas: dict[str, int] = {}
    for area, *_ in CASES.values():
        areas[area] = areas.get(area, 0) + 1
    assert sum(areas.values()) == len(CASES) >= 40
    assert set(areas) == {"remote read", "remote write", "global fields", "version gates", "ports", "paths"}


def test_dropped_fields_are_warned_with_their_minimum_version():
    result = _generate(*CASES["rr-oauth2-v2.26.0"][2:5])
    assert any(w.field == "spec.remoteRead[0].oauth2" and "2.27.0" in w.message for w in result.warnings)
    result = _generate(*CASES["text1-on-v2"][2:5])
    assert any(w.field == "spec.scrapeProtocols[0]" and "3.0.0-rc.0" in w.message for w in result.warnings)
    result = _generate(*CASES["rw-queue-v2.22.0"][2:5])
    assert any(w.field == "spec.remoteWrite[0].queueConfig.maxRetries" for w in result.warnings)


def test_pre_releases_sort_before_their_release():
    assert Version("v3.0.0-rc.0") < Version("v3.0.0") < Version("v3.0.1-rc.0")
    assert Version("v3.0.0-rc.0") < Version("v3.0.0-rc.1") < Version("v3.0.0-rc.10")
    assert Version("v3.0.0-alpha") < Version("v3.0.0-alpha.1") < Version("v3.0.0-beta") < Version("v3.0.0-rc.0")
    assert Version("v2.45") == Version("2.45.0") and Version("v3.1.0+build.5") == Version("v3.1.0")
    assert Version("v3.0.0-rc.0").at_least("3.0.0-rc.0") and not Version("v3.0.0-rc.0").at_least("3.0.0")
    assert str(Version("v3.0.0-rc.0")) == "v3.0.0-rc.0"


def test_unsupported_major_version_is_refused():
    with pytest.raises(VersionError, match="supports Prometheus 2.x and 3.x"):
        _generate(prom("v4.0.0"), [], [])
    with pytest.raises(VersionError, match="supports Prometheus 2.x and 3.x"):
        _generate(prom("v1.8.2"), [], [])


def test_query_log_file_bare_name_gets_upstreams_emptydir():
    inputs = RenderInputs(prometheus=prom("v3.13.2", queryLogFile="query.log", serviceMonitorSelector={}))
    [sts] = render(inputs).statefulsets
    pod = sts["spec"]["template"]["spec"]
    assert {"name": "query-log-file", "emptyDir": {}} in pod["volumes"]
    prometheus = next(c for c in pod["containers"] if c["name"] == "prometheus")
    assert {"mountPath": "/var/log/prometheus", "name": "query-log-file"} in prometheus["volumeMounts"]
    inputs = RenderInputs(prometheus=prom("v3.13.2", queryLogFile="/dev/stdout", serviceMonitorSelector={}))
    [sts] = render(inputs).statefulsets
    assert not [v for v in sts["spec"]["template"]["spec"]["volumes"] if v["name"] == "query-log-file"]


@pytest.mark.parametrize("version,expected", [("v2.54.0", True), ("v3.3.0", True), ("v3.4.0", False),
                                              ("v2.53.0", False)])
def test_remote_write_v2_turns_on_metadata_wal_records_where_upstream_does(version, expected):
    inputs = RenderInputs(prometheus=prom(version, serviceMonitorSelector={},
                                          remoteWrite=[{"url": URL, "messageVersion": "V2.0"}]))
    [sts] = render(inputs).statefulsets
    args = next(c for c in sts["spec"]["template"]["spec"]["containers"] if c["name"] == "prometheus")["args"]
    assert any("metadata-wal-records" in a for a in args) == expected, args


def test_v3_pre_release_gets_no_console_flags():
    inputs = RenderInputs(prometheus=prom("v3.0.0-rc.0", serviceMonitorSelector={}))
    [sts] = render(inputs).statefulsets
    args = next(c for c in sts["spec"]["template"]["spec"]["containers"] if c["name"] == "prometheus")["args"]
    assert not [a for a in args if a.startswith("--web.console")]
