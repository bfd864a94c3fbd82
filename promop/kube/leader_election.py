"""Leader election on a coordination.k8s.io/v1 Lease (client-go tools/leaderelection).

Two operator replicas must never reconcile at the same time. The algorithm is
client-go's (shared reference §5):

- try to acquire every `retry_period` (with jitter, 1x-2.2x) until we hold the
  lease; then call `on_started_leading(stop_event)` in its own thread;
- renew every `retry_period`; if no renewal succeeds for `renew_deadline`,
  leadership is lost: `stop_event` is set and `on_stopped_leading()` is called
  (the operator exits non-zero there, so that a fresh process starts over);
- another holder's lease counts as expired `leaseDurationSeconds` after the
  LOCAL MONOTONIC time at which we saw its record change. The record's own
  timestamps are written for humans but never trusted, so clock skew between
  nodes cannot cause two leaders;
- every write is a PUT of the object we read, so a concurrent writer's change
  makes ours fail with 409 Conflict instead of overwriting it;
- `stop()` ends cleanly: the work is told to stop, and then the lease is
  released (empty holder, `leaseDurationSeconds=1`) so a standby takes over
  at once instead of after a full lease duration.

Two differences from client-go, both on the safe side:

- the renew deadline counts from the start of the last successful renewal,
  not from the start of a renewal round, and each API call's timeout is what
  is left of it, so a hung request cannot keep us leading past `renew_deadline`;
- a leader that re-reads the Lease and finds another holder with an
  unexpired lease gives up at once instead of retrying until the deadline.
"""

from __future__ import annotations

import logging
import math
import random
import threading
import weakref
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Callable, Optional

from prometheus_client import REGISTRY, Gauge

from promop.kube.errors import ApiError, NotFound
from promop.kube.logfields import kv
from promop.kube.queue import MONOTONIC, Clock
from promop.kube.resources import LEASES

log = logging.getLogger("promop.kube.leader_election")

#: client-go's JitterFactor: acquire retries wait retry_period * (1 + U[0, 1.2)).
JITTER_FACTOR = 1.2


class LeaderElectionConfigError(ValueError):
    """Leader election settings that cannot work; the message says which and why."""


@dataclass(frozen=True)
class LeaderElectionConfig:
    """Where the Lease is, who we are, and the timings (seconds; client-go defaults)."""

    lease_name: str
    lease_namespace: str
    identity: str
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def __post_init__(self) -> None:
        for field in ("lease_name", "lease_namespace", "identity"):
            if not getattr(self, field):
                raise LeaderElectionConfigError(f"leader election: {field} must not be empty")
        for field in ("lease_duration", "renew_deadline", "retry_period"):
            if not getattr(self, field) > 0:
                raise LeaderElectionConfigError(
                    f"leader election: {field} must be greater than zero (got {getattr(self, field)})"
                )
        if not self.lease_duration > self.renew_deadline:
            raise LeaderElectionConfigError(
                f"leader election: lease_duration ({self.lease_duration} s) must be greater than "
                f"renew_deadline ({self.renew_deadline} s), or a standby could take over while "
                f"the leader still believes it leads"
            )
        if not self.renew_deadline > JITTER_FACTOR * self.retry_period:
            raise LeaderElectionConfigError(
                f"leader election: renew_deadline ({self.renew_deadline} s) must be greater than "
                f"{JITTER_FACTOR} x retry_period ({self.retry_period} s), or a single slow retry "
                f"would lose leadership"
            )

    @property
    def lease_duration_seconds(self) -> int:
        """What we write in spec.leaseDurationSeconds (an integer; never shorter than ours)."""
        return max(1, math.ceil(self.lease_duration))


class _Deadline(Exception):
    """The renew deadline passed before an API call could be sent."""


