"""Optimistic concurrency under parallel writers, and watch ordering while they race."""

from __future__ import annotations

import threading

from kubernetes import client
from kubernetes.client import ApiException

from .helpers import configmap
from .test_watch import collect


def test_parallel_increments_with_conflict_retries_lose_nothing(sandbox, core):
    start = core.create_namespaced_config_map("default", configmap("counter", n="0"))
    workers, per_worker = 4, 20
    conflicts = []

    def increment() -> None:
        api = client.CoreV1Api(sandbox.api_client())
        for _ in range(per_worker):
            while True:
                current = api.read_namespaced_config_map("counter", "default")
                body = configmap("counter", n=str(int(current.data["n"]) + 1))
                body["metadata"]["resourceVersion"] = current.metadata.resource_version
                try:
                    api.replace_namespaced_config_map("counter", "default", body)
                    break
                except ApiException as exc:
                    assert exc.status == 409
                    conflicts.append(1)

    threads = [threading.Thread(target=increment) for _ in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    final = core.read_namespaced_config_map("counter", "default")
    assert final.data["n"] == str(workers * per_worker)
    events = collect(core.list_namespaced_config_map, workers * per_worker,
                     namespace="default", resource_version=start.metadata.resource_version)
    values = [int(e["object"]["data"]["n"]) for e in events]
    assert values == list(range(1, workers * per_worker + 1))
    rvs = [int(e["rv"]) for e in events]
    assert rvs == sorted(rvs)
    assert sandbox.count_requests(verb="update") == workers * per_worker + len(conflicts)
