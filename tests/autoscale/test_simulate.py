"""`promop hpa simulate` on the scenario files (expected values from the reference's formulas, see each file)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from promop.cli import main

SCENARIOS = Path(__file__).parent / "scenarios"

EXPECTED = {
    "resource-utilization": {"desiredReplicas": 8, "metricReplicas": 9, "rateLimited": "ScaleUpLimit",
                             "metric": {"currentUtilization": 110, "currentAverageValue": "550m"}},
    "resource-averagevalue": {"desiredReplicas": 6, "metricReplicas": 6,
                              "metric": {"currentAverageValue": "524288k"}},
    "container-resource": {"desiredReplicas": 6, "metricReplicas": 6, "metric": {"currentUtilization": 180}},
    "pods-metric": {"desiredReplicas": 6, "metricReplicas": 6, "metric": {"currentAverageValue": "200"}},
    "object-value": {"desiredReplicas": 19, "metricReplicas": 19, "metric": {"currentValue": "95"}},
    "object-averagevalue": {"desiredReplicas": 10, "metricReplicas": 10, "metric": {"currentAverageValue": "47500m"}},
    "external-value-from-zero": {"desiredReplicas": 4, "metricReplicas": 10, "rateLimited": "ScaleUpLimit",
                                 "metric": {"currentValue": "95"}},
    "external-averagevalue": {"desiredReplicas": 10, "metricReplicas": 10, "metric": {"currentAverageValue": "47500m"}},
    "behavior-scaleup-max": {"desiredReplicas": 7, "metricReplicas": 21, "rateLimited": "ScaleUpLimit"},
    "behavior-scaleup-min": {"desiredReplicas": 6, "metricReplicas": 21, "rateLimited": "ScaleUpLimit"},
    "behavior-scaleup-disabled": {"desiredReplicas": 3, "metricReplicas": 21, "rescale": False},
    "behavior-scaledown-rate": {"desiredReplicas": 5, "metricReplicas": 2, "rateLimited": "ScaleDownLimit",
                                "rescale": False},
    "behavior-stabilization": {"desiredReplicas": 8, "metricReplicas": 5, "stabilized": "ScaleDownStabilized"},
    "legacy-stabilization": {"desiredReplicas": 4, "metricReplicas": 1, "stabilized": "ScaleDownStabilized",
                             "rescale": False},
    "missing-and-unready": {"desiredReplicas": 6, "metricReplicas": 6, "metric": {"currentUtilization": 90}},
    "partial-failure": {"desiredReplicas": 4, "metricReplicas": 6, "error": "invalid metrics (1 invalid out of 2)"},
    "per-direction-tolerance": {"desiredReplicas": 5, "metricReplicas": 5},
    "memhpa-cooldown": {"desiredReplicas": 2, "metricReplicas": 4, "rescale": False,
                        "metric": {"currentUtilization": 90}},
    "memhpa-scale-up": {"desiredReplicas": 4, "metricReplicas": 4, "metric": {"currentUtilization": 90}},
}


def simulate(path: Path, capsys, *extra: str) -> dict:
    assert main(["hpa", "simulate", "-f", str(path), *extra]) == 0
    return yaml.safe_load(capsys.readouterr().out)


def test_every_scenario_file_has_an_expectation():
    assert sorted(p.stem for p in SCENARIOS.glob("*.yaml")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_scenario(name, capsys):
    out = simulate(SCENARIOS / f"{name}.yaml", capsys)
    want = EXPECTED[name]
    assert out["desiredReplicas"] == want["desiredReplicas"]
    assert out["metricReplicas"] == want["metricReplicas"]
    assert out["rescale"] == want.get("rescale", out["desiredReplicas"] != out["currentReplicas"])
    if "rateLimited" in want:
        assert out["rateLimited"]["reason"] == want["rateLimited"]
    if "stabilized" in want:
        assert out["stabilized"]["reason"] == want["stabilized"]
    if "error" in want:
        assert out["error"].startswith(want["error"])
    for key, value in want.get("metric", {}).items():
        assert out["metrics"][0][key] == value
    if name.startswith("memhpa"):
        assert out["metricName"] == "memory resource utilization (percentage of limit)"
    kinds = [c["type"] for c in out["conditions"]]
    assert kinds == ["AbleToScale", "ScalingActive", "ScalingLimited"]
    assert out["explanation"][-1].startswith("scale from" if out["rescale"] else "keep")


def test_memhpa_cooldown_and_corrections(capsys):
    out = simulate(SCENARIOS / "memhpa-cooldown.yaml", capsys)
    assert out["cooldown"] == {"replicas": 2, "reason": "BackoffBoth"}
    able = next(c for c in out["conditions"] if c["type"] == "AbleToScale")
    assert (able["status"], able["reason"]) == ("False", "BackoffBoth")
    assert out["corrections"] == ["spec.minReplicas: minReplicas 0 is below 1; using 1"]
    assert any("cool-down" in line for line in out["explanation"])


def test_what_if_scales_observed_values(capsys):
    out = simulate(SCENARIOS / "pods-metric.yaml", capsys, "--what-if", "http_requests=0.5x")
    assert out["metrics"][0]["currentAverageValue"] == "100"
    assert out["desiredReplicas"] == 3 and out["rescale"] is False


BAD = [
    ("now: yesterday\n", "now: must be an RFC 3339 time"),
    ("now: '2026-01-01T00:00:00Z'\nhpa: {spec: {maxReplicas: 3, metrics: [{type: Resource, resource: {name: cpu, "
     "target: {type: Utilization}}}]}}\nscale: {specReplicas: 1}\n",
     "hpa.spec.metrics[0].resource.target.averageUtilization: must be set for a target of type Utilization"),
    ("now: '2026-01-01T00:00:00Z'\nhpa: {spec: {maxReplicas: 3}}\nscale: {specReplicas: 1}\n"
     "pods: [{name: a, containers: [{name: c, requests: {cpu: lots}}]}]\n",
     "pods[0].containers[0].requests.cpu: 'lots' is not a quantity"),
    ("now: '2026-01-01T00:00:00Z'\nhpa: {spec: {maxReplicas: 3}}\nscale: {}\n", "scale.specReplicas: is required"),
    ("now: '2026-01-01T00:00:00Z'\nhpa: {spec: {maxReplicas: 3, behavior: {scaleUp: {selectPolicy: Fast}}}}\n"
     "scale: {specReplicas: 1}\n", "hpa.spec.behavior.scaleUp.selectPolicy: must be Max, Min or Disabled"),
    ("now: '2026-01-01T00:00:00Z'\nhpa: {spec: {maxReplicas: 3}}\nscale: {specReplicas: 1}\nhistroy: {}\n",
     "histroy: unknown field"),
    ("now: '2026-01-01T00:00:00Z'\nhpa: {spec: {maxReplicas: 3}}\nscale: {specReplicas: 1}\n"
     "options: {downscaleStabilizationWindow: soon}\n", "options.downscaleStabilizationWindow: must be a duration"),
    # a sample for a pod not listed is no mistake (pods go away): test_superfluous.py
    ("now: [\n", "not valid YAML"),
]


@pytest.mark.parametrize("text,message", BAD)
def test_bad_scenario_is_one_line_naming_the_field(text, message, tmp_path, capsys):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    assert main(["hpa", "simulate", "-f", str(path)]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_simulate_as_a_user_runs_it():
    proc = subprocess.run([sys.executable, "-m", "promop", "hpa", "simulate", "-f",
                           str(SCENARIOS / "resource-utilization.yaml")], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert yaml.safe_load(proc.stdout)["desiredReplicas"] == 8
