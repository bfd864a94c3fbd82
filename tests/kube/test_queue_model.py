"""Model-based test: the rate-limiting queue against a plain reference model.

The model applies client-go's semantics literally: a delayed item is added the
instant its ready time passes (as client-go's background loop does), and every
operation is observable. Random sequences of add, get, done, add_after,
add_rate_limited, forget, clock advances and shutdowns must give the same
items, lengths, requeue counts and shutdown flags.
"""

from __future__ import annotations

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule

from promop.kube.workqueue import FakeClock, ItemExponentialFailureRateLimiter, RateLimitingQueue

ITEMS = st.sampled_from("abcd")
DELAYS = st.sampled_from([-1.0, 0.0, 0.5, 1.0, 1.5, 3.0])


class ModelQueue:
    def __init__(self) -> None:
        self.now = 0.0
        self.queue: list[str] = []
        self.dirty: set[str] = set()
        self.processing: set[str] = set()
        self.shutting_down = False
        self.waiting: dict[str, tuple[float, int]] = {}
        self.seq = 0
        self.failures: dict[str, int] = {}

    def add_rate_limited(self, item: str) -> None:
        n = self.failures.get(item, 0)
        self.failures[item] = n + 1
        self.add_after(item, min(0.5 * 2**n, 2.0))  # base 0.5 s, cap 2 s

    def add(self, item: str) -> None:
        if self.shutting_down or item in self.dirty:
            return
        self.dirty.add(item)
        if item not in self.processing:
            self.queue.append(item)

    def get(self):
        if self.queue:
            item = self.queue.pop(0)
            self.dirty.discard(item)
            self.processing.add(item)
            return item, False
        return None, self.shutting_down

    def done(self, item: str) -> None:
        self.processing.discard(item)
        if item in self.dirty:
            self.queue.append(item)

    def add_after(self, item: str, delay: float) -> None:
        if self.shutting_down:
            return
        if delay <= 0:
            self.add(item)
            return
        ready = self.now + delay
        if item in self.waiting and self.waiting[item][0] <= ready:
            return
        self.seq += 1
        self.waiting[item] = (ready, self.seq)

    def advance(self, seconds: float) -> None:
        self.now += seconds
        due = sorted((entry, item) for item, entry in self.waiting.items() if entry[0] <= self.now)
        for _, item in due:
            del self.waiting[item]
            self.add(item)

    def shutdown(self) -> None:
        self.shutting_down = True
        self.waiting.clear()


class QueueMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.clock = FakeClock(start=0.0)
        self.queue = RateLimitingQueue(
            ItemExponentialFailureRateLimiter(0.5, 2.0), name=None, clock=self.clock
        )
        self.model = ModelQueue()

    @rule(item=ITEMS)
    def add(self, item):
        self.queue.add(item)
        self.model.add(item)

    @rule()
    def get(self):
        assert self.queue.get(timeout=0) == self.model.get()

    @precondition(lambda self: self.model.processing)
    @rule(data=st.data())
    def done(self, data):
        item = data.draw(st.sampled_from(sorted(self.model.processing)))
        self.queue.done(item)
        self.model.done(item)

    @rule(item=ITEMS, delay=DELAYS)
    def add_after(self, item, delay):
        self.queue.add_after(item, delay)
        self.model.add_after(item, delay)

    @rule(item=ITEMS)
    def add_rate_limited(self, item):
        self.queue.add_rate_limited(item)
        self.model.add_rate_limited(item)
        assert self.queue.num_requeues(item) == self.model.failures[item]

    @rule(item=ITEMS)
    def forget(self, item):
        self.queue.forget(item)
        self.model.failures.pop(item, None)
        assert self.queue.num_requeues(item) == 0

    @rule(seconds=st.sampled_from([0.5, 1.0, 2.0]))
    def advance(self, seconds):
        self.clock.advance(seconds)
        self.model.advance(seconds)

    @rule()
    def shutdown(self):
        self.queue.shutdown()
        self.model.shutdown()

    @precondition(lambda self: not self.model.processing)
    @rule()
    def shutdown_with_drain(self):
        self.queue.shutdown_with_drain()  # nothing in flight: returns at once
        self.model.shutdown()

    # A rule rather than an invariant: observing promotes due items, so checking
    # after every step would hide ordering bugs in the lazy promotion.
    @rule()
    def same_length_and_state(self):
        assert len(self.queue) == len(self.model.queue)
        assert self.queue.processing() == len(self.model.processing)
        assert self.queue.shutting_down() == self.model.shutting_down
        assert self.queue.waiting() == len(self.model.waiting)


QueueMachine.TestCase.settings = settings(max_examples=300, stateful_step_count=40, deadline=None)
TestQueueModel = QueueMachine.TestCase
