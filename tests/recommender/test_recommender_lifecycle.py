"""The recommender's lifecycle on the controller host: its informers are a group, and waiting for them stops
when the process is told to stop (before, `wait_for_sync` ignored `stop` and a SIGTERM waited out the timeout)."""

from __future__ import annotations

import threading
import time

from prometheus_client import CollectorRegistry

from promop.recommender.controller import Recommender
from promop.recommender.options import Options


class NoProm:
    def query_range(self, *a, **k):
        raise AssertionError("not used")


def test_waiting_for_the_caches_ends_when_stop_is_set(kube):
    r = Recommender(kube, Options(), CollectorRegistry(), prom_client=NoProm())
    assert [inf for inf in r.informers] == [r.vpas, r.pods]
    stop = threading.Event()
    stop.set()
    began = time.monotonic()
    assert r.wait_for_sync(60.0, stop) is False  # informers never started: only `stop` can end this early
    assert time.monotonic() - began < 5.0
    ready, why = r.readiness()
    assert not ready and "caches not synced" in why


def test_stop_taking_work_ends_the_loop_and_stop_ends_the_informers(kube):
    r = Recommender(kube, Options(), CollectorRegistry(), prom_client=NoProm())
    r.start_informers()
    r.stop_taking_work()  # leadership lost: the loop must not start another round
    assert r._stopping.is_set()
    r.stop(timeout=5.0)
    assert all(inf._stopped for inf in r.informers)
