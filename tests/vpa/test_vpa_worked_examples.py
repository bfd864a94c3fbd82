"""The worked examples V1-V8 of ../shared/reference/autoscaling.md §3.6, with the reference's numbers."""

from __future__ import annotations

import pytest

from promop.vpa.config import DEFAULT
from promop.vpa.histogram import CPU_OPTIONS, MEMORY_OPTIONS
from promop.vpa.recommend import confidence, estimate, min_resources, recommend
from promop.vpa.state import AggregateContainerState, ContainerState
from promop.vpa.amounts import MAX_RESOURCE_AMOUNT
from promop.vpa.timeutil import parse_time

T0 = parse_time("2026-01-01T00:00:00Z")
MI = 1 << 20
DAY = 86400


def fresh():
    a = AggregateContainerState()
    return a, ContainerState(a)


def test_bucket_counts():
    assert CPU_OPTIONS.num_buckets == 176
    assert MEMORY_OPTIONS.num_buckets == 176


def test_v1_half_core_sample():
    a, c = fresh()
    c.add_cpu_sample(500, T0)
    assert CPU_OPTIONS.find_bucket(0.5) == 25
    assert round(CPU_OPTIONS.bucket_start(25), 4) == 0.4773
    assert round(CPU_OPTIONS.bucket_start(26), 4) == 0.5111
    assert round(a.cpu.percentile(0.9), 5) == 0.51113
    rec = estimate(a, DEFAULT, min_resources(DEFAULT, 1), "app", trace=True)
    assert rec.steps["cpu"].base["target"] == 511


def test_v2_one_day_steady():
    a, c = fresh()
    for i in range(1440):
        c.add_cpu_sample(500, T0 + 60 * i)
    assert confidence(a) == 1439 / 1440
    rec = recommend({"app": a})["app"]
    assert rec.target["cpu"] == 587
    assert rec.lower_bound["cpu"] == 585
    assert rec.upper_bound["cpu"] == 1174


def test_v3_single_sample_no_confidence():
    a, c = fresh()
    c.add_cpu_sample(500, T0)
    rec = recommend({"app": a})["app"]
    assert rec.confidence == 0
    assert rec.target["cpu"] == 587
    assert rec.lower_bound["cpu"] == 25
    assert rec.upper_bound["cpu"] == MAX_RESOURCE_AMOUNT == 10**14
    assert rec.as_status()["upperBound"]["cpu"] == "100G"  # 1e14m


def test_v4_decay():
    a, c = fresh()
    c.add_cpu_sample(1000, T0)
    c.add_cpu_sample(200, T0 + 96 * 3600)
    w = a.cpu.weights
    assert w[CPU_OPTIONS.find_bucket(0.2)] / w[CPU_OPTIONS.find_bucket(1.0)] == 16
    assert a.cpu.percentile_bucket(0.9) == 14
    assert round(a.cpu.percentile(0.9), 5) == 0.21579
    # Without decay (both samples at one time): p90 lands in 1.0's bucket.
    b, d = fresh()
    b.cpu.add_sample(1.0, 0.1, T0)
    b.cpu.add_sample(0.2, 0.1, T0)
    assert round(b.cpu.percentile(0.9), 5) == 1.01628


@pytest.mark.parametrize("peaks,p90,target", [
    ([500] * 7 + [900], 958363227, 1102117711),   # V5: the newest peak weighs 2**7
    ([900] + [500] * 7, 546691264, 628694953),    # V5b: the oldest weighs 2**0
])
def test_v5_daily_peaks(peaks, p90, target):
    a, c = fresh()
    for day, mib in enumerate(peaks):
        c.add_memory_sample(mib * MI, T0 + day * DAY)
    c.add_cpu_sample(500, T0)
    w = a.memory.weights
    weights = {mib: w[MEMORY_OPTIONS.find_bucket(mib * MI)] for mib in (500, 900)}
    newest_first = peaks[0] == 500
    assert weights == ({500: 127.0, 900: 128.0} if newest_first else {500: 254.0, 900: 1.0})  # 2**0 .. 2**7
    assert int(a.memory.percentile(0.9)) == p90
    assert recommend({"app": a})["app"].target["memory"] == target


