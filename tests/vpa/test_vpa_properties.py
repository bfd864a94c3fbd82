"""Property tests of the model: bucket boundaries, percentile monotonicity, checkpoint round trip, decay shifts."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from promop.vpa.histogram import CPU_OPTIONS, MEMORY_OPTIONS, DecayingHistogram, Histogram
from promop.vpa.state import AggregateContainerState, ContainerState
from promop.vpa.timeutil import go_round, parse_time

T0 = parse_time("2026-01-01T00:00:00Z")
OPTIONS = st.sampled_from([CPU_OPTIONS, MEMORY_OPTIONS])


@given(OPTIONS, st.integers(min_value=1, max_value=174))
def test_bucket_start_belongs_to_its_bucket(options, b):
    start = options.bucket_start(b)
    nxt = options.bucket_start(b + 1)
    # A value well inside [start, next) maps to b; the boundaries sit on log rounding, so look inside by 1e-9.
    assert options.find_bucket(start * (1 + 1e-9)) == b
    assert options.find_bucket(nxt * (1 - 1e-9)) == b
    assert start < nxt


@given(OPTIONS, st.floats(min_value=0, max_value=1e13, allow_nan=False))
def test_value_lies_in_found_bucket(options, v):
    b = options.find_bucket(v)
    assert 0 <= b < options.num_buckets
    lo = options.bucket_start(b)
    assert lo <= v * (1 + 1e-12) or b == 0
    if b < options.num_buckets - 1:
        assert v < options.bucket_start(b + 1) * (1 + 1e-12)


def test_small_and_huge_values():
    assert CPU_OPTIONS.find_bucket(0.0) == 0
    assert CPU_OPTIONS.find_bucket(0.009) == 0
    assert CPU_OPTIONS.find_bucket(0.01) == 1
    assert CPU_OPTIONS.find_bucket(1e9) == 175
    assert CPU_OPTIONS.bucket_start(0) == 0.0


samples = st.lists(st.tuples(st.floats(min_value=0, max_value=50), st.floats(min_value=0.01, max_value=10)),
                   min_size=1, max_size=40)


@given(samples, st.lists(st.floats(min_value=0, max_value=1), min_size=2, max_size=6))
def test_percentile_monotonic_in_p(ss, ps):
    h = Histogram(CPU_OPTIONS)
    for v, w in ss:
        h.add_sample(v, w)
    ps = sorted(ps)
    vals = [h.percentile(p) for p in ps]
    assert vals == sorted(vals)
    # And equal to the plain walk upstream does.
    for p, v in zip(ps, vals):
        assert v == _walk(h, p)


def _walk(h: Histogram, p: float) -> float:
    if h.is_empty():
        return 0.0
    partial, threshold, b = 0.0, p * h.total_weight, h.min_bucket
    while b < h.max_bucket:
        partial += h.weights[b]
        if partial >= threshold:
            break
        b += 1
    return h.options.bucket_start(b + 1) if b < h.options.num_buckets - 1 else h.options.bucket_start(b)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 8 * 24), st.integers(1, 40000)), min_size=1, max_size=40),
       st.floats(min_value=0.05, max_value=1.0))
def test_checkpoint_round_trip_within_one_bucket(samples, p):
    """Within the 8-day window (weights within 2**8 of each other per sample, so no bucket rounds to 0
    against the largest's 10000), a restored percentile is at most one bucket off."""
    a = AggregateContainerState()
    c = ContainerState(a)
    for hour, milli in sorted(samples):
        c.add_cpu_sample(milli, T0 + hour * 3600)
        c.add_memory_sample(milli * 100_000, T0 + hour * 3600)
    saved = a.save()
    b = AggregateContainerState.from_checkpoint(saved)
    for ha, hb in ((a.cpu, b.cpu), (a.memory, b.memory)):
        assert hb.reference_time == ha.reference_time
        assert math.isclose(hb.total_weight, ha.total_weight)
        ia = ha.options.find_bucket(ha.percentile(p) * 0.999999)
        ib = hb.options.find_bucket(hb.percentile(p) * 0.999999)
        assert abs(ia - ib) <= 1, (ia, ib)
    assert b.total_samples_count == a.total_samples_count
    assert b.first_sample_start == a.first_sample_start and b.last_sample_start == a.last_sample_start


def test_checkpoint_refuses_other_versions_and_fixes_min_bucket():
    import pytest

    with pytest.raises(ValueError, match="v2"):
        AggregateContainerState.from_checkpoint({"version": "v2"})
    # #7726: the min bucket is recomputed on load, so a tiny bucket below epsilon does not zero the percentile.
    status = {"version": "v3", "cpuHistogram": {"bucketWeights": {"3": 0, "25": 10000}, "totalWeight": 2.0},
              "memoryHistogram": {"bucketWeights": {"10": 1, "29": 10000}, "totalWeight": 1e-3}}
    a = AggregateContainerState.from_checkpoint(status)
    assert a.memory.min_bucket == 29 and a.memory.percentile(0.5) > 0
    assert a.cpu.percentile(0.9) == CPU_OPTIONS.bucket_start(26)


def test_checkpoint_weights_scaled_to_10000():
    h = DecayingHistogram(CPU_OPTIONS, 86400)
    h.add_sample(0.5, 0.3, T0)
    h.add_sample(1.0, 0.1, T0)
    saved = h.save()
    assert saved["bucketWeights"] == {"25": 10000, str(CPU_OPTIONS.find_bucket(1.0)): 3333}  # 0.1/0.3 rounded
    assert saved["totalWeight"] == h.total_weight
    assert saved["referenceTimestamp"] == "2026-01-01T00:00:00Z"


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 8 * 24), st.floats(min_value=0.01, max_value=100)), min_size=1,
                max_size=30),
       st.integers(-3 * 24, 3 * 24))
