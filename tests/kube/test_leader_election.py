"""Leader election against the API sandbox, over HTTP, with short durations.

Every leadership period is recorded as an interval [work started, work saw
the stop]; intervals of different electors must never overlap.
"""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Optional

import pytest
from prometheus_client import CollectorRegistry

from promop.kube.client import KubeClient
from promop.kube.errors import ApiUnreachable, Conflict, RequestTimeout
from promop.kube.leader_election import (
    LeaderElectionConfig,
    LeaderElectionConfigError,
    LeaderElector,
)
from promop.kube.queue import FakeClock
from promop.kube.resources import LEASES
from deadlines import scaled
from kube.kube_testlib import wait_until

NS = "default"
# lease 2 s, renew deadline 1 s, retry 0.25 s: fast, with room for a noisy machine
TIMINGS = dict(lease_duration=2.0, renew_deadline=1.0, retry_period=0.25)
STATUS = "prometheus_operator_leader_election_master_status"


class Partitionable:
    """The real client, except that the test can cut it off from the API or make it hang."""

    def __init__(self, client: KubeClient) -> None:
        self.client = client
        self.cut = threading.Event()
        self.hang = threading.Event()
        self.hanging = threading.Event()
        self.unhang = threading.Event()
        self.calls = 0

    def _through(self, verb: str, *args, timeout=None):
        self.calls += 1
        if self.hang.is_set():
            self.hanging.set()
            if not self.unhang.wait(timeout or 30):
                raise RequestTimeout("hung by the test", method=verb, path="leases")
        if self.cut.is_set():
            raise ApiUnreachable("partitioned by the test", method=verb, path="leases")
        return getattr(self.client, verb)(*args, timeout=timeout)

    def get(self, *args, timeout=None):
        return self._through("get", *args, timeout=timeout)

    def create(self, *args, timeout=None):
        return self._through("create", *args, timeout=timeout)

    def update(self, *args, timeout=None):
        return self._through("update", *args, timeout=timeout)


@dataclass
class Timeline:
    lock: threading.Lock = field(default_factory=threading.Lock)
    intervals: list[list] = field(default_factory=list)  # [name, start, end or None]

    def assert_no_overlap(self) -> None:
        with self.lock:
            spans = sorted((s, e if e is not None else float("inf"), n) for n, s, e in self.intervals)
        for (s1, e1, n1), (s2, e2, n2) in zip(spans, spans[1:]):
            assert e1 <= s2, f"split brain: {n1} led [{s1:.3f}, {e1:.3f}] and {n2} from {s2:.3f}"


class Contender:
    def __init__(self, sandbox, lease: str, name: str, timeline: Timeline, clock=None, **timings):
        self.name = name
        self.registry = CollectorRegistry()
        self.client = Partitionable(KubeClient(sandbox.api_client(), registry=CollectorRegistry()))
        self.timeline = timeline
        self.stopped_calls = 0
        self.led = threading.Event()
        self.config = LeaderElectionConfig(lease, NS, name, **{**TIMINGS, **timings})
        self.elector = LeaderElector(
            self.client, self.config, self._work, self._stopped, registry=self.registry, clock=clock
        )
        self.thread = threading.Thread(target=self.elector.run, daemon=True)
        self.returned = threading.Event()

    def _work(self, stop: threading.Event) -> None:
        with self.timeline.lock:
            span = [self.name, time.monotonic(), None]
            self.timeline.intervals.append(span)
        self.led.set()
        stop.wait()
        with self.timeline.lock:
            span[2] = time.monotonic()

    def _stopped(self) -> None:
        self.stopped_calls += 1

    def start(self) -> "Contender":
        self.thread = threading.Thread(target=lambda: (self.elector.run(), self.returned.set()), daemon=True)
        self.thread.start()
        return self

    def stop(self) -> None:
        self.elector.stop()
        assert self.returned.wait(scaled(10)), f"{self.name}: run() did not return after stop()"

    def status(self) -> Optional[float]:
        return self.registry.get_sample_value(STATUS, {"name": self.config.lease_name})


@pytest.fixture
def lease_name():
    return f"promop-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def kube(sandbox):
    client = KubeClient(sandbox.api_client(), registry=CollectorRegistry())
    yield client
    client.close()


def leaders(contenders) -> list[str]:
    return [c.name for c in contenders if c.elector.is_leader()]


