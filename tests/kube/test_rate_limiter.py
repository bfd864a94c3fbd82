"""Exact delay sequences of the retry rate limiters (client-go default_rate_limiters)."""

from __future__ import annotations

import pytest

from promop.kube.workqueue import (
    BucketRateLimiter,
    FakeClock,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    RateLimitingQueue,
    default_controller_rate_limiter,
)


def test_exponential_sequence_5ms_to_1000s():
    limiter = ItemExponentialFailureRateLimiter()
    delays = [limiter.when("a") for _ in range(20)]
    expected = [0.005 * 2**n for n in range(18)] + [1000.0, 1000.0]
    assert delays == pytest.approx(expected, rel=1e-12)
    assert delays[:3] == pytest.approx([0.005, 0.010, 0.020])
    assert delays[17] == pytest.approx(655.36), "the 18th call"
    assert limiter.num_requeues("a") == 20


def test_exponential_is_per_item_and_forget_resets():
    limiter = ItemExponentialFailureRateLimiter(0.001, 1.0)
    assert [limiter.when("a") for _ in range(3)] == pytest.approx([0.001, 0.002, 0.004])
    assert limiter.when("b") == pytest.approx(0.001)
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0
    assert limiter.when("a") == pytest.approx(0.001)
    assert limiter.num_requeues("b") == 1


def test_exponential_never_overflows():
    limiter = ItemExponentialFailureRateLimiter(0.005, 1000.0)
    for _ in range(2000):
        delay = limiter.when("a")
    assert delay == 1000.0


@pytest.mark.parametrize("base,cap", [(0, 1), (1, 0), (-1, 1)])
def test_exponential_rejects_non_positive_settings(base, cap):
    with pytest.raises(ValueError, match="must be positive"):
        ItemExponentialFailureRateLimiter(base, cap)


def test_bucket_burst_then_debt_accumulates():
    clock = FakeClock()
    limiter = BucketRateLimiter(qps=10, burst=100, clock=clock)
    assert [limiter.when(f"i{n}") for n in range(100)] == [0.0] * 100
    # every further call takes a token it has to wait for: 100 ms, 200 ms, ...
    assert [limiter.when("x") for _ in range(5)] == pytest.approx([0.1, 0.2, 0.3, 0.4, 0.5])
    assert limiter.num_requeues("x") == 0
    limiter.forget("x")  # no effect on the bucket
    assert limiter.when("y") == pytest.approx(0.6)


def test_bucket_refills_at_qps_up_to_burst():
    clock = FakeClock()
    limiter = BucketRateLimiter(qps=10, burst=100, clock=clock)
    for n in range(103):  # 3 tokens in debt
        limiter.when(n)
    clock.advance(0.5)  # +5 tokens: 2 available
    assert [limiter.when("a") for _ in range(3)] == pytest.approx([0.0, 0.0, 0.1])
    clock.advance(3600)  # refills only up to the burst
    assert [limiter.when(n) for n in range(100)] == [0.0] * 100
    assert limiter.when("z") == pytest.approx(0.1)


def test_bucket_rejects_bad_settings():
    with pytest.raises(ValueError, match="qps"):
        BucketRateLimiter(qps=0)
    with pytest.raises(ValueError, match="burst"):
        BucketRateLimiter(burst=0)


def test_max_of_advances_every_limiter_and_returns_the_longest():
    clock = FakeClock()
    exponential = ItemExponentialFailureRateLimiter(0.005, 1000.0)
    bucket = BucketRateLimiter(qps=1, burst=2, clock=clock)
    limiter = MaxOfRateLimiter(exponential, bucket)
    # bucket: 0, 0, 1, 2, 3; exponential: 5, 10, 20, 40, 80 ms
    assert [limiter.when("a") for _ in range(5)] == pytest.approx([0.005, 0.01, 1.0, 2.0, 3.0])
    assert exponential.num_requeues("a") == 5, "the exponential limiter advanced on every call"
    assert limiter.num_requeues("a") == 5
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0
    # the bucket's debt is not forgotten
    assert limiter.when("a") == pytest.approx(4.0)


def test_max_of_needs_a_limiter():
    with pytest.raises(ValueError, match="at least one"):
        MaxOfRateLimiter()


def test_default_controller_rate_limiter_sequence():
    clock = FakeClock()
    limiter = default_controller_rate_limiter(clock=clock)
    assert [limiter.when("a") for _ in range(3)] == pytest.approx([0.005, 0.01, 0.02])
    for n in range(97):
        limiter.when(n)  # drains the rest of the burst of 100
    # exponential for 'b' says 5 ms; the bucket's 100 ms wins
    assert limiter.when("b") == pytest.approx(0.1)
    assert limiter.num_requeues("a") == 3


def test_rate_limiting_queue_requeues_with_backoff_and_forget():
    clock = FakeClock()
    q = RateLimitingQueue(name=None, clock=clock)
    q.add("key")
    key, _ = q.get()
    q.add_rate_limited(key)
    q.done(key)
    assert q.num_requeues("key") == 1
    clock.advance(0.004)
    assert q.get(timeout=0) == (None, False)
    clock.advance(0.001)
    key, _ = q.get(timeout=0)
    assert key == "key"
    q.add_rate_limited(key)  # second failure: 10 ms
    q.done(key)
    clock.advance(0.009)
    assert len(q) == 0
    clock.advance(0.001)
    assert len(q) == 1
    key, _ = q.get()
    q.forget(key)
    q.done(key)
    assert q.num_requeues("key") == 0


def test_rate_limiting_queue_uses_given_limiter():
    clock = FakeClock()
    q = RateLimitingQueue(ItemExponentialFailureRateLimiter(1.0, 8.0), name=None, clock=clock)
    for _ in range(3):
        q.add_rate_limited("a")  # 1, 2, 4 s: the earliest (1 s) wins
    clock.advance(1.0)
    assert q.get(timeout=0) == ("a", False)
