"""Workqueue throughput against Python's queue.Queue, measured side by side.

    python3 -m bench.workqueue [--items N] [--rounds R]

One op is one item through the queue: add + get + done for the workqueue,
put + get for queue.Queue. Two shapes: a single thread (pure overhead), and
one producer with one consumer thread (lock hand-over). Rounds alternate
between the contenders and the best round counts, so a noisy shared machine
hurts both sides alike.
"""

from __future__ import annotations

import argparse
import queue as stdlib_queue
import threading
import time
from typing import Callable

from prometheus_client import CollectorRegistry

from promop.kube.workqueue import Queue, RateLimitingQueue


def single_thread_stdlib(n: int) -> float:
    q: stdlib_queue.Queue = stdlib_queue.Queue()
    started = time.perf_counter()
    for i in range(n):
        q.put(i)
    for _ in range(n):
        q.get()
    return time.perf_counter() - started


def single_thread_workqueue(make: Callable[[], Queue]) -> Callable[[int], float]:
    def run(n: int) -> float:
        q = make()
        started = time.perf_counter()
        for i in range(n):
            q.add(i)
        for _ in range(n):
            item, _ = q.get()
            q.done(item)
        return time.perf_counter() - started

    return run


def threaded_stdlib(n: int) -> float:
    q: stdlib_queue.Queue = stdlib_queue.Queue()

    def consume() -> None:
        for _ in range(n):
            q.get()

    consumer = threading.Thread(target=consume)
    started = time.perf_counter()
    consumer.start()
    for i in range(n):
        q.put(i)
    consumer.join()
    return time.perf_counter() - started


def threaded_workqueue(make: Callable[[], Queue]) -> Callable[[int], float]:
    def run(n: int) -> float:
        q = make()

        def consume() -> None:
            for _ in range(n):
                item, _ = q.get()
                q.done(item)

        consumer = threading.Thread(target=consume)
        started = time.perf_counter()
        consumer.start()
        for i in range(n):
            q.add(i)  # distinct items: nothing is deduplicated
        consumer.join()
        return time.perf_counter() - started

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    def plain() -> Queue:
        return Queue()

    def with_metrics() -> Queue:
        return RateLimitingQueue(name="bench", registry=CollectorRegistry())

    shapes = {
        "1 thread": (single_thread_stdlib, {
            "Queue, no metrics": single_thread_workqueue(plain),
            "RateLimitingQueue + metrics": single_thread_workqueue(with_metrics),
        }),
        "producer + consumer": (threaded_stdlib, {
            "Queue, no metrics": threaded_workqueue(plain),
            "RateLimitingQueue + metrics": threaded_workqueue(with_metrics),
        }),
    }
    n = args.items
    print(f"{n} items per round, best of {args.rounds} rounds; ops/s = items through the queue per second")
    print(f"{'shape':<22}{'contender':<30}{'ops/s':>12}{'× queue.Queue':>16}")
    worst = float("inf")
    for shape, (baseline, contenders) in shapes.items():
        best = {"queue.Queue put/get": float("inf"), **{name: float("inf") for name in contenders}}
        for _ in range(args.rounds):
            best["queue.Queue put/get"] = min(best["queue.Queue put/get"], baseline(n))
            for name, run in contenders.items():
                best[name] = min(best[name], run(n))
        base_rate = n / best["queue.Queue put/get"]
        for name, seconds in best.items():
            ratio = (n / seconds) / base_rate
            if name in contenders:
                worst = min(worst, ratio)
            print(f"{shape:<22}{name:<30}{n / seconds:>12,.0f}{ratio:>15.2f}×")
    print(f"\nworst ratio {worst:.2f}× (target ≥ 0.5×): {'PASS' if worst >= 0.5 else 'FAIL'}")


if __name__ == "__main__":
    main()