# -- configuration ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs,message",
    [
        (dict(lease_duration=10, renew_deadline=10, retry_period=2), "lease_duration .* greater than renew_deadline"),
        (dict(lease_duration=15, renew_deadline=2.4, retry_period=2), r"renew_deadline .* greater than 1.2 x retry_period"),
        (dict(lease_duration=15, renew_deadline=10, retry_period=0), "retry_period must be greater than zero"),
        (dict(lease_duration=-1, renew_deadline=10, retry_period=2), "lease_duration must be greater than zero"),
        (dict(identity=""), "identity must not be empty"),
        (dict(lease_name=""), "lease_name must not be empty"),
    ],
)
def test_config_is_validated_with_clear_errors(kwargs, message):
    args = dict(lease_name="l", lease_namespace="ns", identity="me")
    args.update(kwargs)
    with pytest.raises(LeaderElectionConfigError, match=message):
        LeaderElectionConfig(**args)


def test_config_defaults_are_client_go_s():
    cfg = LeaderElectionConfig("l", "ns", "me")
    assert (cfg.lease_duration, cfg.renew_deadline, cfg.retry_period) == (15.0, 10.0, 2.0)
    assert cfg.lease_duration_seconds == 15


def test_callbacks_must_be_callable():
    with pytest.raises(LeaderElectionConfigError, match="callables"):
        LeaderElector(object(), LeaderElectionConfig("l", "ns", "me"), None, lambda: None)


# -- one elector ------------------------------------------------------------------------


def test_single_elector_leads_renews_and_releases(sandbox, kube, lease_name):
    timeline = Timeline()
    a = Contender(sandbox, lease_name, "a", timeline)
    assert a.status() == 0
    a.start()
    assert a.led.wait(scaled(10))
    assert a.elector.is_leader() and a.status() == 1
    first = kube.get(LEASES, lease_name, NS)["spec"]
    assert first["holderIdentity"] == "a"
    assert first["leaseDurationSeconds"] == 2
    assert first["leaseTransitions"] == 0
    wait_until(lambda: kube.get(LEASES, lease_name, NS)["spec"]["renewTime"] != first["renewTime"],
               "a renewal")
    renewed = kube.get(LEASES, lease_name, NS)["spec"]
    assert renewed["acquireTime"] == first["acquireTime"], "a renewal keeps acquireTime"
    assert a.elector.check()

    a.stop()
    released = kube.get(LEASES, lease_name, NS)["spec"]
    assert released["holderIdentity"] == ""
    assert released["leaseDurationSeconds"] == 1
    assert not a.elector.is_leader() and a.status() == 0
    assert a.stopped_calls == 1
    assert timeline.intervals[0][2] is not None, "the work was told to stop"


def test_on_stopped_leading_runs_even_if_never_led(sandbox, kube, lease_name):
    kube.create(LEASES, {
        "metadata": {"name": lease_name, "namespace": NS},
        "spec": {"holderIdentity": "someone-else", "leaseDurationSeconds": 60},
    }, NS)
    a = Contender(sandbox, lease_name, "a", Timeline()).start()
    wait_until(lambda: a.client.calls >= 2, "a few attempts to acquire")
    a.stop()
    assert not a.led.is_set()
    assert a.stopped_calls == 1
    assert kube.get(LEASES, lease_name, NS)["spec"]["holderIdentity"] == "someone-else", \
        "a standby must not release someone else's lease"


def test_stop_before_run_and_run_twice(sandbox, kube, lease_name):
    a = Contender(sandbox, lease_name, "a", Timeline())
    a.elector.stop()
    a.elector.run()  # returns at once
    assert a.stopped_calls == 1 and not a.led.is_set()
    with pytest.raises(RuntimeError, match="already run"):
        a.elector.run()


def test_record_timestamps_are_never_trusted(sandbox, kube, lease_name):
    # The holder's renewTime is decades old, but we have only just seen the record:
    # it stays valid for leaseDurationSeconds from our first observation.
    kube.create(LEASES, {
        "metadata": {"name": lease_name, "namespace": NS},
        "spec": {"holderIdentity": "ghost", "leaseDurationSeconds": 2,
                 "renewTime": "1990-01-01T00:00:00.000000Z", "acquireTime": "1990-01-01T00:00:00.000000Z",
                 "leaseTransitions": 4},
    }, NS)
    started = time.monotonic()
    a = Contender(sandbox, lease_name, "a", Timeline()).start()
    try:
        assert a.led.wait(scaled(10))
        assert time.monotonic() - started >= 2.0, "took over before a full lease duration"
        spec = kube.get(LEASES, lease_name, NS)["spec"]
        assert spec["holderIdentity"] == "a"
        assert spec["leaseTransitions"] == 5
    finally:
        a.stop()


# -- two electors -----------------------------------------------------------------------