def test_v6_steady_600mib():
    a, c = fresh()
    for h in range(0, 24 * 8):
        c.add_memory_sample(600 * MI, T0 + h * 3600)
    c.add_cpu_sample(500, T0)
    assert MEMORY_OPTIONS.find_bucket(600 * MI) == 29
    assert int(a.memory.percentile(0.9)) == 664388475
    assert recommend({"app": a})["app"].target["memory"] == 764046746


@pytest.mark.parametrize("request_bytes,peak,needed", [
    (500 * MI, 300 * MI, 629145600),       # V7: both rules tie at 600 MiB
    (1 << 30, 300 * MI, 1288490188),       # V7b: x1.2 wins (truncated)
    (200 * MI, 0, 314572800),              # V7c: +100 MiB wins
])
def test_v7_oom_bump(request_bytes, peak, needed):
    a, c = fresh()
    if peak:
        c.add_memory_sample(peak, T0)
    assert c.oom_sample(request_bytes) == needed
    assert c.record_oom(T0 + 60, request_bytes)
    assert c.oom_peak == needed
    # The bumped sample is the interval's peak now.
    assert MEMORY_OPTIONS.find_bucket(needed) == a.memory.max_bucket


def test_v7_oom_ignores_previous_oom_peak():
    a, c = fresh()
    c.record_oom(T0, 500 * MI)
    assert c.oom_sample(500 * MI) == 629145600  # not bumped from the first OOM's 600 MiB


def test_stale_oom_cutoff_is_last_memory_sample_minus_interval():
    """§3.3: the OOM sample is added "unless the event is older than `lastMemorySampleStart − interval`".
    The first memory sample at T0 opens the interval [T0, T0+24h); the last one is at T0+20h, so the
    cutoff is T0+20h−24h = T0−4h. (The current interval's start, T0, would drop every OOM below.)"""
    interval = DEFAULT.memory_aggregation_interval
    assert interval == DAY
    for oom_at, kept in ((T0 - 2 * 3600, True),              # after the cutoff, before the interval's start
                         (T0 - 4 * 3600, True),              # at the cutoff: not older than it
                         (T0 - 4 * 3600 - 1, False)):        # older than the cutoff: dropped
        a, c = fresh()
        c.add_memory_sample(300 * MI, T0)
        c.add_memory_sample(310 * MI, T0 + 20 * 3600)
        assert c.window_end == T0 + DAY and c.last_memory_sample_start == T0 + 20 * 3600
        assert c.record_oom(oom_at, 500 * MI) is kept
        assert c.dropped["oom"] == (0 if kept else 1)
        # A kept OOM is always processed: 600 MiB (V7) becomes the interval's peak.
        assert c.oom_peak == (629145600 if kept else 0)
        assert MEMORY_OPTIONS.find_bucket(629145600 if kept else 310 * MI) == a.memory.max_bucket


def test_v8_two_containers_floors():
    assert min_resources(DEFAULT, 2) == {"cpu": 12, "memory": 131072000}
    states = {}
    for name in ("a", "b"):
        s, c = fresh()
        c.add_cpu_sample(1, T0)
        states[name] = s
    recs = recommend(states)
    assert recs["a"].target == {"cpu": 12, "memory": 131072000}
    assert recs["b"].lower_bound == {"cpu": 12, "memory": 131072000}


def test_multiplier_table():
    """The multipliers of §3.4 for a steady one-sample-per-minute history."""
    from promop.vpa.recommend import confidence_factor
    table = [(5, None, 0.54), (30, None, 0.91), (60, None, 0.95), (720, 3.00, 0.996), (1440, 2.0007, 0.998),
             (7 * 1440, 1.143, 0.9997)]
    for minutes, upper, lower in table:
        a, c = fresh()
        for i in range(minutes):
            c.add_cpu_sample(500, T0 + 60 * i)
        conf = confidence(a)
        if upper is not None:
            assert abs(confidence_factor(1.0, 1.0, conf) - upper) < 0.001 * upper, minutes
        assert abs(confidence_factor(0.001, -2.0, conf) - lower) < 0.011, minutes
