"""spec.otlp, spec.tracingConfig and spec.tsdb (staleSeriesCompactionThreshold, chunkEncoding): the version
gate of every setting at its exact boundary, upstream's refusals, the TLS assets of tracing, and the
flags the StatefulSet gets (OTLP receiver, xor2-encoding). Goldens: test_conformance_otlp.py."""

from __future__ import annotations

import pytest
import yaml

from promop.render import RenderInputs, generate_config, render
from promop.render.otlp import FIELDS
from promop.render.schema_check import InvalidPrometheus
from promop.render.statefulset import prometheus_args
from promop.render.unsupported import unsupported_fields
from promop.render.versions import Version

from .helpers import lay_out, prometheus_obj, promtool_check_config, secret

PEM_CA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


def _prom(**spec) -> dict:
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus",
            "metadata": {"name": "test", "namespace": "default"}, "spec": spec}


def _config(**spec) -> tuple[dict, list]:
    result = generate_config(_prom(**spec))
    assert yaml.safe_load(result.text) == result.config
    return result.config, result.warnings


def _refused(**spec) -> list[tuple[str, str]]:
    with pytest.raises(InvalidPrometheus) as info:
        generate_config(_prom(**spec))
    return [(p.field, p.message) for p in info.value.problems]


# ---- otlp: each setting from the version that reads it, and not one patch release before ----

OTLP_VALUES = {
    "promoteResourceAttributes": ["service.name", "k8s.pod.name"],
    "translationStrategy": "UnderscoreEscapingWithoutSuffixes",
    "keepIdentifyingResourceAttributes": True,
    "convertHistogramsToNHCB": False,
    "promoteAllResourceAttributes": False,
    "ignoreResourceAttributes": None,  # needs promoteAllResourceAttributes: tested below
    "promoteScopeMetadata": False,
    "labelNameUnderscoreSanitization": False,
    "labelNamePreserveMultipleUnderscores": True,
}
# upstream's gates (CRD docs, promcfg_test.go): the field, its first version, and the release before it
GATES = [
    ("promoteResourceAttributes", "v2.55.0", None),  # below 2.55 the whole section is refused
    ("translationStrategy", "v3.0.0", "v2.55.1"),
    ("keepIdentifyingResourceAttributes", "v3.1.0", "v3.0.1"),
    ("convertHistogramsToNHCB", "v3.4.0", "v3.3.1"),
    ("promoteAllResourceAttributes", "v3.5.0", "v3.4.2"),
    ("promoteScopeMetadata", "v3.6.0", "v3.5.9"),
    ("labelNameUnderscoreSanitization", "v3.8.0", "v3.7.3"),
    ("labelNamePreserveMultipleUnderscores", "v3.8.0", "v3.7.3"),
]
KEYS = {spec_key: key for spec_key, key, _ in FIELDS}


@pytest.mark.parametrize("field,since,before", GATES, ids=[g[0] for g in GATES])
def test_each_otlp_setting_is_written_from_its_version(field, since, before):
    value = OTLP_VALUES[field]
    config, warnings = _config(version=since, otlp={field: value})
    assert config["otlp"] == {KEYS[field]: value}  # false is a value too: written, not dropped
    assert not warnings
    if before:
        config, warnings = _config(version=before, otlp={field: value})
        assert "otlp" not in config  # nothing left: no empty section
        assert [w.field for w in warnings] == [f"spec.otlp.{field}"]
        assert "3." in warnings[0].message or "2." in warnings[0].message


def test_every_otlp_field_of_the_crd_is_gated_here():
    assert {f for f, _, _ in FIELDS} == set(OTLP_VALUES)
    assert [k for _, k, _ in FIELDS][:2] == ["promote_resource_attributes", "translation_strategy"]


def test_otlp_needs_prometheus_2_55():
    assert _refused(version="v2.54.1", otlp={}) == [
        ("spec.otlp", "Prometheus reads an otlp section only from v2.55.0, but spec.version is v2.54.1; "
                      "raise spec.version or remove spec.otlp")]
    assert "otlp" not in _config(version="v2.55.0", otlp={})[0]


def test_settings_below_their_version_are_dropped_but_the_others_kept():
    config, warnings = _config(version="v3.4.0", otlp={
        "promoteResourceAttributes": ["a"], "convertHistogramsToNHCB": True, "promoteScopeMetadata": True})
    assert config["otlp"] == {"promote_resource_attributes": ["a"], "convert_histograms_to_nhcb": True}
    assert [w.field for w in warnings] == ["spec.otlp.promoteScopeMetadata"]