def test_decay_invariant_under_reference_time_shifts(samples, shift_hours):
    """Another reference time rescales every weight by a power of two: the same percentiles, exactly.

    (Within 11 half-lives, so that no weight of 1.0 falls under epsilon in either histogram.)
    """
    samples = sorted(samples)
    a = DecayingHistogram(CPU_OPTIONS, 86400)
    b = DecayingHistogram(CPU_OPTIONS, 86400)
    b.shift_reference_time(T0 + shift_hours * 3600)
    for hour, v in samples:
        a.add_sample(v, 1.0, T0 + hour * 3600)
        b.add_sample(v, 1.0, T0 + hour * 3600)
    for p in (0.1, 0.5, 0.9, 0.95, 1.0):
        assert a.percentile(p) == b.percentile(p)


def test_reference_shift_after_100_half_lives_prunes():
    h = DecayingHistogram(CPU_OPTIONS, 86400)
    h.add_sample(0.5, 0.1, T0)
    assert h.reference_time == T0
    h.add_sample(2.0, 0.1, T0 + 101 * 86400)   # shifts: the old sample now weighs 0.1 * 2**-101 < epsilon
    assert h.reference_time == T0 + 101 * 86400
    assert h.weights[CPU_OPTIONS.find_bucket(0.5)] == 0.0
    assert h.min_bucket == h.max_bucket == CPU_OPTIONS.find_bucket(2.0)


def test_go_round_halves_up():
    assert go_round(T0 + 12 * 3600, 86400) == T0 + 86400
    assert go_round(T0 + 12 * 3600 - 1, 86400) == T0


def test_memory_peak_replaced_within_interval_and_new_interval():
    a = AggregateContainerState()
    c = ContainerState(a)
    mi = 1 << 20
    c.add_memory_sample(300 * mi, T0)
    c.add_memory_sample(400 * mi, T0 + 3600)          # same interval: 300 replaced by 400
    c.add_memory_sample(350 * mi, T0 + 7200)          # lower: ignored
    assert a.memory.weights[MEMORY_OPTIONS.find_bucket(300 * mi)] == 0
    w400 = a.memory.weights[MEMORY_OPTIONS.find_bucket(400 * mi)]
    assert w400 > 0
    assert c.window_end == T0 + 86400
    c.add_memory_sample(100 * mi, T0 + 3 * 86400 + 5)  # skips two empty intervals
    assert c.window_end == T0 + 4 * 86400
    assert not c.add_memory_sample(500 * mi, T0)        # older than the last memory sample: dropped
    assert not c.record_oom(T0 + 2 * 86400, 500 * mi)   # older than the last memory sample - 24h: dropped


SCAN_VALUES = (0.0, 0.0, 0.0, 5e-5, 1e-4, 0.5, float("nan"))
# 176 weights drawn as 176 bytes, one draw instead of 176 element draws (which cost about ten times as
# much): the same values (byte % 7; the first 256 % 7 = 4 byte values a hair likelier) and shrinking
# still goes towards the all-zero histogram.
scan_weights = st.binary(min_size=176, max_size=176).map(lambda raw: [SCAN_VALUES[x % 7] for x in raw])


@settings(max_examples=300, deadline=None)
@given(scan_weights, st.integers(0, 175), st.integers(0, 175))
def test_min_max_scan_is_upstreams_loop(weights, lo, hi):
    h = Histogram(CPU_OPTIONS)
    h.weights, h.min_bucket, h.max_bucket = list(weights), lo, hi
    h._update_min_max()
    eps, last = CPU_OPTIONS.epsilon, CPU_OPTIONS.num_buckets - 1
    while weights[lo] < eps and lo < last:
        lo += 1
    while weights[hi] < eps and hi > 0:
        hi -= 1
    assert (h.min_bucket, h.max_bucket) == (lo, hi)
