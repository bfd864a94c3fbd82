"""The client-side QPS/burst token bucket, on an injected clock."""

from __future__ import annotations

import threading
import time

import pytest

from promop.kube.client_ratelimit import TokenBucket


class Clock:
    def __init__(self):
        self.now = 50.0
        self.slept = []

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.slept.append(seconds)
        self.now += seconds


def test_burst_then_qps():
    clock = Clock()
    tb = TokenBucket(10, 3, clock=clock, sleep=clock.sleep)
    assert [tb.reserve() for _ in range(3)] == [0, 0, 0]
    # the 4th..6th calls are in debt: 0.1, 0.2, 0.3 s away
    assert [round(tb.reserve(), 6) for _ in range(3)] == [0.1, 0.2, 0.3]
    clock.now += 1.0
    # one second refills 10 tokens, which pays the 3 of debt and leaves 3 (capped at burst)
    assert tb.try_accept() and tb.try_accept() and tb.try_accept()
    assert not tb.try_accept()


def test_wait_sleeps_for_the_debt():
    clock = Clock()
    tb = TokenBucket(2, 1, clock=clock, sleep=clock.sleep)
    assert tb.wait() == 0
    assert tb.wait() == pytest.approx(0.5)
    assert clock.slept == [pytest.approx(0.5)]


def test_refill_is_capped_at_burst():
    clock = Clock()
    tb = TokenBucket(100, 5, clock=clock, sleep=clock.sleep)
    clock.now += 3600
    assert sum(tb.try_accept() for _ in range(10)) == 5


def test_disabled_when_qps_is_zero():
    tb = TokenBucket(0, 0)
    assert not tb.enabled
    assert all(tb.reserve() == 0 for _ in range(1000))


def test_bad_burst():
    with pytest.raises(ValueError, match="burst must be >= 1"):
        TokenBucket(5, 0)


def test_real_clock_limits_throughput_across_threads():
    tb = TokenBucket(100, 5)
    start = time.monotonic()

    def worker():
        for _ in range(10):
            tb.wait()

    threads = [threading.Thread(target=worker) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # 30 requests, 5 free, 25 at 100/s: at least 0.25 s
    assert time.monotonic() - start >= 0.24