def test_otlp_comes_after_remote_read_and_before_tracing():
    result = generate_config(_prom(version="v3.13.2", otlp={"promoteResourceAttributes": ["a"]},
                                   remoteRead=[{"url": "http://read"}], tracingConfig={"endpoint": "c:4317"}))
    assert list(result.config)[-3:] == ["remote_read", "otlp", "tracing"]
    assert result.text.index("\notlp:") < result.text.index("\ntracing:")


def test_no_translation_needs_3_4():
    assert _refused(version="v3.3.1", otlp={"translationStrategy": "NoTranslation"})[0][0] == \
        "spec.otlp.translationStrategy"
    config, _ = _config(version="v3.4.0", otlp={"translationStrategy": "NoTranslation"})
    assert config["otlp"] == {"translation_strategy": "NoTranslation"}


@pytest.mark.parametrize("strategy", ["NoUTF8EscapingWithSuffixes", "NoTranslation"])
def test_utf8_strategies_are_refused_with_the_legacy_name_scheme(strategy):
    problems = _refused(version="v3.13.2", nameValidationScheme="Legacy", otlp={"translationStrategy": strategy})
    assert [f for f, _ in problems] == ["spec.otlp.translationStrategy"]
    assert "Legacy" in problems[0][1]
    config, _ = _config(version="v3.13.2", nameValidationScheme="UTF8", otlp={"translationStrategy": strategy})
    assert config["otlp"] == {"translation_strategy": strategy}


def test_legacy_scheme_before_prometheus_3_writes_neither_so_nothing_conflicts():
    config, warnings = _config(version="v2.55.0", nameValidationScheme="Legacy",
                               otlp={"translationStrategy": "NoUTF8EscapingWithSuffixes"})
    assert "otlp" not in config
    assert "spec.otlp.translationStrategy" in [w.field for w in warnings]


def test_promote_all_and_its_ignore_list():
    config, _ = _config(version="v3.5.0", otlp={"promoteAllResourceAttributes": True,
                                                "ignoreResourceAttributes": ["b", "a"]})
    assert config["otlp"] == {"promote_all_resource_attributes": True, "ignore_resource_attributes": ["b", "a"]}
    # both set with promoteAll false: nothing contradicts (upstream refuses only a true promoteAll)
    config, _ = _config(version="v3.5.0", otlp={"promoteAllResourceAttributes": False,
                                                "promoteResourceAttributes": ["a"]})
    assert config["otlp"] == {"promote_resource_attributes": ["a"], "promote_all_resource_attributes": False}
    assert [f for f, _ in _refused(version="v3.5.0", otlp={"promoteAllResourceAttributes": True,
                                                         "promoteResourceAttributes": ["a"]})] == [
        "spec.otlp.promoteResourceAttributes"]
    assert [f for f, _ in _refused(version="v3.5.0", otlp={"promoteAllResourceAttributes": False,
                                                         "ignoreResourceAttributes": ["a"]})] == [
        "spec.otlp.ignoreResourceAttributes"]
    # below 3.5 both fields are dropped, so upstream does not refuse the combination
    config, _ = _config(version="v3.4.0", otlp={"promoteAllResourceAttributes": True,
                                                "promoteResourceAttributes": ["a"]})
    assert config["otlp"] == {"promote_resource_attributes": ["a"]}


def test_the_crd_schema_refuses_an_unknown_strategy():
    problems = _refused(version="v3.13.2", otlp={"translationStrategy": "Dots"})
    assert problems[0][0] == "spec.otlp.translationStrategy"


# ---- the OTLP receiver: on with enableOTLPReceiver; unset, whenever spec.otlp is set (an explicit false wins,
# as upstream's BuildCommonPrometheusArgs) ----

