"""Helpers for the Alertmanager tests: the shared goldens, building inputs, amtool."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from promop.render.alertmanager.common import Store
from promop.render.alertmanager.config import ConfigResult, build_config

ROOT = Path(__file__).resolve().parents[2]
TESTDATA = Path(__file__).resolve().parent / "testdata"
# A byte-for-byte copy of ../shared/conformance/alertmanager (upstream goldens and their inputs, Apache-2.0).
CONFORMANCE = TESTDATA / "conformance"
SHARED_CANDIDATES = [p / "shared" / "conformance" / "alertmanager" for p in (ROOT.parent, ROOT.parents[1])]
AMTOOL = shutil.which("amtool") or "/usr/bin/amtool"


def cases() -> list[str]:
    if not CONFORMANCE.exists():
        return []
    return sorted(p.name[: -len(".input.yaml")] for p in CONFORMANCE.glob("*.input.yaml"))


def load_docs(path: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def store_of(docs: list[dict]) -> Store:
    def index(kind: str) -> dict:
        return {((d["metadata"].get("namespace") or "default"), d["metadata"]["name"]): d for d in docs if d["kind"] == kind}

    return Store(index("Secret"), index("ConfigMap"))


def build_from_docs(docs: list[dict]) -> ConfigResult:
    am = next(d for d in docs if d["kind"] == "Alertmanager")
    return build_config(am, [d for d in docs if d["kind"] == "AlertmanagerConfig"],
                        [d for d in docs if d["kind"] == "Namespace"], store_of(docs))


def alertmanager(version: str = "v0.27.0", **spec: Any) -> dict:
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "Alertmanager",
            "metadata": {"name": "main", "namespace": "monitoring", "uid": "am-uid"},
            "spec": {"version": version, "alertmanagerConfigSelector": {}, "alertmanagerConfigNamespaceSelector": {},
                     **spec}}


def amc(name: str, namespace: str = "team", **spec: Any) -> dict:
    return {"apiVersion": "monitoring.coreos.com/v1alpha1", "kind": "AlertmanagerConfig",
            "metadata": {"name": name, "namespace": namespace, "labels": {"team": namespace}}, "spec": spec}


def secret(name: str, namespace: str = "team", **data: str) -> dict:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": namespace}, "stringData": data}


def base_secret(text: str, namespace: str = "monitoring", name: str = "alertmanager-main") -> dict:
    return secret(name, namespace, **{"alertmanager.yaml": text})


SIMPLE_BASE = 'route:\n  receiver: "null"\nreceivers:\n- name: "null"\n'


def amtool_check(text: str, tmp_path: Path) -> subprocess.CompletedProcess:
    """`amtool check-config` on `text` (skips when amtool is missing)."""
    if not Path(AMTOOL).exists():
        pytest.skip("amtool (Debian prometheus-alertmanager) is not installed")
    path = tmp_path / "alertmanager.yaml"
    path.write_text(text)
    return subprocess.run([AMTOOL, "check-config", str(path)], capture_output=True, text=True, timeout=60)
