"""`promop demo autoscaling` as a user runs it (their PATH, kubectl on it), and on a PATH without kubectl:
`promop adapter` behind the sandbox's aggregation answers the metrics APIs, shown through `kubectl top pod`
or, without kubectl, as the raw metrics API answer."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from tests.autoscaler.demo_checks import assert_metrics_apis_answer, assert_scales_up_and_back_down, finish, start_demo
from tests.prom.prom_fixtures import require_binaries


@pytest.mark.prometheus
@pytest.mark.slow
def test_demo_scales_up_and_back_down_and_the_metrics_apis_answer_with_and_without_kubectl(tmp_path):
    """Two `--once` runs side by side (each about 40 s on a loaded machine, nearly all of it waiting on the
    simulated clock): the user's PATH, checked for the autoscaling story and `kubectl top pod`, and a PATH
    with prometheus only, checked for the raw metrics API answer. One test, not two sharing a fixture:
    `pytest -n 2` would run a module fixture once per worker, and two tests could not overlap their runs."""
    require_binaries()
    bare = tmp_path / "bin"  # a PATH with prometheus only: the demo shows the raw API instead of kubectl top
    bare.mkdir()
    (bare / "prometheus").symlink_to(shutil.which("prometheus"))
    users, without_kubectl = start_demo(), start_demo(dict(os.environ, PATH=str(bare)))
    try:
        proc, bare_proc = finish(users), finish(without_kubectl)
    finally:
        for p in (users, without_kubectl):
            if p.poll() is None:
                p.kill()
                p.wait()
    assert_scales_up_and_back_down(proc)
    assert_metrics_apis_answer(bare_proc, with_kubectl=False)
    if not shutil.which("kubectl"):
        pytest.skip("kubectl is not installed (the autoscaling and raw metrics API checks passed)")
    assert_metrics_apis_answer(proc, with_kubectl=True)


def test_demo_says_when_prometheus_is_missing(tmp_path):
    env = dict(os.environ, PATH=str(tmp_path))
    proc = subprocess.run([sys.executable, "-m", "promop", "demo", "autoscaling", "--once"], capture_output=True,
                          text=True, timeout=60, env=env)
    assert proc.returncode == 2
    assert "needs the `prometheus` binary on PATH" in proc.stdout
