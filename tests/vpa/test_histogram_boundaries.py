"""Histogram edges (../shared/reference/autoscaling.md §3.2, upstream util/histogram.go).

Percentile walks buckets "accumulating weight until the sum *reaches* p x total": a running sum
exactly equal to the threshold stops in that bucket. The returned value is the end of that bucket,
except in the last bucket, which has no end. A value exactly at a bucket's start belongs to it.
"""

from __future__ import annotations

import pytest

from promop.vpa.histogram import CPU_OPTIONS, MEMORY_OPTIONS, DecayingHistogram, Histogram

DAY = 86400.0


def cpu_histogram(*samples: tuple[float, float]) -> Histogram:
    h = Histogram(CPU_OPTIONS)
    for value, weight in samples:
        h.add_sample(value, weight)
    return h


def end_of(value: float) -> float:
    return CPU_OPTIONS.bucket_start(CPU_OPTIONS.find_bucket(value) + 1)


def test_running_sum_equal_to_the_threshold_stops_in_that_bucket():
    h = cpu_histogram((0.5, 1.0), (1.0, 1.0))
    assert h.percentile(0.5) == end_of(0.5)
    assert h.percentile_bucket(0.5) == CPU_OPTIONS.find_bucket(0.5)
    assert h.percentile(0.5000001) == end_of(1.0)


def test_exact_boundary_over_several_buckets():
    # weights 1, 2, 1 (total 4): p=0.25 -> threshold 1 reached in the first bucket,
    # p=0.75 -> threshold 3 reached exactly at the end of the second.
    h = cpu_histogram((0.1, 1.0), (0.2, 2.0), (0.4, 1.0))
    assert h.percentile(0.25) == end_of(0.1)
    assert h.percentile(0.75) == end_of(0.2)
    assert h.percentile(1.0) == end_of(0.4)


def test_decaying_histogram_stops_at_the_exact_boundary_too():
    h = DecayingHistogram(CPU_OPTIONS, DAY)
    h.add_sample(0.5, 1.0, 0.0)
    h.add_sample(1.0, 1.0, 0.0)
    assert h.percentile(0.5) == end_of(0.5)


def test_zero_percentile_is_the_end_of_the_lowest_bucket():
    h = cpu_histogram((0.3, 1.0), (2.0, 5.0))
    assert h.percentile(0.0) == end_of(0.3)


def test_last_bucket_returns_its_start_and_the_one_before_its_end():
    last = CPU_OPTIONS.num_buckets - 1
    assert CPU_OPTIONS.find_bucket(5000.0) == last  # beyond max: capped at the last bucket
    one_past = 0.01 * (1.05 ** (last + 1.5) - 1) / 0.05  # would be bucket num_buckets
    assert CPU_OPTIONS.find_bucket(one_past) == last
    assert cpu_histogram((5000.0, 1.0)).percentile(0.9) == CPU_OPTIONS.bucket_start(last)
    before_last = CPU_OPTIONS.bucket_start(last - 1)
    assert cpu_histogram((before_last, 1.0)).percentile(0.9) == CPU_OPTIONS.bucket_start(last)


def test_value_at_a_bucket_start_belongs_to_that_bucket():
    assert CPU_OPTIONS.find_bucket(0.0099) == 0
    assert CPU_OPTIONS.find_bucket(0.01) == 1       # first bucket size: the start of bucket 1
    assert MEMORY_OPTIONS.find_bucket(1e7) == 1
    assert CPU_OPTIONS.find_bucket(CPU_OPTIONS.bucket_start(1)) == 1


@pytest.mark.parametrize("weight_factor,empty", [(1.0, False), (0.5, True)])
def test_empty_means_lowest_bucket_below_epsilon(weight_factor, empty):
    eps = CPU_OPTIONS.epsilon
    h = cpu_histogram((0.5, eps * weight_factor))
    assert h.is_empty() is empty
    assert (h.percentile(0.5) == 0.0) is empty


def test_scaling_prunes_a_bucket_only_below_epsilon():
    eps = CPU_OPTIONS.epsilon
    h = cpu_histogram((0.1, 2 * eps), (0.5, 1.0))
    h.scale(0.5)                      # 0.1's bucket lands exactly on epsilon: kept
    assert h.min_bucket == CPU_OPTIONS.find_bucket(0.1)
    h.scale(0.5)                      # now below: pruned, the lowest non-empty bucket moves up
    assert h.min_bucket == CPU_OPTIONS.find_bucket(0.5)
    assert h.percentile(0.0) == end_of(0.5)


def test_subtracting_to_under_epsilon_empties_the_bucket():
    h = cpu_histogram((0.1, 1.0), (0.5, 1.0))
    h.subtract_sample(0.1, 1.0 - CPU_OPTIONS.epsilon / 2)
    assert h.min_bucket == CPU_OPTIONS.find_bucket(0.5)
    assert h.percentile(0.0) == end_of(0.5)
    # the remainder was dropped, not kept: a small later sample does not revive the bucket
    h.add_sample(0.1, 0.6 * CPU_OPTIONS.epsilon)
    assert h.min_bucket == CPU_OPTIONS.find_bucket(0.5)
