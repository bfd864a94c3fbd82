"""`promop demo autoscaling` as a user runs it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.prom.prom_fixtures import require_binaries


@pytest.mark.prometheus
@pytest.mark.slow
def test_demo_scales_up_and_back_down():
    require_binaries()
    proc = subprocess.run([sys.executable, "-m", "promop", "demo", "autoscaling", "--once", "--speed", "60"],
                          capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "SCALE 1 -> " in out and "memory resource utilization (percentage of limit) above target" in out
    assert "All metrics below target" in out
    assert "Backoff" in out  # the cool-down is shown holding a change
    assert "done: peak" in out and "back to 1" in out


def test_demo_says_when_prometheus_is_missing(tmp_path):
    env = dict(os.environ, PATH=str(tmp_path))
    proc = subprocess.run([sys.executable, "-m", "promop", "demo", "autoscaling", "--once"], capture_output=True,
                          text=True, timeout=60, env=env)
    assert proc.returncode == 2
    assert "needs the `prometheus` binary on PATH" in proc.stdout
