"""prometheus_operator_workqueue_* values, on a fresh registry and a fake clock."""

from __future__ import annotations

import gc
import uuid

import pytest
from prometheus_client import REGISTRY, CollectorRegistry, generate_latest

from promop.kube.workqueue import FakeClock, Queue, RateLimitingQueue

P = "prometheus_operator_workqueue_"


@pytest.fixture
def registry():
    return CollectorRegistry()


@pytest.fixture
def clock():
    return FakeClock()


def value(registry, metric: str, name: str = "q", **labels) -> float | None:
    return registry.get_sample_value(P + metric, {"name": name, **labels})


def test_depth_and_adds_count_non_deduplicated_adds(registry, clock):
    q = Queue(name="q", registry=registry, clock=clock)
    for item in "aab":
        q.add(item)
    assert value(registry, "depth") == 2
    assert value(registry, "adds_total") == 2
    item, _ = q.get()
    assert value(registry, "depth") == 1
    q.add(item)  # re-added while processing: counted, as in client-go
    assert value(registry, "depth") == 2
    assert value(registry, "adds_total") == 3


def test_queue_and_work_duration_histograms(registry, clock):
    q = Queue(name="q", registry=registry, clock=clock)
    q.add("a")
    clock.advance(2.0)
    q.add("a")  # dedup: the first add's time counts
    clock.advance(0.5)
    q.get()
    assert value(registry, "queue_duration_seconds_count") == 1
    assert value(registry, "queue_duration_seconds_sum") == pytest.approx(2.5)
    assert value(registry, "queue_duration_seconds_bucket", le="1.0") == 0
    assert value(registry, "queue_duration_seconds_bucket", le="10.0") == 1
    assert value(registry, "queue_duration_seconds_bucket", le="+Inf") == 1
    clock.advance(0.003)
    q.done("a")
    assert value(registry, "work_duration_seconds_count") == 1
    assert value(registry, "work_duration_seconds_sum") == pytest.approx(0.003)
    assert value(registry, "work_duration_seconds_bucket", le="0.001") == 0
    assert value(registry, "work_duration_seconds_bucket", le="0.01") == 1


def test_histogram_buckets_are_component_base_1us_to_1000s(registry, clock):
    Queue(name="q", registry=registry, clock=clock)
    text = generate_latest(registry).decode()
    bounds = [
        line.split('le="')[1].split('"')[0]
        for line in text.splitlines()
        if line.startswith(P + "queue_duration_seconds_bucket")
    ]
    assert bounds == ["1e-06", "1e-05", "0.0001", "0.001", "0.01", "0.1", "1.0", "10.0",
                      "100.0", "1000.0", "+Inf"]


def test_unfinished_and_longest_running_are_computed_at_scrape(registry, clock):
    q = Queue(name="q", registry=registry, clock=clock)
    q.add("a")
    q.add("b")
    q.get()
    clock.advance(3.0)
    q.get()
    clock.advance(1.0)
    assert value(registry, "unfinished_work_seconds") == pytest.approx(4.0 + 1.0)
    assert value(registry, "longest_running_processor_seconds") == pytest.approx(4.0)
    q.done("a")
    q.done("b")
    assert value(registry, "unfinished_work_seconds") == 0
    assert value(registry, "longest_running_processor_seconds") == 0


def test_retries_count_every_add_after_and_add_rate_limited(registry, clock):
    q = RateLimitingQueue(name="q", registry=registry, clock=clock)
    q.add_after("a", 0)
    q.add_after("b", 5)
    q.add_rate_limited("c")
    assert value(registry, "retries_total") == 3
    assert value(registry, "depth") == 1
    clock.advance(5.0)
    assert value(registry, "depth") == 3, "due delayed items are counted at scrape"
    q.shutdown()
    q.add_after("d", 0)  # ignored after shutdown, not counted
    assert value(registry, "retries_total") == 3


def test_two_queues_share_the_families_in_one_registry(registry, clock):
    first = RateLimitingQueue(name="prometheus", registry=registry, clock=clock)
    second = RateLimitingQueue(name="alertmanager", registry=registry, clock=clock)
    first.add("a")
    second.add("a")
    second.add("b")
    assert value(registry, "adds_total", name="prometheus") == 1
    assert value(registry, "adds_total", name="alertmanager") == 2
    text = generate_latest(registry).decode()
    assert text.count(f"# TYPE {P}depth gauge") == 1


def test_same_name_queues_are_summed_and_counters_survive_gc(registry, clock):
    q1 = Queue(name="q", registry=registry, clock=clock)
    q2 = Queue(name="q", registry=registry, clock=clock)
    q1.add("a")
    q2.add("a")
    q2.add("b")
    assert value(registry, "adds_total") == 3
    assert value(registry, "depth") == 3
    del q2
    gc.collect()
    assert value(registry, "adds_total") == 3, "a counter must never go backwards"
    assert value(registry, "depth") == 1
    assert q1.get(timeout=0) == ("a", False)


def test_no_name_means_no_metrics(registry, clock):
    Queue(registry=registry, clock=clock).add("a")
    RateLimitingQueue(name=None, registry=registry, clock=clock).add("a")
    assert P not in generate_latest(registry).decode()


def test_default_registry_is_prometheus_client_registry():
    name = f"test-{uuid.uuid4().hex}"
    q = RateLimitingQueue(name=name)
    q.add("a")
    assert REGISTRY.get_sample_value(P + "adds_total", {"name": name}) == 1
