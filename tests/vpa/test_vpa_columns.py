"""The columnar intake paths (whole-sequence passes, used for Prometheus history) leave the model exactly as
the one-sample-at-a-time paths do: same weights bit for bit, bounds, totals, sample times and counters."""

from __future__ import annotations

from array import array

from hypothesis import given, settings
from hypothesis import strategies as st

from promop.vpa.histogram import CPU_OPTIONS, MEMORY_OPTIONS, DecayingHistogram
from promop.vpa.state import AggregateContainerState, ContainerState
from promop.vpa.timeutil import parse_time

T0 = parse_time("2026-01-01T00:00:00Z")
DAY = 86400

# Values around the bucket edges: below the first bucket's size, negative, zero, beyond the last bucket.
CPU_VALUES = st.sampled_from([0.0, -0.5, 0.0099999, 0.01, 0.5, 1000.0, 5000.0]) | \
    st.floats(min_value=-1.0, max_value=2000.0, allow_nan=False)
MEM_VALUES = st.sampled_from([0, 1, 10**7 - 1, 10**7, 5 * 10**8, 10**12, 10**13]) | st.integers(0, 2 * 10**12)


def hist_state(h: DecayingHistogram) -> tuple:
    return (h.weights, h.total_weight, h.min_bucket, h.max_bucket, h.reference_time)


@settings(max_examples=150, deadline=None)
@given(st.sampled_from([(CPU_OPTIONS, CPU_VALUES), (MEMORY_OPTIONS, MEM_VALUES)]).flatmap(
    lambda ov: st.tuples(st.just(ov[0]), st.lists(st.tuples(st.integers(0, 400 * DAY), ov[1]), max_size=80))),
    st.lists(st.tuples(st.integers(0, 400 * DAY), st.floats(0, 50)), max_size=4))
def test_ordered_add_samples_equals_one_by_one(options_points, before):
    """Times spanning 400 days force reference-time shifts (every 100 half-lives) in mid-sequence."""
    options, points = options_points
    points = sorted(points, key=lambda p: p[0])
    values, times = [float(v) for _, v in points], [T0 + t for t, _ in points]
    a, b = DecayingHistogram(options, DAY), DecayingHistogram(options, DAY)
    for t, v in before:  # some history first, so that epsilon pruning has something to prune
        a.add_sample(v, 0.1, T0 + t)
        b.add_sample(v, 0.1, T0 + t)
    for v, t in zip(values, times):
        a.add_sample(v, 0.1, t)
    b.add_samples(values, array("d", times), 0.1)
    assert hist_state(a) == hist_state(b)


@settings(max_examples=150, deadline=None)
@given(st.sampled_from([(CPU_OPTIONS, CPU_VALUES), (MEMORY_OPTIONS, MEM_VALUES)]).flatmap(
    lambda ov: st.lists(st.tuples(st.integers(0, 400 * DAY), ov[1], ov[1]), min_size=1, max_size=12)))
def test_replace_run_equals_subtract_then_add(steps):
    """Peaks raised in runs; one run shifts the reference time (more than 100 half-lives later)."""
    options = CPU_OPTIONS if isinstance(steps[0][1], float) else MEMORY_OPTIONS
    a, b = DecayingHistogram(options, DAY), DecayingHistogram(options, DAY)
    for t, old, new in steps:
        run = [float(old), float(new), float(old), float(new) * 3]
        a.add_sample(run[0], 1.0, T0 + t)
        b.add_sample(run[0], 1.0, T0 + t)
        for prev, v in zip(run, run[1:]):
            a.subtract_sample(prev, 1.0, T0 + t + 5)
            a.add_sample(v, 1.0, T0 + t + 5)
        b.replace_run(run, 1.0, T0 + t + 5)
        assert hist_state(a) == hist_state(b)


CORES = st.sampled_from([float("nan"), float("inf"), -1.0, 0.0, 1e12]) | st.floats(0, 64, allow_nan=False)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 20 * DAY), CORES), max_size=60), st.booleans(), st.integers(-DAY, DAY))
def test_cpu_columns_equal_points(points, in_order, prior):
    """NaN, infinite, negative or too large values, times out of order or before the last sample: the
    columns take the point-by-point path and give what it gives; the usual history takes the fast one."""
    if in_order:
        points = sorted(points, key=lambda p: p[0])
    a, b = AggregateContainerState(), AggregateContainerState()
    c, d = ContainerState(a), ContainerState(b)
    c.add_cpu_sample(100, T0 + prior)
    d.add_cpu_sample(100, T0 + prior)
    c.add_cpu_points([(T0 + t, v) for t, v in points])
    d.add_cpu_usage(array("d", [T0 + t for t, _ in points]), array("d", [v for _, v in points]))
    assert hist_state(a.cpu) == hist_state(b.cpu)
    assert (a.first_sample_start, a.last_sample_start, a.total_samples_count) == \
        (b.first_sample_start, b.last_sample_start, b.total_samples_count)
    assert (c.last_cpu_sample_start, c.dropped) == (d.last_cpu_sample_start, d.dropped)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 12 * DAY), st.sampled_from([0, 3 * 10**8, 5 * 10**8]) |
                          st.integers(0, 2 * 10**9)), max_size=100),
       st.booleans(), st.sampled_from([None, 0, 4 * 10**8]), st.integers(-DAY, 2 * DAY))
def test_memory_columns_equal_one_by_one(samples, in_order, oom_request, prior):
    """Intervals opening and closing, peaks raised several times, zero peaks (never replaced), an OOM
    peak in the current interval, samples before the last one."""
    if in_order:
        samples = sorted(samples, key=lambda s: s[0])
    a, b = AggregateContainerState(), AggregateContainerState()
    c, d = ContainerState(a), ContainerState(b)
    for s in (c, d):
        s.add_memory_sample(2 * 10**8, T0 + prior)
        if oom_request is not None:
            s.record_oom(T0 + prior + 60, oom_request)
    for t, m in samples:
        c.add_memory_sample(m, T0 + t)
    n = d.add_memory_usage(array("d", [T0 + t for t, _ in samples]), [m for _, m in samples])
    assert hist_state(a.memory) == hist_state(b.memory)
    assert (c.window_end, c.memory_peak, c.oom_peak, c.last_memory_sample_start, c.dropped) == \
        (d.window_end, d.memory_peak, d.oom_peak, d.last_memory_sample_start, d.dropped)
    assert n == len(samples) - c.dropped["memory"]


def test_history_shaped_columns_take_the_fast_paths_and_match():
    """Eight days hourly, as the history loader reads them: the same recommendation either way."""
    from promop.vpa.recommend import recommend

    times = array("d", [T0 + 3600 * h for h in range(8 * 24 + 1)])
    cores = array("d", [0.2 + 0.1 * ((h * 7) % 5) for h in range(len(times))])
    mem = [300 * 2**20 + 2**20 * ((h * 11) % 13) for h in range(len(times))]
    a, b = AggregateContainerState(), AggregateContainerState()
    c, d = ContainerState(a), ContainerState(b)
    for t, v, m in zip(times, cores, mem):
        c.add_cpu_points([(t, v)])
        c.add_memory_sample(m, t)
    d.add_cpu_usage(times, cores)
    d.add_memory_usage(times, mem)
    assert hist_state(a.cpu) == hist_state(b.cpu) and hist_state(a.memory) == hist_state(b.memory)
    ra, rb = recommend({"app": a})["app"], recommend({"app": b})["app"]
    assert (ra.target, ra.lower_bound, ra.upper_bound) == (rb.target, rb.lower_bound, rb.upper_bound)
