"""`promop recommender simulate` on the sample files of each path, and its errors for bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_runner import promop

SAMPLES = Path(__file__).parent / "samples"


def simulate(path, *extra, input_text=None):
    """In-process (tests/cli_runner.py); test_stdin_through_a_real_pipe runs one real process."""
    return promop("recommender", "simulate", "-f", str(path), *extra, input=input_text or "")


def run_json(name: str) -> dict:
    p = simulate(SAMPLES / name, "-o", "json")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_cpu_only_v2():
    out = run_json("cpu-only.yaml")
    rec = out["recommendation"]
    assert rec["target"] == {"cpu": "587m", "memory": "250Mi"}
    assert rec["lowerBound"]["cpu"] == "585m"
    assert rec["upperBound"]["cpu"] == "1174m"
    assert rec["uncappedTarget"] == rec["target"]
    assert any("memory histogram: empty" in line for line in out["explanation"])


def test_memory_peaks_v5():
    out = run_json("memory-peaks.yaml")
    assert out["amounts"]["target"]["memory"] == 1102117711
    assert any("p90 = 958363227.2 bytes" in line for line in out["explanation"])


def test_oom_bump_v7():
    out = run_json("oom-bump.yaml")
    # 600 MiB (629145600) lands in bucket 29 like V6's 600 MiB: p90 664388475 -> 764046746.
    assert out["amounts"]["target"]["memory"] == 764046746
    assert any("ooms: 1 recorded" in line for line in out["explanation"])


@pytest.mark.parametrize("name,upper,lower", [
    ("confidence-5m.yaml", None, 0.54),
    ("confidence-24h.yaml", 2.0007, 0.998),
    ("confidence-7d.yaml", 1.143, 0.9997),
])
def test_confidence(name, upper, lower):
    out = run_json(name)
    a = out["amounts"]
    assert a["target"]["cpu"] == 587
    if upper is not None:
        assert abs(a["upperBound"]["cpu"] / 587 - upper) < 0.002
    assert abs(a["lowerBound"]["cpu"] / 587 - lower) < 0.01


def test_two_containers_floors_v8():
    out = run_json("two-containers.yaml")
    assert out["amounts"]["target"] == {"cpu": 12, "memory": 131072000}
    assert out["recommendation"]["target"] == {"cpu": "12m", "memory": "125Mi"}


def test_policy_caps_and_filters():
    out = run_json("policy.yaml")
    rec = out["recommendation"]
    assert rec["target"] == {"cpu": "500m"} and rec["uncappedTarget"] == {"cpu": "587m"}
    assert any("lowered to maxAllowed 500m" in line for line in out["explanation"])


def test_text_output_explains_each_value():
    p = simulate(SAMPLES / "cpu-only.yaml")
    assert p.returncode == 0, p.stderr
    assert "target:         cpu 587m" in p.stdout
    for needle in ("confidence = min(", "upper multiplier", "lower multiplier", "floors = pod minimum",
                   "cpu target: p90 = 0.5111345376 cores (end of bucket 25) -> 511m"):
        assert needle in p.stdout


@pytest.mark.parametrize("doc,field", [
    ("cpu: [{time: '2026-01-01T00:00:00Z', cores: -1}]", "cpu[0].cores"),
    ("cpu: [{time: 'yesterday', cores: 1}]", "cpu[0].time"),
    ("cpu: [{cores: 1}]", "cpu[0].time"),
    ("memory: [{time: '2026-01-01T00:00:00Z', bytes: lots}]", "memory[0].bytes"),
    ("ooms: [{time: '2026-01-01T00:00:00Z'}]", "ooms[0].memoryRequest"),
    ("config: {targetPercentile: high}", "config.targetPercentile"),
    ("config: {nope: 1}", "config.nope"),
    ("containersPerPod: 0", "containersPerPod"),
    ("policy: {maxAllowed: {cpu: x}}", "policy.maxAllowed.cpu"),
    ("policy: {controlledResources: [gpu]}", "policy.controlledResources"),
    ("cpus: []", "cpus"),
    ("cpu: [{from: '2026-01-01T00:00:00Z', to: '2026-01-02T00:00:00Z', cores: 1}]", "cpu[0].every"),
    ("cpu: {a: 1}", "cpu"),
])
def test_bad_input_is_one_line_naming_the_field(tmp_path, doc, field):
    f = tmp_path / "s.yaml"
    f.write_text(doc + "\n")
    p = simulate(f)
    assert p.returncode == 2
    assert p.stdout == ""
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and field + ":" in lines[0] and "Traceback" not in p.stderr, p.stderr


def test_not_yaml_and_missing_file(tmp_path):
    f = tmp_path / "s.yaml"
    f.write_text("cpu: [\n")
    p = simulate(f)
    assert p.returncode == 2 and "not YAML" in p.stderr and len(p.stderr.strip().splitlines()) == 1
    p = simulate(tmp_path / "missing.yaml")
    assert p.returncode == 2 and "missing.yaml" in p.stderr


def test_no_cpu_samples_no_recommendation(tmp_path):
    f = tmp_path / "s.yaml"
    f.write_text("memory: [{time: '2026-01-01T00:00:00Z', bytes: 1Gi}]\n")
    p = simulate(f, "-o", "json")
    assert p.returncode == 0
    assert json.loads(p.stdout)["recommendation"] is None


def test_stdin_through_a_real_pipe():
    """`-f -` in a real process reading a real pipe gives what the file gives in-process."""
    text = (SAMPLES / "cpu-only.yaml").read_text()
    proc = subprocess.run([sys.executable, "-m", "promop", "recommender", "simulate", "-f", "-", "-o", "json"],
                          capture_output=True, text=True, input=text, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == run_json("cpu-only.yaml")
