"""Helpers for the admission webhook tests: upstream's testdata translated into reviews, and posting them."""

from __future__ import annotations

import json
import ssl
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TESTDATA = ROOT.parent / "shared" / "reference" / "upstream-tests" / "pkg" / "admission" / "testdata"


def golden(name: str) -> bytes:
    path = TESTDATA / name
    if not path.exists():
        pytest.skip(f"{path} not present (../shared is not checked out)")
    return path.read_bytes()


def amc_review(version: str, spec_json: bytes) -> bytes:
    """upstream's buildAdmissionReviewFromAlertmanagerConfigSpec, translated."""
    spec = json.loads(spec_json)
    return json.dumps({
        "kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1",
        "request": {
            "uid": "87c5df7f-5090-11e9-b9b4-02425473f309",
            "kind": {"group": "monitoring.coreos.com", "version": version, "kind": "AlertmanagerConfig"},
            "resource": {"group": "monitoring.coreos.com", "version": version, "resource": "alertmanagerconfigs"},
            "namespace": "monitoring", "operation": "CREATE",
            "object": {"apiVersion": f"monitoring.coreos.com/{version}", "kind": "AlertmanagerConfig",
                       "metadata": {"name": "test", "namespace": "monitoring",
                                    "uid": "87c5d31d-5090-11e9-b9b4-02425473f309"},
                       "spec": spec},
        },
    }).encode()


def conversion_review(source: str, target: str, spec_json: bytes) -> bytes:
    """upstream's buildConversionReviewFromAlertmanagerConfigSpec, translated."""
    return json.dumps({
        "kind": "ConversionReview", "apiVersion": "apiextensions.k8s.io/v1",
        "request": {"uid": "87c5df7f-5090-11e9-b9b4-02425473f309",
                    "desiredAPIVersion": f"monitoring.coreos.com/{target}",
                    "objects": [{"apiVersion": f"monitoring.coreos.com/{source}", "kind": "AlertmanagerConfig",
                                 "metadata": {"name": "test", "namespace": "monitoring"},
                                 "spec": json.loads(spec_json)}]},
    }).encode()


def post(url: str, body: bytes, cafile: str | None = None) -> tuple[int, dict]:
    ctx = ssl.create_default_context(cafile=cafile) if cafile else None
    req = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(req, timeout=30, context=ctx) as resp:
        return resp.status, json.loads(resp.read())




def kubectl_runner(sandbox, tmp_path: Path):
    """kubectl(*args, input=None, check=True) against the sandbox (skips when kubectl is missing)."""
    import shutil
    import subprocess

    binary = shutil.which("kubectl")
    if binary is None:
        pytest.skip("kubectl is not installed")
    kubeconfig = sandbox.write_kubeconfig(tmp_path / "kubeconfig")

    def run(*args: str, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
        proc = subprocess.run([binary, "--kubeconfig", kubeconfig, "--cache-dir", str(tmp_path / "kcache"), *args],
                              capture_output=True, text=True, timeout=60, input=input, cwd=ROOT)
        if check:
            assert proc.returncode == 0, f"kubectl {' '.join(args)}: {proc.stderr}"
        return proc

    return run
