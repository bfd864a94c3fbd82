"""Topology (zone-aware) sharding: upstream's goldens (promcfg_test.go TestTopologyShardingRelabeling,
TestTopologyZoneExternalLabel), zone and in-zone shard per shard (TestTopologyZoneForShard,
TestInzoneShardForShard), the StatefulSets' nodeSelector (common_test.go TestNodeSelectorWithTopologyZone)
and reloader env (statefulset_test.go TestConfigReloaderTopologyZoneEnvVar), the gate, and validation."""

from __future__ import annotations

import copy

import pytest
import yaml

from promop.featuregates import TOPOLOGY_SHARDING, FeatureGates
from promop.render import RenderOptions, generate_config
from promop.render.model import RenderInputs
from promop.render.pipeline import render
from promop.render.schema_check import InvalidPrometheus
from promop.render.topology import Topology, of

from .helpers import TESTDATA
from .upstream_paths import upstream_tests

SPEC = yaml.safe_load((TESTDATA / "topology" / "cases.yaml").read_text())
GATE_ON = FeatureGates(((TOPOLOGY_SHARDING, True),))


def _options(gate: bool = True, kubernetes: str = "v1.34.0", retention: bool = False) -> RenderOptions:
    return RenderOptions(endpointslice_supported=False, shard_retention_policy=retention,
                         feature_gates=GATE_ON if gate else FeatureGates(), kubernetes_version=kubernetes)


def _prometheus(case: dict) -> dict:
    prom = copy.deepcopy(SPEC["prometheus"])
    prom["metadata"] = dict(case.get("metadata") or prom["metadata"])
    prom["spec"] = {k: v for k, v in {**prom["spec"], **case["spec"]}.items() if v is not None}
    return prom


@pytest.mark.parametrize("case", SPEC["cases"], ids=[c["golden"] for c in SPEC["cases"]])
def test_config_matches_upstream_golden(case):
    golden = upstream_tests() / "pkg" / "prometheus" / "testdata" / case["golden"]
    result = generate_config(_prometheus(case), case.get("service_monitors") or [], case.get("pod_monitors") or [],
                             options=_options(case.get("gate", True), case.get("kubernetes", "v1.34.0")))
    assert result.rejected == []
    assert result.config == yaml.safe_load(golden.read_text())


def test_retention_rules_come_before_the_zone_rules():
    """The gate PrometheusShardRetentionPolicy (on by default) restricts to the current shards first."""
    case = SPEC["cases"][0]
    result = generate_config(_prometheus(case), case["service_monitors"], options=_options(retention=True))
    rules = result.config["scrape_configs"][0]["relabel_configs"]
    at = next(i for i, r in enumerate(rules) if r.get("target_label") == "__tmp_current_shard")
    assert rules[at + 1] == {"source_labels": ["__tmp_current_shard"], "regex": "0|1|2|3", "action": "keep"}
    assert rules[at + 2]["source_labels"][0] == "__meta_kubernetes_endpointslice_endpoint_zone"


def _spec(zones: list[str] | None, shards: int = 4, mode: str = "Topology") -> dict:
    strategy = {"mode": mode, **({"topology": {"values": zones}} if zones is not None else {})}
    return {"shards": shards, "shardingStrategy": strategy}


@pytest.mark.parametrize("zones, shards, expected", [
    (["zone-a", "zone-b"], 2, [("zone-a", 0), ("zone-b", 0)]),
    (["zone-a"], 2, [("zone-a", 0), ("zone-a", 1)]),
    (["zone-a", "zone-b"], 3, [("zone-a", 0), ("zone-b", 0), ("zone-a", 1)]),
    (["zone-a", "zone-b"], 4, [("zone-a", 0), ("zone-b", 0), ("zone-a", 1), ("zone-b", 1)]),
    (["zone-a", "zone-b", "zone-c"], 6, [("zone-a", 0), ("zone-b", 0), ("zone-c", 0), ("zone-a", 1), ("zone-b", 1),
                                         ("zone-c", 1)]),
])
def test_zone_and_inzone_shard_of_each_shard(zones, shards, expected):
    topology = of(_spec(zones, shards), _options())
    assert [(topology.zone(i), topology.inzone_shard(i)) for i in range(shards)] == expected


@pytest.mark.parametrize("spec, gate", [
    (_spec(["zone-a", "zone-b"]), False),  # the gate is off
    (_spec(None, mode="Address"), True),
    (_spec([]), True),  # no zone listed
    ({"shards": 4}, True),
])
def test_no_active_topology(spec, gate):
    assert of(spec, _options(gate)) is None


def _objects(spec: dict, gate: bool = True, **extra) -> list[dict]:
    prom = {"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus",
            "metadata": {"name": "test", "namespace": "test", "uid": "u"},
            "spec": {"version": "v3.13.2", "serviceMonitorSelector": {}, **spec, **extra}}
    return render(RenderInputs(prom, options=_options(gate))).statefulsets


def _env(container: dict) -> dict:
    return {e["name"]: e.get("value") for e in container.get("env") or []}


