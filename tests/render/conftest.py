"""Shared fixtures for the renderer tests (config half and rules/StatefulSet half)."""

from __future__ import annotations

import pytest

from .helpers import TESTDATA, load_yaml_dir


@pytest.fixture(scope="session")
def kube_prometheus() -> list[dict]:
    """The kube-prometheus manifests (13 ServiceMonitors, 8 PrometheusRules, a Prometheus)."""
    return load_yaml_dir(TESTDATA / "kube-prometheus")
