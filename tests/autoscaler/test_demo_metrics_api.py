"""`promop demo autoscaling` serves the metrics APIs: `promop adapter` behind the sandbox's aggregation answers
the custom metrics API and, without kubectl on PATH, shows the raw metrics API answer instead of `kubectl top
pod`. The kubectl variant reads the same run as the autoscaling checks (tests/autoscaler/test_demo.py)."""

from __future__ import annotations

import os
import shutil

import pytest

from tests.autoscaler.demo_checks import assert_metrics_apis_answer, run_demo
from tests.prom.prom_fixtures import require_binaries


@pytest.mark.prometheus
@pytest.mark.slow
def test_demo_metrics_apis_answer_through_the_aggregation_without_kubectl(tmp_path):
    require_binaries()
    # a PATH with prometheus only: the demo shows the raw API instead of kubectl top
    (tmp_path / "prometheus").symlink_to(shutil.which("prometheus"))
    assert_metrics_apis_answer(run_demo(dict(os.environ, PATH=str(tmp_path))), with_kubectl=False)