def test_statefulsets_pin_each_shard_to_its_zone_and_give_the_reloaders_its_zone():
    sets = _objects(_spec(["zone-a", "zone-b"]), nodeSelector={"foo": "bar", "topology.kubernetes.io/zone": "x"})
    assert [s["metadata"]["name"] for s in sets] == ["prometheus-test", "prometheus-test-shard-1",
                                                     "prometheus-test-shard-2", "prometheus-test-shard-3"]
    for shard, sts in enumerate(sets):
        pod = sts["spec"]["template"]["spec"]
        zone = ["zone-a", "zone-b"][shard % 2]
        assert pod["nodeSelector"] == {"foo": "bar", "topology.kubernetes.io/zone": zone}
        for key, name in (("containers", "config-reloader"), ("initContainers", "init-config-reloader")):
            container = next(c for c in pod[key] if c["name"] == name)
            assert _env(container) == {"POD_NAME": None, "SHARD": str(shard), "TOPOLOGY_ZONE": zone,
                                       "INZONE_SHARD": str(shard // 2)}
        prom = next(c for c in pod["containers"] if c["name"] == "prometheus")
        assert "TOPOLOGY_ZONE" not in _env(prom)


def test_without_the_gate_nothing_is_pinned_and_the_render_says_why():
    prom = {"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus",
            "metadata": {"name": "test", "namespace": "test", "uid": "u"},
            "spec": {"version": "v3.13.2", "serviceMonitorSelector": {}, "nodeSelector": {"foo": "bar"},
                     **_spec(["zone-a", "zone-b"])}}
    result = render(RenderInputs(prom, options=_options(gate=False)))
    for sts in result.statefulsets:
        pod = sts["spec"]["template"]["spec"]
        assert pod["nodeSelector"] == {"foo": "bar"}
        assert "TOPOLOGY_ZONE" not in _env(pod["containers"][1])
    (warning,) = [w for w in result.warnings if w.field == "spec.shardingStrategy"]
    assert "--feature-gates=PrometheusTopologySharding=true" in warning.message
    assert "zone" not in result.config["global"]["external_labels"]


def test_fewer_shards_than_zones_is_refused_in_one_line():
    with pytest.raises(InvalidPrometheus) as info:
        _objects(_spec(["zone-a", "zone-b", "zone-c"], shards=2))
    (problem,) = info.value.problems  # the CRD's own rule (x-kubernetes-validations), checked before render
    assert "shards must be greater than or equal to the number of topology values" in problem.message
    assert "\n" not in str(info.value)


def test_fewer_shards_than_zones_is_refused_by_the_renderer_too():
    """The renderer's own check, for inputs that skipped the schema (e.g. a spec built in code)."""
    from promop.render.topology import TopologyError
    with pytest.raises(TopologyError, match="set shards to at least 3"):
        of(_spec(["zone-a", "zone-b", "zone-c"], shards=2), _options())


def test_hashmod_modulus_is_the_shards_of_one_zone():
    topology = Topology(("a", "b", "c"), 6, "zone", False)
    assert topology.modulus == 2
    rules = topology.zone_relabels()
    assert rules[-1] == {"source_labels": ["__tmp_topology", "__tmp_disable_sharding"],
                         "regex": "$(TOPOLOGY_ZONE);|.+;.+", "action": "keep"}


def test_promtool_accepts_the_config_of_each_shard(tmp_path):
    """The one config, with a shard's TOPOLOGY_ZONE / INZONE_SHARD / SHARD substituted as the reloader does."""
    from .helpers import run_promtool, without_kubernetes_sd

    case = SPEC["cases"][0]
    prom = _prometheus(case)
    prom["spec"]["version"] = "v2.42.0"  # Debian's promtool
    result = generate_config(prom, case["service_monitors"], options=_options(retention=True))
    topology = of(prom["spec"], _options())
    for shard in range(4):
        text = (result.text.replace("$(TOPOLOGY_ZONE)", topology.zone(shard))
                .replace("$(INZONE_SHARD)", str(topology.inzone_shard(shard))).replace("$(SHARD)", str(shard))
                .replace("$(POD_NAME)", f"prometheus-test-{shard}"))
        path = tmp_path / f"shard-{shard}.yaml"
        path.write_text(without_kubernetes_sd(text))  # Debian's promtool has no Kubernetes SD
        checked = run_promtool("check", "config", "--syntax-only", str(path))
        assert checked.returncode == 0, checked.stdout + checked.stderr


def test_without_a_topology_strategy_the_gate_changes_nothing():
    """statefulset_test.go TestConfigReloaderTopologyZoneEnvVar "no topology mode means no zone env var" (gate on),
    and common_test.go TestNodeSelectorWithTopologyZone "shardingStrategy=nil returns original selector"."""
    for sts in _objects({"shards": 2}, nodeSelector={"foo": "bar"}):
        pod = sts["spec"]["template"]["spec"]
        assert pod["nodeSelector"] == {"foo": "bar"}
        for key in ("containers", "initContainers"):
            for container in pod[key]:
                assert not {"TOPOLOGY_ZONE", "INZONE_SHARD"} & set(_env(container))
