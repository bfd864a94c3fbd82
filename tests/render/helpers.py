"""Helpers for the renderer tests: object builders and promtool. Test data lives in testdata/."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

TESTDATA = Path(__file__).parent / "testdata"
PROMTOOL = "/usr/bin/promtool"
PROMTOOL_VERSION = "v2.42.0"  # Debian's promtool: render with this spec.version before checking


def promtool_path() -> str:
    """The promtool binary; skip (or fail under CI) when it is missing."""
    path = PROMTOOL if os.path.exists(PROMTOOL) else shutil.which("promtool")
    if not path:
        if os.environ.get("CI"):
            pytest.fail("promtool is required under CI (apt-get install prometheus)")
        pytest.skip("promtool not installed (apt-get install -y --no-install-recommends prometheus)")
    return path


def run_promtool(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([promtool_path(), *args], capture_output=True, text=True, timeout=60, cwd=cwd)


def prometheus_obj(name: str = "k8s", namespace: str = "monitoring", **spec) -> dict:
    """A Prometheus selecting every ServiceMonitor/PodMonitor/PrometheusRule in all namespaces."""
    base = {
        "version": PROMTOOL_VERSION,
        "serviceMonitorSelector": {},
        "serviceMonitorNamespaceSelector": {},
        "podMonitorSelector": {},
        "podMonitorNamespaceSelector": {},
        "ruleSelector": {},
        "ruleNamespaceSelector": {},
    }
    base.update(spec)
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "Prometheus",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}"},
        "spec": base,
    }


def service_monitor(name: str, namespace: str = "monitoring", labels: dict | None = None, **spec) -> dict:
    spec.setdefault("selector", {"matchLabels": {"app": name}})
    spec.setdefault("endpoints", [{"port": "web"}])
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "spec": spec,
    }


def pod_monitor(name: str, namespace: str = "monitoring", labels: dict | None = None, **spec) -> dict:
    spec.setdefault("selector", {"matchLabels": {"app": name}})
    spec.setdefault("podMetricsEndpoints", [{"port": "metrics"}])
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PodMonitor",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "spec": spec,
    }


def secret(name: str, namespace: str = "monitoring", **string_data: str) -> dict:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": namespace},
            "stringData": dict(string_data)}


def by_key(objs) -> dict:
    return {((o["metadata"].get("namespace") or ""), o["metadata"]["name"]): o for o in objs}


def load_yaml_dir(path: Path) -> list[dict]:
    docs = []
    for f in sorted(path.glob("*.yaml")):
        docs += [d for d in yaml.safe_load_all(f.read_text()) if d]
    return docs
