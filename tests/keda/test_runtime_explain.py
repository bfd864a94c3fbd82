"""`promop keda explain` on the sandbox: each trigger's query and value, and the rule holding the count."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from promop.autoscaler.keda.resources import DEPLOYMENTS, SCALEDOBJECTS
from tests.keda.runtime_harness import KedaHarness, deployment, scaled_object, wait_for


@pytest.fixture
def h(sandbox):
    harness = KedaHarness(sandbox)
    yield harness
    harness.close()


def _explain(kubeconfig: str, name: str, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "promop", "keda", "explain", name, "--kubeconfig", kubeconfig,
                           *extra], capture_output=True, text=True, timeout=120)


def test_explain_at_zero_then_above_activation(h, sandbox_kubeconfig):
    h.client.create(DEPLOYMENTS, deployment("ex", 0), "default")
    h.prom.set("q_ex", "3")
    so = scaled_object("ex", "ex", h.prom.url, "q_ex", pollingInterval=3600)
    so["spec"]["triggers"][0]["metadata"]["activationThreshold"] = "5"
    h.client.create(SCALEDOBJECTS, so, "default")
    h.start()
    wait_for(lambda: (h.so("ex").get("status") or {}).get("hpaName"), what="reconciled")
    out = _explain(sandbox_kubeconfig, "default/ex", "-o", "json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    trig = doc["triggers"][0]
    assert trig["query"] == "q_ex" and trig["value"] == 3.0 and trig["active"] is False
    assert doc["target"]["replicas"] == 0
    assert any("no trigger value is above its activationThreshold" in w for w in doc["why"])
    h.prom.set("q_ex", "6")
    text = _explain(sandbox_kubeconfig, "default/ex")
    assert text.returncode == 0, text.stderr
    assert "s0-prometheus active (value > activationThreshold): the next poll (every 3600s) scales to 1" in text.stdout


def test_explain_missing_object_is_one_line(h, sandbox_kubeconfig):
    out = _explain(sandbox_kubeconfig, "default/nope")
    assert out.returncode == 1
    assert out.stderr.strip().count("\n") == 0 and "ScaledObject default/nope not found" in out.stderr
