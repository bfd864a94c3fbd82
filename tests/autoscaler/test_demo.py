"""`promop demo autoscaling` as a user runs it (their PATH, kubectl on it)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from tests.autoscaler.demo_checks import assert_metrics_apis_answer, assert_scales_up_and_back_down, run_demo
from tests.prom.prom_fixtures import require_binaries


@pytest.mark.prometheus
@pytest.mark.slow
def test_demo_scales_up_and_back_down_and_kubectl_top_answers():
    """One `--once` run (about 40 s on a loaded machine) checked for both stories: a module fixture shared by
    two tests would still run the demo twice under `pytest -n 2`, whose workers split adjacent tests."""
    require_binaries()
    proc = run_demo()
    assert_scales_up_and_back_down(proc)
    if not shutil.which("kubectl"):
        pytest.skip("kubectl is not installed (the autoscaling checks passed)")
    assert_metrics_apis_answer(proc, with_kubectl=True)


def test_demo_says_when_prometheus_is_missing(tmp_path):
    env = dict(os.environ, PATH=str(tmp_path))
    proc = subprocess.run([sys.executable, "-m", "promop", "demo", "autoscaling", "--once"], capture_output=True,
                          text=True, timeout=60, env=env)
    assert proc.returncode == 2
    assert "needs the `prometheus` binary on PATH" in proc.stdout
