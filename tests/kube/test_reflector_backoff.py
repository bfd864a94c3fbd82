"""The reflector's backoff: 0.8 s doubling with jitter, capped at 30 s, reset after 2 healthy minutes."""

from __future__ import annotations

import pytest

from promop.kube.backoff import Backoff


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_doubles_to_the_cap_without_jitter():
    clock = Clock()
    b = Backoff(clock=clock, rng=lambda: 0.0)
    delays = [b.next_delay() for _ in range(8)]
    assert delays == pytest.approx([0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0])


def test_jitter_stays_between_d_and_2d_and_under_the_cap():
    b = Backoff(clock=Clock(), rng=lambda: 0.999)
    assert b.next_delay() == pytest.approx(0.8 * 1.999)
    assert b.next_delay() == pytest.approx(1.6 * 1.999)
    for _ in range(10):
        assert b.next_delay() <= 30.0


def test_resets_after_two_minutes_without_failure():
    clock = Clock()
    b = Backoff(clock=clock, rng=lambda: 0.0)
    for _ in range(5):
        b.next_delay()
    clock.now += 119
    assert b.next_delay() == pytest.approx(25.6)  # still inside the window
    clock.now += 120
    assert b.next_delay() == pytest.approx(0.8)
    assert b.failures == 1


def test_custom_timings_for_tests():
    b = Backoff(0.01, 0.05, clock=Clock(), rng=lambda: 0.0)
    assert [round(b.next_delay(), 3) for _ in range(5)] == [0.01, 0.02, 0.04, 0.05, 0.05]


def test_rejects_nonsense():
    with pytest.raises(ValueError, match="base <= cap"):
        Backoff(5, 1)
