"""Shared fixtures: every test gets its own API sandbox on a free port."""

from __future__ import annotations

import pytest

from promop.sandbox import Sandbox


@pytest.fixture
def sandbox():
    """A started Sandbox, stopped after the test. Bookmarks come as from a real apiserver (none
    on an idle watch) but every 0.5 s instead of every minute while the store changes."""
    with Sandbox(port=0, bookmark_interval=0.5) as sb:
        yield sb


@pytest.fixture
def sandbox_kubeconfig(sandbox, tmp_path) -> str:
    """Path of a kubeconfig for `sandbox`, for kubectl and kubernetes.config."""
    return sandbox.write_kubeconfig(tmp_path / "kubeconfig")


@pytest.fixture
def api_client(sandbox):
    """A kubernetes ApiClient pointed at `sandbox`."""
    client = sandbox.api_client()
    try:
        yield client
    finally:
        client.close()
