"""`promop demo autoscaling` as a user runs it (their PATH, kubectl on it): one run per module, checked for
the autoscaling story and for `kubectl top pod` through the aggregated metrics APIs."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from tests.autoscaler.demo_checks import assert_metrics_apis_answer, assert_scales_up_and_back_down, run_demo
from tests.prom.prom_fixtures import require_binaries


@pytest.fixture(scope="module")
def demo_as_the_user_runs_it() -> subprocess.CompletedProcess:
    """Both tests read the output of one `--once` run: they only read it, so they cannot disturb each other."""
    require_binaries()
    return run_demo()


@pytest.mark.prometheus
@pytest.mark.slow
@pytest.mark.xdist_group("autoscaling-demo")
def test_demo_scales_up_and_back_down(demo_as_the_user_runs_it):
    assert_scales_up_and_back_down(demo_as_the_user_runs_it)


@pytest.mark.prometheus
@pytest.mark.slow
@pytest.mark.xdist_group("autoscaling-demo")
def test_demo_metrics_apis_answer_kubectl_top(demo_as_the_user_runs_it):
    if not shutil.which("kubectl"):
        pytest.skip("kubectl is not installed")
    assert_metrics_apis_answer(demo_as_the_user_runs_it, with_kubectl=True)


def test_demo_says_when_prometheus_is_missing(tmp_path):
    env = dict(os.environ, PATH=str(tmp_path))
    proc = subprocess.run([sys.executable, "-m", "promop", "demo", "autoscaling", "--once"], capture_output=True,
                          text=True, timeout=60, env=env)
    assert proc.returncode == 2
    assert "needs the `prometheus` binary on PATH" in proc.stdout
