"""Fixtures for the sandbox's own tests: typed API objects and a CRD factory."""

from __future__ import annotations

import json
import time

import pytest
from kubernetes import client

from .helpers import crd_body


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
        deadline = time.monotonic() + 5
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