def test_exactly_one_of_two_leads_and_hand_over_after_release(sandbox, kube, lease_name):
    timeline = Timeline()
    a = Contender(sandbox, lease_name, "a", timeline).start()
    b = Contender(sandbox, lease_name, "b", timeline).start()
    try:
        wait_until(lambda: len(leaders([a, b])) == 1, "one leader")
        first = a if a.elector.is_leader() else b
        second = b if first is a else a
        # It stays one leader over several renewals.
        for _ in range(20):
            assert len(leaders([a, b])) <= 1
            time.sleep(0.05)  # sampling interval of the observation, not synchronisation
        assert leaders([a, b]) == [first.name]

        released_at = time.monotonic()
        first.stop()
        assert second.led.wait(scaled(10))
        # released: no need to wait out the 2 s lease; 1 s (the released lease's
        # duration) plus the standby's retry jitter at most
        assert time.monotonic() - released_at < 2.0
        assert kube.get(LEASES, lease_name, NS)["spec"]["leaseTransitions"] == 1
        timeline.assert_no_overlap()
    finally:
        a.stop()
        b.stop()
    timeline.assert_no_overlap()


def test_hand_over_after_expiry_when_the_leader_is_cut_off(sandbox, kube, lease_name):
    timeline = Timeline()
    a = Contender(sandbox, lease_name, "a", timeline).start()
    assert a.led.wait(scaled(10))
    b = Contender(sandbox, lease_name, "b", timeline).start()
    try:
        wait_until(lambda: len(timeline.intervals) == 1 and a.elector.is_leader(), "a leading")
        cut_at = time.monotonic()
        a.client.cut.set()  # a can no longer reach the API and cannot release
        assert b.led.wait(scaled(10)), "b must take over once a's lease expires"
        assert time.monotonic() - cut_at >= TIMINGS["lease_duration"] - TIMINGS["retry_period"]
        timeline.assert_no_overlap()  # a stopped its work before b started
        assert a.returned.is_set(), "a must give up leadership when it cannot renew"
        assert timeline.intervals[0][2] - cut_at <= TIMINGS["renew_deadline"] + 0.5
        assert a.stopped_calls == 1 and a.status() == 0
        assert kube.get(LEASES, lease_name, NS)["spec"]["holderIdentity"] == "b"
    finally:
        a.client.cut.clear()
        b.stop()
        a.stop()
    timeline.assert_no_overlap()


def test_no_split_brain_under_injected_api_failures(sandbox, lease_name):
    timeline = Timeline()
    contenders = [Contender(sandbox, lease_name, n, timeline).start() for n in ("a", "b", "c")]
    generation = [0]

    def restart_the_losers() -> None:
        # As the operator does: a replica that lost leadership exits and is restarted.
        for i, contender in enumerate(contenders):
            if contender.returned.is_set():
                generation[0] += 1
                contenders[i] = Contender(sandbox, lease_name, f"r{generation[0]}", timeline).start()

    LONG = 20  # noqa: N806
    try:
        wait_until(lambda: len(leaders(contenders)) == 1, "a first leader")
        bursts = [
            (6, 500, None),  # a short burst: renewals should ride it out
            (3, 409, "update"),  # conflicts on writes
            # longer than the renew deadline: leadership is lost (3 contenders, one request each per 0.25 s
            # retry at most: 20 failures last 1.7 s or more, the deadline is 1 s)
            (LONG, 500, None),
            (8, 409, "update"),
            (5, 500, "get"),
        ]
        for n, code, verb in bursts:
            periods = len(timeline.intervals)
            sandbox.faults.fail_next(n, code, verb=verb, resource="leases")
            deadline = time.monotonic() + scaled(15)
            while pending(sandbox):
                timeline.assert_no_overlap()
                assert len(leaders(contenders)) <= 1
                assert time.monotonic() < deadline, f"the burst {n} x {code} was never consumed"
                restart_the_losers()
                time.sleep(0.01)
            sandbox.faults.clear()
            wait_until(lambda: (restart_the_losers(), leading_and_working(contenders, timeline))[1],
                       "a leader after the burst, its work started")
            timeline.assert_no_overlap()
            if n == LONG:
                assert len(timeline.intervals) > periods, "the long burst should have moved leadership"
    finally:
        sandbox.faults.clear()
        for contender in contenders:
            contender.stop()
    timeline.assert_no_overlap()
    assert len(timeline.intervals) >= 2, "the long burst should have moved leadership"


def leading_and_working(contenders, timeline: Timeline) -> bool:
    """One leader, whose work has started: is_leader() turns true before the work thread records its
    interval, so counting intervals right after seeing a leader could miss the newest one."""
    names = leaders(contenders)
    if len(names) != 1:
        return False
    with timeline.lock:
        return any(n == names[0] and e is None for n, _, e in timeline.intervals)


