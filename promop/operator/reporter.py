"""Feedback writes, off the configuration path: status.bindings, the Prometheus status, Events.

A sync ends once the config objects are written; what users read back (bindings on their
ServiceMonitors, PodMonitors and PrometheusRules, the Prometheus status, Warning Events) is
handed to this reporter. It has its own queue and workers, so a config change is never queued
behind thousands of feedback writes (issue 12 §2), and it coalesces per object: many syncs
asking for an object's feedback before it is written give one write with the latest wanted
state, whatever the number of Prometheus objects that select it.

Each write compares with the informer cache first. When the cache is still behind our own
last write (WriteLog.pending), the comparison and the write are made over what we wrote, at the
resourceVersion our write produced. A conflict (someone else wrote) requeues the object with
backoff; it is written once the cache has the newer copy. On SIGTERM the backlog is dropped:
the next leader recomputes it.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Hashable, Mapping

from promop.kube.errors import ApiError, Conflict, NotFound
from promop.kube.rate_limiter import ItemExponentialFailureRateLimiter
from promop.kube.resources import EVENTS, PODMONITORS, PROBES, PROMETHEUSES, PROMETHEUSRULES, SERVICEMONITORS, Resource
from promop.kube.resources import SCRAPECONFIGS
from promop.kube.workqueue import RateLimitingQueue
from promop.operator import feedback
from promop.host.logs import fields
from promop.operator.status import now_rfc3339, prometheus_status, status_changed
from promop.operator.writelog import NOTHING, WriteLog
from promop.render.statefulset import shard_count

log = logging.getLogger("promop.operator.feedback")

MONITOR_RESOURCES: dict[str, Resource] = {
    "ServiceMonitor": SERVICEMONITORS, "PodMonitor": PODMONITORS, "PrometheusRule": PROMETHEUSRULES,
    "Probe": PROBES,
}
MONITOR_RESOURCES["ScrapeConfig"] = SCRAPECONFIGS
BINDINGS, STATUS, EVENT, JUDGED = "bindings", "status", "event", "judged"
DEFAULT_WORKERS = 4


@dataclass(frozen=True)
class Outcome:
    """What the last sync of a Prometheus concluded, for its Reconciled condition."""

    error: str | None = None
    reason: str = ""
    # fast reload: (on, reason, message) for the FastReload condition; None leaves it out
    reload_mode: tuple[bool, str, str] | None = None


def _md(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return (obj or {}).get("metadata") or {}


def _ns_name(obj: Mapping[str, Any]) -> tuple[str, str]:
    md = _md(obj)
    return md.get("namespace") or "", md.get("name") or ""


def _comparable(status: Mapping[str, Any]) -> tuple:
    """A status without its lastTransitionTimes (they are carried over, not compared)."""
    return ({k: v for k, v in status.items() if k != "conditions"},
            [{k: v for k, v in c.items() if k != "lastTransitionTime"} for c in status.get("conditions") or []])


class Reporter:
    """The feedback queue and its workers. `stores` is the controller's Stores."""

    def __init__(self, client: Any, stores: Any, writelog: WriteLog, metrics: Any, *,
                 now: Callable[[], str] = now_rfc3339, workers: int = DEFAULT_WORKERS,
                 registry: Any = None) -> None:
        self.client = client
        self.stores = stores
        self.log = writelog
        self.metrics = metrics
        self.now = now
        self.workers = workers
        self.events = feedback.EventDeduper()
        self.queue = RateLimitingQueue(ItemExponentialFailureRateLimiter(0.05, 5.0), name="feedback",
                                       registry=registry)
        self._lock = threading.Lock()
        # (kind, ns, name) -> {prometheus key: Verdict | None}: wanted, not yet written
        self._bindings: dict[tuple[str, str, str], dict[str, feedback.Verdict | None]] = {}
        self._outcomes: dict[str, Outcome] = {}  # Prometheus key -> its last sync's outcome
        self._events: dict[tuple, dict] = {}  # (kind, ns, name, reason) -> Event body to create
        self._judged: dict[str, tuple[Any, Any]] = {}  # Prometheus key -> (selection, rejected) of its last sync
        self._threads: list[threading.Thread] = []
        self._stopping = threading.Event()
        self._go = threading.Event()  # cleared by hold(): the workers write nothing until release()
        self._go.set()
        self.written = 0  # feedback writes made (for benchmarks)

    # ---- what the syncer hands over ---------------------------------------------------------

    def judged(self, key: str, selection: Any, rejected: Any) -> None:
        """The sync of Prometheus `key` selected `selection` and rejected `rejected` (the renderer's
        Decisions and Problems): a worker works out which objects' bindings must change, off the
        sync's path (a diff over every monitor in the cache)."""
        with self._lock:
            self._judged[key] = (selection, rejected)
        self.queue.add((JUDGED, key))

    def _diff_bindings(self, key: str) -> bool:
        with self._lock:
            judged = self._judged.pop(key, None)
        if judged is None:
            return True
        ns, _, name = key.partition("/")
        self.bindings({"metadata": {"namespace": ns, "name": name}}, feedback.verdicts(*judged))
        return True

    def bindings(self, prom: Mapping[str, Any], verdicts: Mapping[tuple[str, str, str], feedback.Verdict]) -> int:
        """`prom` judged the monitors in `verdicts` (others it does not select): queue every object
        whose bindings do not say so yet; returns how many were queued."""
        ns, name = _ns_name(prom)
        pkey = f"{ns}/{name}"
        ref = {"metadata": {"namespace": ns, "name": name}}
        queued = 0
        for kind, store in self.stores.monitors.items():
            for obj in store.list():
                o_ns, o_name = _ns_name(obj)
                key = (kind, o_ns, o_name)
                verdict = verdicts.get(key)
                with self._lock:
                    on_its_way = self._bindings.get(key, {}).get(pkey, NOTHING)
                if on_its_way is not NOTHING:
                    if on_its_way == verdict:
                        continue  # already on its way
                # a queued, older verdict must be replaced even when the cache already agrees
                elif feedback.binding_current(obj, ref, verdict) and self.log.pending((*key, STATUS), obj) is NOTHING:
                    continue
                queued += self._want(key, pkey, verdict)
        return queued

    def forget_prometheus(self, namespace: str, name: str) -> int:
        """The Prometheus is gone: remove its bindings everywhere, forget its status."""
        pkey = f"{namespace}/{name}"
        with self._lock:
            self._outcomes.pop(pkey, None)
            self._judged.pop(pkey, None)
        self.log.forget(lambda k: k == ("Prometheus", namespace, name, STATUS))
        ref = {"metadata": {"namespace": namespace, "name": name}}
        queued = 0
        for kind, store in self.stores.monitors.items():
            for obj in store.list():
                if not feedback.binding_current(obj, ref, None):
                    queued += self._want((kind, *_ns_name(obj)), pkey, None)
        return queued

    def status(self, key: str, outcome: Outcome | None = None) -> bool:
        """Queue a status write of Prometheus `key`: with a new sync `outcome`, or (None) a refresh
        of its StatefulSets' figures under the last outcome. False when there is no outcome yet."""
        with self._lock:
            if outcome is not None:
                self._outcomes[key] = outcome
            elif key not in self._outcomes:
                return False
        self.queue.add((STATUS, key))
        return True

    def event(self, obj: Mapping[str, Any], kind: str, reason: str, note: str, event_type: str = "Warning") -> bool:
        """Queue a Warning Event about `obj`, unless the same note was emitted for its generation."""
        if not self.events.should_emit(obj, reason, note):
            return False
        ns, name = _ns_name(obj)
        body = feedback.event_for(obj, feedback.API_VERSION, kind, reason, note, event_type, self.now())
        key = (kind, ns, name, reason)
        with self._lock:
            self._events[key] = body
        self.queue.add((EVENT, key))
        return True

    def _want(self, key: tuple[str, str, str], pkey: str, verdict: feedback.Verdict | None) -> int:
        with self._lock:
            self._bindings.setdefault(key, {})[pkey] = verdict
        self.queue.add((BINDINGS, key))
        return 1

    # ---- workers ------------------------------------------------------------------------------

    def start(self) -> None:
        if self._threads:
            return
        for i in range(self.workers):
            t = threading.Thread(target=self._worker, name=f"promop-feedback-{i}", daemon=True)
            t.start()
            self._threads.append(t)

    def hold(self) -> None:
        """Queue feedback but write none of it until release(). `promop run` holds it while the first
        syncs run (promop.operator.first_syncs): the first config matters more than its bindings, and
        each binding written beside the first render took its CPU (10,000 ServiceMonitors: 2.57 s to
        the first config Secrets with the writes, 2.08 s without; docs/benchmarks.md, session 17)."""
        self._go.clear()

    def release(self) -> None:
        self._go.set()

    def held(self) -> bool:
        return not self._go.is_set()

    def stop_taking_work(self) -> None:
        self._stopping.set()

    def stop(self, timeout: float = 5.0) -> None:
        """Drop the backlog (the next leader recomputes it) and wait for in-flight writes."""
        self._stopping.set()
        self.queue.shutdown()
        deadline = time.monotonic() + timeout
        for t in self._threads:
            t.join(max(0.0, deadline - time.monotonic()))

    def idle(self) -> bool:
        q = self.queue
        return len(q) == 0 and q.processing() == 0 and q.waiting() == 0

    def _worker(self) -> None:
        q = self.queue
        while True:
            item, shutdown = q.get()
            if shutdown:
                return
            if item is None:
                continue
            try:
                while not self._go.wait(0.2) and not self._stopping.is_set():
                    pass  # held (hold()): the item waits, queued, for release() or stop()
                if self._stopping.is_set():
                    continue
                self.process(item)
            finally:
                q.done(item)

    def process(self, item: Hashable) -> bool:
        """Handle one queued item now; False when it was requeued (conflict, or an error)."""
        what, key = item  # type: ignore[misc]
        try:
            done = {BINDINGS: self._write_bindings, STATUS: self._write_status, EVENT: self._create_event,
                    JUDGED: self._diff_bindings}[what](key)
        except Exception as exc:  # noqa: BLE001 - feedback must never stop; retried with backoff
            log.warning("feedback write failed; retrying with backoff",
                        **fields(what=what, object=key if isinstance(key, str) else "/".join(key[1:]),
                                 error=str(exc)))
            done = False
        if done:
            self.queue.forget(item)
        else:
            self.queue.add_rate_limited(item)
        return done

    def run_pending(self) -> int:
        """Process what is queued now, in this thread (tests without workers); returns how many
        items were requeued."""
        requeued = 0
        while len(self.queue):
            item, _ = self.queue.get()
            try:
                requeued += not self.process(item)
            finally:
                self.queue.done(item)
        return requeued

    # ---- the three writes ---------------------------------------------------------------------

    def _write_bindings(self, key: tuple[str, str, str]) -> bool:
        with self._lock:
            wanted = self._bindings.pop(key, None)
        if not wanted:
            return True
        kind, ns, name = key
        obj = self.stores.monitors[kind].get(f"{ns}/{name}")
        if obj is None:
            return True  # deleted: nothing to tell
        lkey = (*key, STATUS)
        pending = self.log.pending(lkey, obj)
        current = list(((obj.get("status") or {}).get("bindings")) or [])
        version = _md(obj).get("resourceVersion")
        if pending is not NOTHING:  # the cache is behind our last write: build on what we wrote
            record = self.log.get(lkey)
            current, version = list(pending), record.version if record else version
        now = self.now()
        bindings = current
        for pkey, verdict in wanted.items():
            pns, _, pname = pkey.partition("/")
            ref = {"metadata": {"namespace": pns, "name": pname}}
            bindings = feedback.desired_bindings({**obj, "status": {"bindings": bindings}}, ref, verdict, now)
        if bindings == current:
            return True
        body = {**obj, "metadata": {**_md(obj), "resourceVersion": version},
                "status": {**(obj.get("status") or {}), "bindings": bindings}}
        try:
            after = self.client.update(MONITOR_RESOURCES[kind], body, subresource="status")
        except NotFound:
            return True
        except Conflict:
            self._put_back(key, wanted)  # someone else wrote: retry once the cache has it
            return False
        except ApiError:
            self._put_back(key, wanted)
            raise
        self.log.wrote(lkey, {"metadata": {"resourceVersion": version}}, after, bindings)
        self.written += 1
        return True

    def _put_back(self, key: tuple[str, str, str], wanted: dict[str, Any]) -> None:
        with self._lock:
            newer = self._bindings.get(key, {})
            self._bindings[key] = {**wanted, **newer}

    def _write_status(self, key: str) -> bool:
        with self._lock:
            outcome = self._outcomes.get(key)
        prom = self.stores.prometheuses.get(key)
        if outcome is None or prom is None:
            return True
        ns, name = _ns_name(prom)
        shards: dict[int, dict | None] = {}
        for shard in range(shard_count(prom.get("spec") or {})):
            sts_name = f"prometheus-{name}" + (f"-shard-{shard}" if shard else "")
            shards[shard] = self.stores.statefulsets.get(f"{ns}/{sts_name}")
        lkey = ("Prometheus", ns, name, STATUS)
        pending = self.log.pending(lkey, prom)
        version = _md(prom).get("resourceVersion")
        base = prom
        if pending is not NOTHING:  # the cache is behind our last status write: build on it
            record = self.log.get(lkey)
            base, version = {**prom, "status": pending}, record.version if record else version
        desired = prometheus_status(base, shards, error=outcome.error, reconciled_reason=outcome.reason,
                                    reload_mode=outcome.reload_mode, now=self.now())
        if not status_changed(base.get("status"), desired):
            return True
        if pending is not NOTHING and _comparable(pending) == _comparable(desired):
            return True
        self.metrics.status_updates.labels("prometheus").inc()
        body = {**prom, "metadata": {**_md(prom), "resourceVersion": version}, "status": desired}
        try:
            after = self.client.update(PROMETHEUSES, body, subresource="status")
        except NotFound:
            return True
        except Conflict:
            return False
        except ApiError:
            self.metrics.status_update_errors.labels("prometheus").inc()
            raise
        self.log.wrote(lkey, {"metadata": {"resourceVersion": version}}, after, desired)
        self.written += 1
        return True

    def _create_event(self, key: tuple) -> bool:
        with self._lock:
            body = self._events.pop(key, None)
        if body is None:
            return True
        try:
            self.client.create(EVENTS, body, key[1])
        except ApiError as exc:
            log.warning("cannot record event", **fields(object=f"{key[1]}/{key[2]}", error=str(exc)))
        return True
