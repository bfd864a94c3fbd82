"""promop.featuregates: upstream's gate names and defaults, and the refusals of --feature-gates."""

import pytest

from promop.featuregates import (AGENT_DAEMONSET, SHARD_RETENTION_POLICY, TOPOLOGY_SHARDING, GATES,
                                 FeatureGateError, FeatureGates, help_text, parse_feature_gates)


def test_upstream_defaults():
    gates = FeatureGates()
    assert gates.enabled(SHARD_RETENTION_POLICY) is True  # on by default since upstream 0.92
    assert gates.enabled(AGENT_DAEMONSET) is False
    assert gates.enabled(TOPOLOGY_SHARDING) is False
    assert set(GATES) == {"PrometheusAgentDaemonSet", "PrometheusShardRetentionPolicy",
                          "PrometheusTopologySharding", "RemoteWriteCustomResourceDefinition",
                          "StatusForConfigurationResources"}


def test_overrides_and_last_one_wins():
    gates = parse_feature_gates("PrometheusAgentDaemonSet=true, PrometheusShardRetentionPolicy=false")
    assert gates.enabled(AGENT_DAEMONSET) and not gates.enabled(SHARD_RETENTION_POLICY)
    assert parse_feature_gates("PrometheusTopologySharding=true,PrometheusTopologySharding=false") \
        .enabled(TOPOLOGY_SHARDING) is False
    assert parse_feature_gates("").as_dict() == FeatureGates().as_dict()


@pytest.mark.parametrize("value", ["1", "t", "T", "TRUE", "true", "True"])
def test_go_parsebool_true(value):
    assert parse_feature_gates(f"PrometheusAgentDaemonSet={value}").enabled(AGENT_DAEMONSET)


@pytest.mark.parametrize("text, words", [
    ("Nope=true", "unknown feature gate 'Nope'"),
    ("PrometheusAgentDaemonSet", "missing bool value"),
    ("PrometheusAgentDaemonSet=yes", "invalid value of PrometheusAgentDaemonSet"),
    ("prometheusagentdaemonset=true", "unknown feature gate"),
])
def test_refusals_are_one_line(text, words):
    with pytest.raises(FeatureGateError) as err:
        parse_feature_gates(text)
    assert words in str(err.value) and "\n" not in str(err.value)


def test_string_form_and_help():
    assert str(parse_feature_gates("PrometheusAgentDaemonSet=true")).startswith(
        "PrometheusAgentDaemonSet=true,PrometheusShardRetentionPolicy=true,")
    assert "PrometheusShardRetentionPolicy: Enables shard retention policy for Prometheus (enabled: true)" \
        in help_text()
