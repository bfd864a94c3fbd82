"""The bulk intake paths equal the one-sample-at-a-time ones; the cluster state's VPA/aggregate bookkeeping."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from promop.vpa.cluster import ClusterState
from promop.vpa.state import AggregateContainerState, ContainerState
from promop.vpa.timeutil import parse_time

T0 = parse_time("2026-01-01T00:00:00Z")


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(-5 * 86400, 300 * 86400), st.integers(-5, 10**6)), max_size=120))
def test_bulk_cpu_equals_one_by_one(samples):
    samples = sorted(samples, key=lambda s: s[0]) + samples[:5]   # plus some out of order
    samples = [(T0 + t, m) for t, m in samples]
    a, b = AggregateContainerState(), AggregateContainerState()
    c, d = ContainerState(a), ContainerState(b)
    for t, m in samples:
        c.add_cpu_sample(m, t)
    d.add_cpu_samples(samples)
    assert a.cpu.equals(b.cpu) and (a.cpu.min_bucket, a.cpu.max_bucket) == (b.cpu.min_bucket, b.cpu.max_bucket)
    assert (a.first_sample_start, a.last_sample_start, a.total_samples_count) == \
        (b.first_sample_start, b.last_sample_start, b.total_samples_count)
    assert c.dropped == d.dropped


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 20 * 86400), st.sampled_from([0, 1, 10**8, 3 * 10**8, 10**9]) |
                          st.integers(0, 2 * 10**9)), max_size=120))
def test_bulk_memory_equals_one_by_one(samples):
    samples = sorted(samples, key=lambda s: s[0]) + samples[:5]
    samples = [(T0 + t, m) for t, m in samples]
    a, b = AggregateContainerState(), AggregateContainerState()
    c, d = ContainerState(a), ContainerState(b)
    for t, m in samples:
        c.add_memory_sample(m, t)
    d.add_memory_samples(samples)
    assert a.memory.equals(b.memory)
    assert (c.window_end, c.memory_peak, c.last_memory_sample_start, c.dropped) == \
        (d.window_end, d.memory_peak, d.last_memory_sample_start, d.dropped)


def test_cluster_vpa_registration_follows_aggregates():
    cl = ClusterState()
    cl.set_vpa("v", "ns", lambda labels: labels.get("app") == "web")
    cl.add_or_update_pod("ns", "web-1", {"app": "web", "pod-template-hash": "a"}, T0)
    cl.add_or_update_pod("ns", "web-2", {"app": "web", "pod-template-hash": "b"}, T0)
    cl.add_or_update_pod("ns", "db-1", {"app": "db"}, T0)
    cl.add_or_update_pod("other", "web-1", {"app": "web"}, T0)
    for ns, pod in (("ns", "web-1"), ("ns", "web-2"), ("ns", "db-1"), ("other", "web-1")):
        cl.container(ns, pod, "app", T0).add_cpu_sample(500, T0)
    merged = cl.vpa_aggregates("v")
    assert list(merged) == ["app"] and merged["app"].total_samples_count == 2
    # The same through a full scan.
    assert cl.aggregates_for("ns", lambda labels: labels.get("app") == "web")["app"].total_samples_count == 2
    # Merged copies: the live aggregates are untouched.
    merged["app"].add_cpu_sample(1, T0 + 5)
    assert sum(a.total_samples_count for a in cl.aggregates.values()) == 4
    # A selector change re-scans; a deletion forgets.
    cl.set_vpa("v", "ns", lambda labels: labels.get("app") == "db")
    assert cl.vpa_aggregates("v")["app"].total_samples_count == 1
    cl.delete_vpa("v")
    assert cl.vpa_aggregates("v") == {}


def test_cluster_gc_expires_after_the_window():
    cl = ClusterState()
    cl.container("ns", "p", "app", T0).add_cpu_sample(500, T0)
    cl.delete_pod("ns", "p")
    assert cl.garbage_collect(T0 + 7 * 86400) == 0
    assert cl.garbage_collect(T0 + 8 * 86400) == 1
    assert cl.aggregates == {}


def test_pod_label_change_moves_containers():
    cl = ClusterState()
    cl.add_or_update_pod("ns", "p", {"app": "a"}, T0)
    c = cl.container("ns", "p", "app", T0)
    old = c.aggregate
    cl.add_or_update_pod("ns", "p", {"app": "b"}, T0)
    assert c.aggregate is not old and ("ns", "app", (("app", "b"),)) in cl.aggregates


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 20 * 86400), st.floats(allow_nan=True, allow_infinity=True,
                                                                   min_value=None, max_value=None)), max_size=60))
def test_raw_cpu_points_equal_converted_samples(points):
    from promop.recommender.history import to_amounts

    points = [(T0 + t, v) for t, v in sorted(points, key=lambda p: p[0])]
    a, b = AggregateContainerState(), AggregateContainerState()
    ContainerState(a).add_cpu_samples(to_amounts(points, "cpu"))
    ContainerState(b).add_cpu_points(points)
    assert a.cpu.equals(b.cpu) and a.total_samples_count == b.total_samples_count


def test_shared_view_gives_the_same_numbers_and_copies_merges():
    from promop.vpa.recommend import recommend

    cl = ClusterState()
    cl.set_vpa("v", "ns", lambda labels: labels.get("app") == "web")
    for pod, labels in (("a", {"app": "web", "h": "1"}), ("b", {"app": "web", "h": "2"})):
        cl.add_or_update_pod("ns", pod, labels, T0)
    cl.container("ns", "a", "app", T0).add_cpu_samples([(T0 + 60 * i, 500) for i in range(100)])
    cl.container("ns", "a", "solo", T0).add_cpu_sample(200, T0)
    cl.container("ns", "b", "app", T0).add_cpu_samples([(T0 + 60 * i, 900) for i in range(100)])
    shared, copied = cl.vpa_aggregates("v", shared=True), cl.vpa_aggregates("v")
    live = set(map(id, cl.aggregates.values()))
    assert id(shared["solo"]) in live and id(copied["solo"]) not in live
    assert id(shared["app"]) not in live           # a merge is always into a copy
    assert {n: r.target for n, r in recommend(shared).items()} == {n: r.target for n, r in recommend(copied).items()}
    assert sum(a.total_samples_count for a in cl.aggregates.values()) == 201
