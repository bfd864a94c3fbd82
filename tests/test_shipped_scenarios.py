"""The simulators' example inputs shipped in scenarios/ (issue 21 §7): each runs and gives the
numbers its comment states, which are the reference's worked examples (autoscaling.md: H1, H6,
the MemHpa cool-down; V7 and the 24 h confidence row), and the wheel carries the folder."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
import yaml
from cli_runner import promop  # in-process: the same entry point as `python -m promop`
from wheel_build import checkout_wheel

from promop import packaged

ROOT = Path(__file__).resolve().parents[1]
HPA = {"hpa-cpu-utilization.yaml": (8, 9), "hpa-requests-per-pod.yaml": (6, 6), "memhpa-memory-limits.yaml": (4, 4)}
RECOMMENDER = {"recommender-steady-cpu.yaml": ("cpu", 587), "recommender-oom.yaml": ("memory", 764046746)}




def test_every_scenario_has_an_expectation_and_the_checkout_is_where_promop_looks():
    assert packaged.scenarios_dir() == ROOT / "scenarios"
    assert sorted(p.name for p in packaged.scenarios_dir().glob("*.yaml")) == sorted({**HPA, **RECOMMENDER})


@pytest.mark.parametrize("name", sorted(HPA))
def test_hpa_scenario(name):
    proc = promop("hpa", "simulate", "-f", str(packaged.scenarios_dir() / name))
    assert proc.returncode == 0, proc.stderr
    out = yaml.safe_load(proc.stdout)
    assert (out["desiredReplicas"], out["metricReplicas"]) == HPA[name]


@pytest.mark.parametrize("name", sorted(RECOMMENDER))
def test_recommender_scenario(name):
    proc = promop("recommender", "simulate", "-f", str(packaged.scenarios_dir() / name), "-o", "json")
    assert proc.returncode == 0, proc.stderr
    resource, amount = RECOMMENDER[name]
    assert json.loads(proc.stdout)["amounts"]["target"][resource] == amount


def test_help_says_where_the_scenarios_are():
    for command in (("hpa", "simulate"), ("recommender", "simulate")):
        proc = promop(*command, "--help")
        assert "scenarios/" in proc.stdout and "packaged.scenarios_dir()" in " ".join(proc.stdout.split())


@pytest.mark.slow
def test_the_wheel_carries_the_scenarios(tmp_path_factory):
    built = checkout_wheel(tmp_path_factory)  # shared with test_operator_wheel: one build per test run
    if built.wheel is None:  # e.g. no network for the build requirements
        pytest.skip(f"cannot build a wheel here: {' '.join(built.output.split())[-300:]}")
    names = set(zipfile.ZipFile(built.wheel).namelist())
    for name in sorted({**HPA, **RECOMMENDER}):
        assert f"promop/_shipped/scenarios/{name}" in names, sorted(n for n in names if "_shipped" in n)[:20]
