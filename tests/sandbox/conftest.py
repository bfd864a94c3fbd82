"""Fixtures for the sandbox's own tests: typed API objects and a CRD factory."""

from __future__ import annotations

import json
import subprocess
import time

import pytest
from kubernetes import client
from deadlines import scaled

from .helpers import KUBECTL, crd_body


@pytest.fixture
def core(api_client):
    return client.CoreV1Api(api_client)


@pytest.fixture
def apps(api_client):
    return client.AppsV1Api(api_client)


@pytest.fixture
def custom(api_client):
    return client.CustomObjectsApi(api_client)


@pytest.fixture
def ext(api_client):
    return client.ApiextensionsV1Api(api_client)


@pytest.fixture
def make_crd(ext):
    """Create a CRD and wait until it is Established; returns the CRD dict."""

    def make(**kwargs) -> dict:
        body = crd_body(**kwargs)
        ext.create_custom_resource_definition(body)
        deadline = time.monotonic() + scaled(5)
        while time.monotonic() < deadline:
            raw = ext.read_custom_resource_definition(body["metadata"]["name"],
                                                      _preload_content=False)
            crd = json.loads(raw.data)
            conditions = {c["type"]: c["status"] for c in crd["status"].get("conditions", [])}
            if conditions.get("Established") == "True":
                return crd
            time.sleep(0.01)
        raise AssertionError(f"CRD {body['metadata']['name']} never became Established")

    return make


@pytest.fixture
def kubectl(sandbox_kubeconfig, tmp_path):
    """Run the real kubectl against the test's sandbox; asserts success unless check=False."""

    def run(*args: str, check: bool = True) -> subprocess.CompletedProcess:
        proc = subprocess.run([KUBECTL, "--kubeconfig", sandbox_kubeconfig, "--cache-dir",
                               str(tmp_path / "cache"), *args],
                              capture_output=True, text=True, timeout=60)
        if check:
            assert proc.returncode == 0, f"kubectl {' '.join(args)}: {proc.stderr}"
        return proc

    return run