class LeaderElector:
    """Runs the election; see the module docstring.

    `client` is a `promop.kube.client.KubeClient` (get/create/update of LEASES
    with a per-call `timeout`, returning plain dicts and raising `promop.kube.errors`).
    """

    def __init__(
        self,
        client: Any,
        config: LeaderElectionConfig,
        on_started_leading: Callable[[threading.Event], Any],
        on_stopped_leading: Callable[[], Any],
        registry: Any = None,
        clock: Optional[Clock] = None,
    ) -> None:
        if not callable(on_started_leading) or not callable(on_stopped_leading):
            raise LeaderElectionConfigError(
                "leader election: on_started_leading and on_stopped_leading must both be callables"
            )
        self.client = client
        self.config = config
        self._on_started = on_started_leading
        self._on_stopped = on_stopped_leading
        self._clock = clock or MONOTONIC
        self._gauge = _master_status(registry).labels(name=config.lease_name)
        self._gauge.set(0)
        self._stop = threading.Event()  # stop() was called
        self._work_stop = threading.Event()  # handed to on_started_leading
        self._lock = threading.Lock()
        self._leading = False
        self._ran = False
        self._lease: Optional[dict] = None  # the object last read or written (for PUT)
        self._observed_spec: Optional[dict] = None
        self._observed_time = 0.0  # local monotonic time the spec last changed
        self._last_renew_start: Optional[float] = None  # start of the last successful write
        self._work_thread: Optional[threading.Thread] = None
        self._lost_to = ""  # another holder seen with a valid lease while we led

    # -- public API ---------------------------------------------------------------------
    def run(self) -> None:
        """Block until leadership is lost or `stop()` is called; `on_stopped_leading`
        is always called before returning, even if we never led. One run per elector:
        after losing leadership, make a new one (or, as the operator does, exit)."""
        with self._lock:
            if self._ran:
                raise RuntimeError(
                    f"LeaderElector for lease {self.config.lease_namespace}/{self.config.lease_name} "
                    "was already run; create a new LeaderElector"
                )
            self._ran = True
        try:
            if self._acquire():
                self._start_work()
                self._renew_until_lost_or_stopped()
        finally:
            self._end_leadership()

    def stop(self) -> None:
        """End `run()` cleanly; the lease is released if we hold it."""
        self._stop.set()

    def is_leader(self) -> bool:
        with self._lock:
            return self._leading

    def check(self, max_tolerable_expiry: float = 0.0) -> bool:
        """The /healthz adaptor: False when we lead but have not renewed for
        lease_duration + `max_tolerable_expiry` seconds (a stuck elector)."""
        with self._lock:
            if not self._leading or self._last_renew_start is None:
                return True
            stale = self._clock.now() - self._last_renew_start
        return stale <= self.config.lease_duration + max_tolerable_expiry

    # -- the loops ----------------------------------------------------------------------
    def _acquire(self) -> bool:
        cfg = self.config
        log.info("trying to acquire the leader lease", extra=self._kv())
        while not self._stop.is_set():
            if self._try_acquire_or_renew(deadline=None):
                log.info("acquired the leader lease", extra=self._kv())
                return True
            wait = cfg.retry_period * (1.0 + random.random() * JITTER_FACTOR)
            if self._clock.sleep(wait, self._stop):
                break
        return False

    def _renew_until_lost_or_stopped(self) -> None:
        cfg = self.config
        while not self._clock.sleep(cfg.retry_period, self._stop):
            while True:
                assert self._last_renew_start is not None
                deadline = self._last_renew_start + cfg.renew_deadline
                if self._try_acquire_or_renew(deadline=deadline):
                    break
                if self._stop.is_set():
                    return
                if self._lost_to:
                    log.error(
                        "leadership lost: another holder took the lease",
                        extra=self._kv(holder=self._lost_to),
                    )
                    return
                remaining = deadline - self._clock.now()
                if remaining <= 0:
                    log.error(
                        "leadership lost: the lease could not be renewed within the renew deadline",
                        extra=self._kv(renew_deadline=cfg.renew_deadline),
                    )
                    return
                if self._clock.sleep(min(cfg.retry_period, remaining), self._stop):
                    return

    def _start_work(self) -> None:
        with self._lock:
            self._leading = True
        self._gauge.set(1)
        self._work_thread = threading.Thread(
            target=self._run_work, name=f"leader-{self.config.lease_name}", daemon=True
        )
        self._work_thread.start()

    def _run_work(self) -> None:
        try:
            self._on_started(self._work_stop)
        except Exception:
            log.exception("on_started_leading failed", extra=self._kv())

    def _end_leadership(self) -> None:
        was_leading = self.is_leader()
        self._work_stop.set()
        with self._lock:
            self._leading = False
        self._gauge.set(0)
        if self._stop.is_set():
            # Let the work wind down before a standby can start, then hand over at once
            # (also when stop() raced with acquiring: _release checks we hold the lease).
            if was_leading and self._work_thread is not None:
                self._work_thread.join(self.config.renew_deadline)
            self._release()
        try:
            self._on_stopped()
        except Exception:
            log.exception("on_stopped_leading failed", extra=self._kv())

    # -- one attempt --------------------------------------------------------------------
    def _try_acquire_or_renew(self, deadline: Optional[float]) -> bool:
        """One round of client-go's tryAcquireOrRenew; True when we hold the lease."""
        cfg = self.config
        started = self._clock.now()
        desired = {
            "holderIdentity": cfg.identity,
            "leaseDurationSeconds": cfg.lease_duration_seconds,
            "acquireTime": _micro_time(),
            "renewTime": _micro_time(),
            "leaseTransitions": 0,
        }
        try:
            # Fast path (client-go): we lead, the record we last saw is still ours and
            # valid: PUT it back as cached. Its resourceVersion makes the PUT fail with
            # 409 if anyone changed the Lease since; then we re-read it below.
            if self.is_leader() and self._holds(self._lease) and self._lease_valid(started):
                spec = self._lease.get("spec") or {}
                desired["acquireTime"] = spec.get("acquireTime", desired["acquireTime"])
                desired["leaseTransitions"] = spec.get("leaseTransitions", 0)
                try:
                    self._write(self._lease, desired, started, deadline)
                    return True
                except ApiError as exc:
                    log.info("fast-path renewal failed; re-reading the lease", extra=self._kv(err=str(exc)))
            try:
                lease = self.client.get(LEASES, cfg.lease_name, cfg.lease_namespace,
                                        timeout=self._timeout(deadline))
            except NotFound:
                body = {
                    "apiVersion": "coordination.k8s.io/v1",
                    "kind": "Lease",
                    "metadata": {"name": cfg.lease_name, "namespace": cfg.lease_namespace},
                    "spec": desired,
                }
                created = self.client.create(LEASES, body, cfg.lease_namespace, timeout=self._timeout(deadline))
                self._observe(created, started)
                return True

            now = self._clock.now()
            spec = lease.get("spec") or {}
            self._lease = lease
            if spec != self._observed_spec:
                self._observed_spec = spec
                self._observed_time = now
            holder = spec.get("holderIdentity") or ""
            if holder and holder != cfg.identity and self._lease_valid(now):
                if self.is_leader():
                    # Someone else holds an unexpired lease: whatever happened, we are
                    # no longer the leader, and must not take it back by overwriting it.
                    self._lost_to = holder
                return False
            if holder == cfg.identity:
                desired["acquireTime"] = spec.get("acquireTime", desired["acquireTime"])
                desired["leaseTransitions"] = spec.get("leaseTransitions") or 0
            else:
                desired["leaseTransitions"] = (spec.get("leaseTransitions") or 0) + 1
            self._write(lease, desired, started, deadline)
            return True
        except (ApiError, _Deadline) as exc:
            log.info("lease attempt failed", extra=self._kv(err=str(exc)))
            return False
        except Exception as exc:  # as client-go: any error fails the attempt, never the elector
            log.error("lease attempt failed unexpectedly", exc_info=True,
                      extra=self._kv(err=f"{type(exc).__name__}: {exc}"))
            return False

    def _write(self, lease: dict, spec: dict, started: float, deadline: Optional[float]) -> None:
        self._observe(self._put(lease, spec, deadline), started)

    def _put(self, lease: dict, spec: dict, deadline: Optional[float]) -> dict:
        """PUT `lease` as read (its resourceVersion makes it a compare-and-swap) with `spec`."""
        body = dict(lease)
        body["spec"] = {**(lease.get("spec") or {}), **spec}
        return self.client.update(LEASES, body, self.config.lease_namespace, timeout=self._timeout(deadline))

    def _observe(self, lease: dict, started: float) -> None:
        """Record a lease we wrote; `started` is when the writing attempt began."""
        with self._lock:
            self._lease = lease
            self._observed_spec = lease.get("spec") or {}
            self._observed_time = self._clock.now()
            self._last_renew_start = started

    def _holds(self, lease: Optional[dict]) -> bool:
        """Whether `lease` (as last read or written) names us as the holder."""
        return lease is not None and (lease.get("spec") or {}).get("holderIdentity") == self.config.identity

    def _lease_valid(self, now: float) -> bool:
        spec = self._observed_spec or {}
        seconds = spec.get("leaseDurationSeconds")
        duration = seconds if isinstance(seconds, (int, float)) and seconds > 0 else self.config.lease_duration
        return self._observed_time + duration > now

    def _timeout(self, deadline: Optional[float]) -> float:
        """The timeout of the next API call: what is left before `deadline` (clock time);
        while acquiring (no deadline), one renew deadline, so a hung call cannot stall us."""
        if deadline is None:
            return self.config.renew_deadline
        remaining = deadline - self._clock.now()
        if remaining <= 0:
            raise _Deadline("renew deadline passed before the request was sent")
        return remaining

    def _release(self) -> None:
        """Write an empty holder so a standby need not wait for the lease to expire."""
        lease = self._lease
        if not self._holds(lease):
            return
        spec = {
            "holderIdentity": "",
            "leaseDurationSeconds": 1,
            "acquireTime": _micro_time(),
            "renewTime": _micro_time(),
            "leaseTransitions": (lease.get("spec") or {}).get("leaseTransitions") or 0,
        }
        try:
            self._put(lease, spec, self._clock.now() + self.config.renew_deadline)
            log.info("released the leader lease", extra=self._kv())
        except (ApiError, _Deadline) as exc:
            log.warning("could not release the leader lease; it will expire", extra=self._kv(err=str(exc)))

    def _kv(self, **more: Any) -> dict:
        cfg = self.config
        return kv(lease=f"{cfg.lease_namespace}/{cfg.lease_name}", identity=cfg.identity, **more)


def _micro_time() -> str:
    """metav1.MicroTime: RFC 3339 with microseconds, UTC (informational only)."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


_gauges: "weakref.WeakKeyDictionary[Any, Gauge]" = weakref.WeakKeyDictionary()
_gauges_lock = threading.Lock()


def _master_status(registry: Any) -> Gauge:
    """`prometheus_operator_leader_election_master_status{name}`, once per registry."""
    registry = REGISTRY if registry is None else registry
    with _gauges_lock:
        gauge = _gauges.get(registry)
        if gauge is None:
            gauge = Gauge(
                "prometheus_operator_leader_election_master_status",
                "Gauge of if the reporting system is master of the relevant lease, "
                "0 indicates backup, 1 indicates master. 'name' is the string used to "
                "identify the lease.",
                ["name"],
                registry=registry,
            )
            _gauges[registry] = gauge
        return gauge