def pending(sandbox) -> bool:
    """Whether injected failures are still waiting to be served."""
    return sandbox.faults.pending() > 0


def test_losing_leadership_stops_the_work_and_run_returns(sandbox, lease_name):
    timeline = Timeline()
    a = Contender(sandbox, lease_name, "a", timeline).start()
    assert a.led.wait(scaled(10))
    sandbox.faults.fail_next(1000, 500, resource="leases")
    try:
        assert a.returned.wait(scaled(10))
        wait_until(lambda: timeline.intervals[0][2] is not None, "the work to see the stop")
        assert a.stopped_calls == 1
    finally:
        sandbox.faults.clear()


# -- health check -----------------------------------------------------------------------


def test_check_fails_when_leading_but_not_renewed(sandbox, lease_name):
    clock = FakeClock()
    acquired_at = clock.now()  # the fake clock stands still until we advance it
    a = Contender(sandbox, lease_name, "a", Timeline(), clock=clock,
                  lease_duration=15.0, renew_deadline=10.0, retry_period=2.0)
    a.start()
    assert a.led.wait(scaled(10))
    assert a.elector.check()
    a.client.hang.set()  # the next renewal hangs inside the request
    deadline = time.monotonic() + scaled(10)
    while not a.client.hanging.wait(0.02):  # until the renew loop wakes and calls the API
        assert time.monotonic() < deadline, "no renewal attempt"
        if clock.now() < acquired_at + 8.0:  # past 10 s the renewal would give up unsent
            clock.advance(0.5)
    clock.advance(acquired_at + 15.5 - clock.now())  # 15.5 s since the last renewal
    assert a.elector.is_leader()
    assert a.elector.check(max_tolerable_expiry=1.0)
    assert not a.elector.check(max_tolerable_expiry=0.0)
    a.client.hang.clear()
    a.client.unhang.set()
    a.stop()


def test_a_foreign_holder_written_while_we_lead_is_not_overwritten(sandbox, kube, lease_name):
    # Someone else takes the Lease through the API while a leads. a's next renewal
    # must fail (409 on its cached resourceVersion), and the re-read must show the
    # foreign holder, which is unexpired: a loses leadership instead of stealing it back.
    timeline = Timeline()
    a = Contender(sandbox, lease_name, "a", timeline).start()
    try:
        assert a.led.wait(scaled(10))
        def intrude() -> bool:
            lease = kube.get(LEASES, lease_name, NS)
            lease["spec"] = {**lease["spec"], "holderIdentity": "intruder", "leaseDurationSeconds": 60}
            try:
                kube.update(LEASES, lease, NS)
                return True
            except Conflict:  # a renewed in between: read again
                return False

        wait_until(intrude, "the intruder's write")
        assert a.returned.wait(scaled(10)), "a must lose leadership to the foreign holder"
        wait_until(lambda: timeline.intervals[0][2] is not None, "a's work to see the stop")
        assert not a.elector.is_leader() and a.status() == 0
        assert kube.get(LEASES, lease_name, NS)["spec"]["holderIdentity"] == "intruder", \
            "a overwrote the foreign holder"
    finally:
        a.stop()


def test_a_hung_renewal_times_out_and_leadership_is_lost_within_the_renew_deadline(sandbox, kube, lease_name):
    # The API accepts the renewal but never answers in time: each call times out at
    # the renew deadline (no thread left behind), and the work is stopped by then.
    timeline = Timeline()
    a = Contender(sandbox, lease_name, "a", timeline).start()
    try:
        assert a.led.wait(scaled(10))
        renewed = kube.get(LEASES, lease_name, NS)["spec"]["renewTime"]
        wait_until(lambda: kube.get(LEASES, lease_name, NS)["spec"]["renewTime"] != renewed, "a renewal")
        hung_at = time.monotonic()
        sandbox.faults.add_latency(4.0, verb="update", resource="leases")
        assert a.returned.wait(scaled(10)), "a must give up when its renewals hang"
        wait_until(lambda: timeline.intervals[0][2] is not None, "a's work to see the stop")
        # The last successful renewal began before hung_at: the work stops within the
        # renew deadline of it (plus scheduling slack), long before a 4 s answer.
        assert timeline.intervals[0][2] - hung_at <= TIMINGS["renew_deadline"] + 1.2
        assert a.stopped_calls == 1 and a.status() == 0
    finally:
        sandbox.faults.clear()
        a.stop()
