"""`Informer.pending()` is 0 only when nothing is in transit.

Tests and benchmarks decide "the controller is idle" from it. A delta or notification that a
thread has taken off its queue but not yet dealt with must still count; a count read from the
queues alone drops to 0 for that moment, and an `idle()` built on it returns early. The threads
are paused right after taking an item (a queue whose `get` waits on a gate), which is the moment
a scheduler may stop them on a loaded machine.
"""

from __future__ import annotations

import queue
import threading

from prometheus_client import CollectorRegistry

from deadlines import scaled
from kube.kube_testlib import wait_until
from promop.kube.informer import _STOP, Informer
from promop.kube.resources import CONFIGMAPS


class PausingQueue:
    """A SimpleQueue whose `get` takes the item, says so, then waits for the gate before returning it."""

    def __init__(self) -> None:
        self.inner: queue.SimpleQueue = queue.SimpleQueue()
        self.taken = threading.Event()
        self.gate = threading.Event()

    def put(self, item) -> None:
        self.inner.put(item)

    def qsize(self) -> int:
        return self.inner.qsize()

    def get(self, timeout=None):
        item = self.inner.get(timeout=timeout)
        self.taken.set()
        assert self.gate.wait(scaled(10)), "the test never opened the gate"
        return item


def cm(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default", "resourceVersion": "1"}}


def informer() -> Informer:
    # never started: no reflector talks to an API; the test drives the dispatch and handler threads
    return Informer(None, CONFIGMAPS, registry=CollectorRegistry())  # type: ignore[arg-type]


def test_a_notification_taken_off_the_queue_still_counts():
    inf = informer()
    seen: list[str] = []
    inf.add_handler(on_add=lambda obj, initial: seen.append(obj["metadata"]["name"]))
    listener = inf._listeners[0]
    listener.queue = paused = PausingQueue()
    with inf._dispatch_lock:
        inf._notify(("add", cm("a"), False))
    listener.start()
    assert paused.taken.wait(scaled(10))
    assert inf.pending() == 1, "the handler thread holds the notification: not idle"
    paused.gate.set()
    wait_until(lambda: seen == ["a"] and inf.pending() == 0, "the notification handled")
    listener.queue.put(_STOP)


def test_a_delta_taken_off_the_queue_still_counts():
    inf = informer()
    inf._deltas = paused = PausingQueue()
    inf._put_delta(("event", "ADDED", cm("b")))
    assert inf.pending() == 1
    thread = threading.Thread(target=inf._dispatch, daemon=True)
    thread.start()
    assert paused.taken.wait(scaled(10))
    assert inf.pending() == 1, "the dispatch thread holds the delta: not idle"
    paused.gate.set()
    wait_until(lambda: inf.pending() == 0 and inf.store.get(cm("b")) is not None, "the delta applied")
    inf._deltas.put(_STOP)
    thread.join(scaled(10))


def test_an_adds_batch_counts_each_object_until_handled():
    inf = informer()
    release = threading.Event()
    done: list[str] = []

    def slow(obj, initial):
        release.wait(scaled(10))
        done.append(obj["metadata"]["name"])

    inf.add_handler(on_add=slow)
    with inf._dispatch_lock:
        inf._notify(("adds", [cm("c"), cm("d"), cm("e")], True))
    assert inf.pending() == 3
    inf._listeners[0].start()
    release.set()
    wait_until(lambda: inf.pending() == 0 and done == ["c", "d", "e"], "the batch handled")
    inf._listeners[0].queue.put(_STOP)
