"""Many producers and workers: no key is processed by two workers at once, and
every key's last change is seen by a run that started after it."""

from __future__ import annotations

import random
import threading
import time

from promop.kube.workqueue import ItemExponentialFailureRateLimiter, RateLimitingQueue

KEYS = [f"ns/obj-{n}" for n in range(40)]
PRODUCERS, WORKERS, ADDS_PER_PRODUCER = 6, 8, 1500
JOIN_DEADLINE = 60.0


def run_workers(q, handle, workers: int) -> list[threading.Thread]:
    def loop() -> None:
        while True:
            key, shutdown = q.get()
            if shutdown:
                return
            try:
                handle(key)
            finally:
                q.done(key)

    threads = [threading.Thread(target=loop, daemon=True) for _ in range(workers)]
    for thread in threads:
        thread.start()
    return threads


def test_no_concurrent_processing_and_no_lost_change():
    q = RateLimitingQueue(ItemExponentialFailureRateLimiter(0.0001, 0.002), name=None)
    state_lock = threading.Lock()
    latest: dict[str, int] = {}  # the "object version" producers write
    seen: dict[str, int] = {}  # the last version a worker saw
    active: set[str] = set()
    overlaps: list[str] = []
    runs = [0]
    failures_left = [300]

    def handle(key: str) -> None:
        with state_lock:
            if key in active:
                overlaps.append(key)
            active.add(key)
            runs[0] += 1
            version = latest[key]
            fail = failures_left[0] > 0 and random.random() < 0.2
            if fail:
                failures_left[0] -= 1
        if random.random() < 0.1:
            threading.Event().wait(0.0002)  # widen the window for overlaps
        with state_lock:
            active.discard(key)
            if not fail:
                seen[key] = max(seen.get(key, 0), version)
        if fail:
            q.add_rate_limited(key)
        else:
            q.forget(key)

    def produce(seed: int) -> None:
        rng = random.Random(seed)
        for _ in range(ADDS_PER_PRODUCER):
            key = rng.choice(KEYS)
            with state_lock:
                latest[key] = latest.get(key, 0) + 1
            if rng.random() < 0.1:
                q.add_after(key, rng.random() * 0.002)
            else:
                q.add(key)

    workers = run_workers(q, handle, WORKERS)
    producers = [threading.Thread(target=produce, args=(seed,)) for seed in range(PRODUCERS)]
    for thread in producers:
        thread.start()
    for thread in producers:
        thread.join(JOIN_DEADLINE)

    # Wait until every key's latest version was processed, then drain and stop.
    done = threading.Event()

    def converged() -> bool:
        with state_lock:
            return all(seen.get(key) == version for key, version in latest.items())

    deadline = threading.Event()
    timer = threading.Timer(JOIN_DEADLINE, deadline.set)
    timer.start()
    try:
        while not converged():
            assert not deadline.is_set(), f"lost changes: {sorted(k for k in latest if seen.get(k) != latest[k])}"
            done.wait(0.005)
    finally:
        timer.cancel()
    q.shutdown_with_drain()
    for thread in workers:
        thread.join(JOIN_DEADLINE)
        assert not thread.is_alive()

    assert overlaps == [], f"keys processed by two workers at once: {overlaps[:10]}"
    assert runs[0] < PRODUCERS * ADDS_PER_PRODUCER + 300, "adds were not coalesced"
    assert q.processing() == 0


def test_each_add_before_get_is_delivered_once_under_contention():
    q = RateLimitingQueue(name=None)
    items = [f"item-{n}" for n in range(5000)]
    got: list[str] = []
    lock = threading.Lock()

    def handle(key: str) -> None:
        with lock:
            got.append(key)

    workers = run_workers(q, handle, 8)
    chunks = [items[i::4] for i in range(4)]
    producers = [threading.Thread(target=lambda c=c: [q.add(x) for x in c]) for c in chunks]
    for thread in producers:
        thread.start()
    for thread in producers:
        thread.join(JOIN_DEADLINE)
    q.shutdown_with_drain()
    for thread in workers:
        thread.join(JOIN_DEADLINE)
    # unique items, each added once and never re-added: each is processed exactly once
    # (shutdown keeps handing out the backlog, so nothing is lost)
    assert sorted(got) == sorted(items)


def test_delayed_items_reach_many_waiting_getters_on_time():
    q = RateLimitingQueue(name=None)
    got: dict[str, float] = {}
    lock = threading.Lock()

    def handle(key: str) -> None:
        with lock:
            got[key] = time.monotonic()

    workers = run_workers(q, handle, 6)
    rng = random.Random(7)
    due: dict[str, float] = {}
    for n in range(60):
        delay = rng.random() * 0.05
        key = f"k{n}"
        due[key] = time.monotonic() + delay
        q.add_after(key, delay)
    deadline = time.monotonic() + JOIN_DEADLINE
    while len(got) < len(due):
        assert time.monotonic() < deadline, f"never delivered: {sorted(set(due) - set(got))[:5]}"
        threading.Event().wait(0.005)
    q.shutdown()
    for thread in workers:
        thread.join(JOIN_DEADLINE)
    assert all(got[key] >= due[key] for key in due), "an item was handed out before its time"
    # generous on a loaded 2-core machine; a lost wake-up would wait for the 10 s heartbeat
    late = max(got[key] - due[key] for key in due)
    assert late < 5.0, f"an item was handed out {late:.2f} s late"
