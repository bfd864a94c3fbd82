"""Helpers of the apiserver-facing tests (a uniquely named module on the tests' path)."""

from __future__ import annotations

import time
from typing import Any, Callable

from deadlines import scaled


def eventually(check: Callable[[], Any], timeout: float, what: str, interval: float = 0.05) -> Any:
    """Poll `check` until truthy, at most `timeout` s (times PROMOP_TEST_TIMEOUT_SCALE)."""
    deadline = time.monotonic() + scaled(timeout)
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out after {scaled(timeout)} s waiting for {what}"
        time.sleep(interval)


def compact_etcd(run_dir, revision: int) -> None:
    """Compact the kit's etcd (plain HTTP on loopback, v3 gRPC gateway) up to `revision`, as the
    apiserver itself does every 5 minutes: older resourceVersions are then expired."""
    import json
    import urllib.request
    from pathlib import Path

    port = (Path(run_dir) / "etcd-client.port").read_text().strip()
    request = urllib.request.Request(f"http://127.0.0.1:{port}/v3/kv/compaction", method="POST",
                                     data=json.dumps({"revision": str(revision), "physical": True}).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        response.read()