@pytest.mark.parametrize("spec,version,flag,feature", [
    ({"otlp": {"promoteResourceAttributes": ["a"]}}, "v3.0.0", True, False),
    ({"otlp": {"promoteResourceAttributes": ["a"]}}, "v2.55.0", False, True),
    ({"otlp": {}}, "v3.13.2", True, False),
    ({"enableOTLPReceiver": True}, "v2.47.0", False, True),
    ({"enableOTLPReceiver": True}, "v2.46.0", False, False),
    ({"enableOTLPReceiver": False}, "v3.0.0", False, False),
    ({"enableOTLPReceiver": False, "otlp": {"promoteResourceAttributes": ["a"]}}, "v2.46.0", False, False),
    ({"enableOTLPReceiver": False, "otlp": {"promoteResourceAttributes": ["a"]}}, "v3.0.0", False, False),
    ({"enableOTLPReceiver": False, "otlp": {}}, "v2.55.0", False, False),
    ({}, "v3.13.2", False, False),
])
def test_otlp_receiver_args(spec, version, flag, feature):
    args = prometheus_args(spec, Version(version))
    assert ("--web.enable-otlp-receiver" in args) is flag
    features = [a.split("=", 1)[1].split(",") for a in args if a.startswith("--enable-feature=")]
    assert ("otlp-write-receiver" in sum(features, [])) is feature


# ---- tracing ----

def test_tracing_lower_cases_what_prometheus_reads_lower_case_and_sorts_headers():
    config, warnings = _config(tracingConfig={
        "endpoint": "collector:4317", "clientType": "GRPC", "compression": "Gzip", "samplingFraction": "1",
        "headers": {"b": "2", "a": "1"}, "insecure": True, "timeout": "5s"})
    assert config["tracing"] == {"endpoint": "collector:4317", "client_type": "grpc", "sampling_fraction": 1,
                                 "insecure": True, "headers": {"a": "1", "b": "2"}, "compression": "gzip",
                                 "timeout": "5s"}
    assert list(config["tracing"]["headers"]) == ["a", "b"]
    assert not warnings


@pytest.mark.parametrize("fraction,expected", [("0", 0), ("0.25", 0.25), ("250m", 0.25), ("1", 1)])
def test_sampling_fraction_is_a_float_between_0_and_1(fraction, expected):
    config, warnings = _config(tracingConfig={"endpoint": "c:4317", "samplingFraction": fraction})
    assert config["tracing"]["sampling_fraction"] == expected
    assert not warnings


@pytest.mark.parametrize("fraction", ["2", "1001m", "-1m"])
def test_sampling_fraction_out_of_range_is_dropped_with_a_warning(fraction):
    config, warnings = _config(tracingConfig={"endpoint": "c:4317", "samplingFraction": fraction})
    assert "sampling_fraction" not in config["tracing"]
    assert [w.field for w in warnings] == ["spec.tracingConfig.samplingFraction"]


def test_tracing_needs_an_endpoint():
    assert _refused(tracingConfig={"clientType": "grpc"})[0][0].startswith("spec.tracingConfig")


def _tracing_tls_inputs(**tls) -> RenderInputs:
    prom = prometheus_obj(tracingConfig={"endpoint": "collector:4317", "tlsConfig": tls})
    ca = secret("tracing-ca", ca=PEM_CA)
    return RenderInputs(prometheus=prom, secrets={("monitoring", "tracing-ca"): ca})


def test_tracing_tls_files_go_into_the_tls_assets_secret():
    result = render(_tracing_tls_inputs(ca={"secret": {"name": "tracing-ca", "key": "ca"}},
                                        serverName="collector", certFile="/etc/client/cert.pem",
                                        keyFile="/etc/client/key.pem"))
    tls = result.config["tracing"]["tls_config"]
    assert tls == {"ca_file": "/etc/prometheus/certs/0_monitoring_tracing-ca_ca",
                   "cert_file": "/etc/client/cert.pem", "key_file": "/etc/client/key.pem", "server_name": "collector"}
    assert "0_monitoring_tracing-ca_ca" in result.tls_secrets[0]["data"]


def test_a_missing_tracing_tls_secret_stops_the_prometheus():
    with pytest.raises(InvalidPrometheus) as info:
        render(_tracing_tls_inputs(ca={"secret": {"name": "absent", "key": "ca"}}))
    assert info.value.problems[0].field.startswith("spec.tracingConfig.tlsConfig.ca")


def test_promtool_accepts_the_tracing_section(tmp_path):
    """Debian's promtool 2.42 reads `tracing` (otlp needs 2.55, which it refuses: not checked here)."""
    result = render(_tracing_tls_inputs(ca={"secret": {"name": "tracing-ca", "key": "ca"}}, insecureSkipVerify=False))
    prom = result.config
    assert prom["tracing"]["endpoint"] == "collector:4317"
    proc = promtool_check_config(lay_out(result, tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr


# ---- tsdb ----

@pytest.mark.parametrize("value,expected", [(1, 1), ("0.5", 0.5), (0, 0), ("750m", 0.75)])
def test_stale_series_threshold_from_3_10(value, expected):
    config, warnings = _config(version="v3.10.0", tsdb={"staleSeriesCompactionThreshold": value})
    assert config["storage"]["tsdb"] == {"stale_series_compaction_threshold": expected}
    assert not warnings
    config, warnings = _config(version="v3.9.9", tsdb={"staleSeriesCompactionThreshold": value})
    assert "storage" not in config
    assert [w.field for w in warnings] == ["spec.tsdb.staleSeriesCompactionThreshold"]


@pytest.mark.parametrize("value", [2, -1, "1001m", "-1m"])
def test_stale_series_threshold_out_of_0_1_is_refused_whatever_the_version(value):
    for version in ("v3.13.2", "v2.45.0"):
        problems = _refused(version=version, tsdb={"staleSeriesCompactionThreshold": value})
        assert [f for f, _ in problems] == ["spec.tsdb.staleSeriesCompactionThreshold"]


def test_chunk_encoding_from_3_13_lower_cased():
    config, warnings = _config(version="v3.13.0", tsdb={"chunkEncoding": {"floats": "Xor2"},
                                                       "outOfOrderTimeWindow": "5m"})
    assert config["storage"]["tsdb"] == {"out_of_order_time_window": "5m", "chunk_encoding": {"floats": "xor2"},
                                         "retention": {"time": "24h"}}
    assert not warnings
    config, warnings = _config(version="v3.12.9", tsdb={"chunkEncoding": {"floats": "Xor"}})
    assert "chunk_encoding" not in config["storage"]["tsdb"]
    assert [w.field for w in warnings] == ["spec.tsdb.chunkEncoding.floats"]


def test_xor_chunks_are_refused_with_st_storage_whatever_the_version():
    for version in ("v3.13.0", "v3.12.0"):
        problems = _refused(version=version, enableFeatures=["st-storage"], tsdb={"chunkEncoding": {"floats": "Xor"}})
        assert [f for f, _ in problems] == ["spec.tsdb.chunkEncoding.floats"]
        assert "st-storage" in problems[0][1]
    assert _config(version="v3.13.0", enableFeatures=["other"], tsdb={"chunkEncoding": {"floats": "Xor"}})


@pytest.mark.parametrize("floats,features,version,expected", [
    ("Xor2", [], "v3.13.0", ["xor2-encoding"]),
    ("Xor2", ["xor2-encoding"], "v3.13.0", ["xor2-encoding"]),  # once, not twice
    ("Xor2", ["st-storage"], "v3.13.0", ["st-storage", "xor2-encoding"]),
    ("Xor", [], "v3.13.0", []),
    ("Xor2", [], "v3.12.0", []),  # the encoding is not written below 3.13: neither is its flag
])
def test_xor2_turns_on_its_feature_flag(floats, features, version, expected):
    args = prometheus_args({"tsdb": {"chunkEncoding": {"floats": floats}}, "enableFeatures": features},
                           Version(version))
    flags = [a for a in args if a.startswith("--enable-feature=")]
    assert flags == ([f"--enable-feature={','.join(expected)}"] if expected else [])


def test_implemented_fields_are_not_reported_as_ignored():
    prom = _prom(otlp={"promoteResourceAttributes": ["a"]}, tracingConfig={"endpoint": "c:4317"},
                 tsdb={"staleSeriesCompactionThreshold": 1, "chunkEncoding": {"floats": "Xor2"}})
    assert unsupported_fields(prom) == []


def test_the_operator_fetches_the_secrets_and_configmaps_tracing_tls_reads():
    from promop.render.pipeline import references

    inputs = _tracing_tls_inputs(ca={"configMap": {"name": "ca-bundle", "key": "ca.crt"}},
                                 cert={"secret": {"name": "client", "key": "tls.crt"}},
                                 keySecret={"name": "client-key", "key": "tls.key"})
    refs = {(r.kind, r.namespace, r.name) for r in references(inputs)}
    assert {("ConfigMap", "monitoring", "ca-bundle"), ("Secret", "monitoring", "client"),
            ("Secret", "monitoring", "client-key")} <= refs
