"""The ScaledObject controller: informers -> a queue of reconciles; a scheduler of scale loops.

Reconciles run on a ScaledObject's spec or pause-annotation change, on a change of a
(Cluster)TriggerAuthentication it references and of its HPA's spec; the scale loops run every
pollingInterval on the shared `Scheduler` (a heap, not a thread per ScaledObject), the first tick
jittered so that 10,000 ScaledObjects synced at start do not all poll at once. All triggers read
one `ResultCache`, shared with the metrics endpoint the adapter forwards the HPA's requests to.
"""

from __future__ import annotations

import logging
import os
import random
import threading
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Any, Callable, Iterator

from prometheus_client import CollectorRegistry, Counter, Gauge

from promop.host.logs import fields
from promop.host.workers import QueueController, keys_from
from promop.kube.errors import ApiError
from promop.kube.informer import Informer
from promop.kube.resources import PODS, SECRETS, Resource
from promop.kube.store import NAMESPACE_INDEX, Tombstone, object_key
from promop.kube.workqueue import RateLimitingQueue
from promop.labelselector import SelectorError, matches, parse_selector

from promop.autoscaler.keda.cache import ResultCache
from promop.autoscaler.keda.events import Recorder
from promop.autoscaler.keda.fanout import Fanout
from promop.autoscaler.keda.last_good_values import views
from promop.autoscaler.keda.loop import ScaleLoop
from promop.autoscaler.keda.metric_path import MetricPath
from promop.autoscaler.keda.metrics_api import MetricError
from promop.autoscaler.keda.query import QuerySender
from promop.autoscaler.keda.reconcile import Reconciler, Retry
from promop.autoscaler.keda.resources import (CACHED_TARGETS, CLUSTERTRIGGERAUTHENTICATIONS, DEPLOYMENTS, HPAS, JOBS,
                                              SCALEDJOBS, SCALEDOBJECTS, STATEFULSETS, TRIGGERAUTHENTICATIONS)
from promop.autoscaler.keda.scaledjobs import PREFIX as SJ_PREFIX, SJ_LABEL, ScaledJobs, slim_job_pod
from promop.autoscaler.keda.scheduler import Scheduler
from promop.autoscaler.keda.shared_strings import shared_object
from promop.autoscaler.keda.slim_hpa import slim_hpa
from promop.autoscaler.keda.state import SOState
from promop.autoscaler.keda.statuswriter import StatusWriter
from promop.autoscaler.keda.triggers import AuthSources, BuiltTrigger, Evaluator, build_trigger

log = logging.getLogger("promop.autoscaler.keda")

_PAUSE_PREFIX = "autoscaling.keda.sh/"


def _obj(obj: Any) -> dict:
    return obj.obj if isinstance(obj, Tombstone) else obj


def slim_workload(obj: dict) -> dict:
    """What the controller keeps of a Deployment/StatefulSet: replicas, selector and the containers'
    env (for TriggerAuthentication `env`); 10,000 targets must fit in the memory budget."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    containers = (((spec.get("template") or {}).get("spec") or {}).get("containers")) or []
    return {"metadata": {k: meta.get(k) for k in ("name", "namespace", "uid", "resourceVersion")},
            "spec": {"replicas": spec.get("replicas", 1), "selector": spec.get("selector"),
                     "containers": [{"name": c.get("name"), "env": c.get("env") or []} for c in containers]}}


TARGET_INDEX = "target"


def target_key(namespace: str, kind: str, name: str) -> str:
    return f"{namespace}/{kind}/{name}"


def so_target_index(obj: dict) -> list[str]:
    """ScaledObjects by their target: the ownership check reads the few on one target, not the namespace."""
    ref = (obj.get("spec") or {}).get("scaleTargetRef") or {}
    return [target_key((obj.get("metadata") or {}).get("namespace", ""), ref.get("kind") or "Deployment",
                       ref.get("name") or "")]


def hpa_target_index(obj: dict) -> list[str]:
    ref = (obj.get("spec") or {}).get("scaleTargetRef") or {}
    return [target_key((obj.get("metadata") or {}).get("namespace", ""), ref.get("kind") or "", ref.get("name") or "")]


def slim_job(obj: dict) -> dict:
    """What a ScaledJob's poll needs of a Job: its labels, when it finished, whether a pod is ready."""
    meta = obj.get("metadata") or {}
    st = obj.get("status") or {}
    return {"metadata": {k: meta.get(k) for k in ("name", "namespace", "uid", "resourceVersion", "labels")},
            "status": {k: st.get(k) for k in ("conditions", "ready", "succeeded", "failed", "active",
                                              "completionTime") if k in st}}


def _watched(obj: dict) -> tuple:
    meta = obj.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    return (meta.get("generation"), bool(meta.get("deletionTimestamp")),
            tuple(sorted((k, v) for k, v in annotations.items() if k.startswith(_PAUSE_PREFIX)
                         or k.startswith("scaledobject.keda.sh/"))),
            tuple(meta.get("finalizers") or ()), (meta.get("labels") or {}).get("scaledobject.keda.sh/name"))


class KedaMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.reconciles = Counter("promop_keda_reconciles_total", "ScaledObject reconciles by result", ["result"],
                                  registry=registry)
        self.queries = Gauge("promop_keda_prometheus_queries", "Prometheus queries sent by the shared cache",
                             registry=registry)
        self.loops = Gauge("promop_keda_scale_loops", "ScaledObjects with a running scale loop", registry=registry)
        labels = ["namespace", "metric", "scaledObject", "scaler", "triggerIndex", "type"]
        # KEDA's operator metrics (docs integrations/prometheus.md), same names and labels
        self.scaler_value = Gauge("keda_scaler_metrics_value", "The current value of each scaler's metric",
                                  labels, registry=registry)
        self.scaler_active = Gauge("keda_scaler_active", "1 when the scaler is active, else 0", labels,
                                   registry=registry)
        self.scaler_errors = Counter("keda_scaler_detail_errors", "Errors of each scaler", labels,
                                     registry=registry)
        # why loops run late at scale (docs/keda.md "Benchmark"): KEDA's keda_internal_scale_loop_latency_seconds
        self.loop_lateness = Gauge("promop_keda_scale_loop_lateness_seconds",
                                   "How late the last scale-loop tick started (last) and the worst so far (max)",
                                   ["which"], registry=registry)
        self.status_backlog = Gauge("promop_keda_status_writes_waiting",
                                    "ScaledObject statuses waiting for (or in) a write", registry=registry)


class KedaController(QueueController):
    def __init__(self, client: Any, *, registry: CollectorRegistry | None = None, workers: int = 2,
                 loop_workers: int = 8, clock: Callable[[], float] = time.time,
                 wall: Callable[[], datetime] | None = None, cluster_object_namespace: str | None = None,
                 informer_kwargs: dict | None = None, first_tick_jitter: bool = True,
                 status_workers: int | None = None) -> None:
        self.client = client
        self.registry = registry if registry is not None else CollectorRegistry()
        self.metrics = KedaMetrics(self.registry)
        self.workers = workers
        self.clock = clock
        self.wall = wall or (lambda: datetime.fromtimestamp(self.clock(), tz=timezone.utc))
        self.cluster_object_namespace = cluster_object_namespace or os.environ.get(
            "KEDA_CLUSTER_OBJECT_NAMESPACE") or _own_namespace()
        self.first_tick_jitter = first_tick_jitter
        self.queue = RateLimitingQueue(name="scaledobject", registry=self.registry)
        kw = {"registry": self.registry, **(informer_kwargs or {})}
        # cached with their strings shared (shared_strings.py): half of a cached ScaledObject at 10,000
        self.scaledobjects = Informer(client, SCALEDOBJECTS, indexers={TARGET_INDEX: so_target_index},
                                      transform=shared_object, **kw)
        self.trigger_auths = Informer(client, TRIGGERAUTHENTICATIONS, **kw)
        self.cluster_trigger_auths = Informer(client, CLUSTERTRIGGERAUTHENTICATIONS, **kw)
        # slimmed: the fields the controller reads, strings shared (slim_hpa.py); 10,000 HPAs cached
        self.hpas = Informer(client, HPAS, indexers={TARGET_INDEX: hpa_target_index}, transform=slim_hpa, **kw)
        self.scaledjobs = Informer(client, SCALEDJOBS, **kw)
        # Jobs are cached only once a ScaledJob exists (most clusters have none, and many Jobs)
        self._jobs_kw = kw
        self._jobs: Informer | None = None
        self._job_pods: Informer | None = None
        self._jobs_lock = threading.Lock()
        self.workloads = {DEPLOYMENTS.kind: Informer(client, DEPLOYMENTS, transform=slim_workload, **kw),
                          STATEFULSETS.kind: Informer(client, STATEFULSETS, transform=slim_workload, **kw)}
        self.informers = [self.scaledobjects, self.trigger_auths, self.cluster_trigger_auths, self.hpas,
                          self.scaledjobs, *self.workloads.values()]
        self.cache = ResultCache()
        self.sender = QuerySender()
        self.evaluator = Evaluator(self.cache, self.sender, self.wall)
        self.recorder = Recorder(client, clock)
        self.reconciler = Reconciler(self)
        self.scale_loop = ScaleLoop(self)
        self.scaled_jobs = ScaledJobs(self)
        self.loops = Scheduler(self._tick, workers=loop_workers)
        self.fanout = Fanout(loop_workers)     # a ScaledObject's triggers evaluated at once (loop.py)
        # a quarter of the loop threads: most polls write nothing, and the writers share the client's
        # rate limit and the apiserver with the reconciles, which must not starve behind status refreshes
        self.status_writer = StatusWriter(client, workers=status_workers or max(2, loop_workers // 4),
                                          registry=self.registry)
        self.metrics.loop_lateness.labels("last").set_function(lambda: self.loops.lateness_last)
        self.metrics.loop_lateness.labels("max").set_function(lambda: self.loops.lateness_max)
        self.metrics.status_backlog.set_function(self.status_writer.backlog)
        self.metric_path = MetricPath(self.evaluator, self.current_replicas, self.ready_pods, self.wall)
        self.states: dict[str, SOState] = {}
        self._key_locks: dict[str, threading.Lock] = {}
        self._locks_lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._stopping = threading.Event()
        self._started_at: float | None = None
        self._register()

    # -- events -------------------------------------------------------------------------------------
    def _register(self) -> None:
        def so_add(obj: dict, _initial: bool = False) -> None:
            self.queue.add(object_key(obj))

        def so_update(old: dict, new: dict) -> None:
            if _watched(old) != _watched(new):
                self.queue.add(object_key(new))

        def so_delete(obj: Any) -> None:
            self.forget(object_key(_obj(obj)))

        self.scaledobjects.add_handler(so_add, so_update, so_delete)

        def sj_add(obj: dict, _initial: bool = False) -> None:
            self.queue.add(self.scaled_jobs.key_of(obj))

        def sj_update(old: dict, new: dict) -> None:
            if _watched(old) != _watched(new):
                self.queue.add(self.scaled_jobs.key_of(new))

        def sj_delete(obj: Any) -> None:
            self.loops.cancel(self.scaled_jobs.key_of(_obj(obj)))

        self.scaledjobs.add_handler(sj_add, sj_update, sj_delete)

        def auth_added(obj: dict, initial: bool = False) -> None:
            if not initial:  # at start every ScaledObject is reconciled anyway
                self._enqueue_auth_users(obj)

        def auth_updated(_old: dict, new: dict) -> None:
            self._enqueue_auth_users(new)

        def auth_deleted(obj: Any) -> None:
            self._enqueue_auth_users(_obj(obj))

        for inf in (self.trigger_auths, self.cluster_trigger_auths):
            inf.add_handler(auth_added, auth_updated, auth_deleted)

        def hpa_update(old: dict, new: dict) -> None:
            if old.get("spec") != new.get("spec") or (old.get("metadata") or {}).get("labels") != \
                    (new.get("metadata") or {}).get("labels"):
                self._enqueue_hpa_owner(new)

        def hpa_delete(obj: Any) -> None:
            self._enqueue_hpa_owner(_obj(obj))

        self.hpas.add_handler(None, hpa_update, hpa_delete)

        def workload_added(obj: dict, initial: bool = False) -> None:
            if not initial:  # a target created after its ScaledObject: reconcile that one again
                self._enqueue_waiting_for(obj)

        for inf in self.workloads.values():
            inf.add_handler(workload_added, None, None)

    def jobs(self) -> Informer:
        """The informer on ScaledJobs' Jobs, started on first use."""
        with self._jobs_lock:
            if self._jobs is None:
                self._jobs = Informer(self.client, JOBS, label_selector=SJ_LABEL, transform=slim_job,
                                      **self._jobs_kw)
                self._jobs.start()
            return self._jobs

    def job_pods(self) -> Informer:
        """The informer on the pods of ScaledJobs' Jobs (their template carries `scaledjob.keda.sh/name`),
        for the pending count; started on first use, as the Jobs'."""
        with self._jobs_lock:
            if self._job_pods is None:
                self._job_pods = Informer(self.client, PODS, label_selector=SJ_LABEL, transform=slim_job_pod,
                                          **self._jobs_kw)
                self._job_pods.start()
            return self._job_pods

    def _enqueue_waiting_for(self, workload: dict) -> None:
        meta = workload.get("metadata") or {}
        for key in self.scaledobjects.store.index_keys(NAMESPACE_INDEX, meta.get("namespace", "")):
            so = self.scaledobjects.store.get(key) or {}
            if key not in self.states and ((so.get("spec") or {}).get("scaleTargetRef") or {}).get("name") == \
                    meta.get("name"):
                self.queue.add(key)

    def _enqueue_auth_users(self, auth: dict) -> None:
        meta = auth.get("metadata") or {}
        kind = auth.get("kind") or ("ClusterTriggerAuthentication" if not meta.get("namespace")
                                    else "TriggerAuthentication")
        users = [*self.scaledobjects.store.items(),    # and ScaledJobs, for status.scaledjobs
                 *((self.scaled_jobs.key_of(o), o) for _k, o in self.scaledjobs.store.items())]
        for key, obj in users:
            if kind == "TriggerAuthentication" and obj["metadata"].get("namespace") != meta.get("namespace"):
                continue
            for t in (obj.get("spec") or {}).get("triggers") or []:
                ref = (t or {}).get("authenticationRef") or {}
                if ref.get("name") == meta.get("name") and (ref.get("kind") or "TriggerAuthentication") == kind:
                    self.queue.add(key)
                    break

    def _enqueue_hpa_owner(self, hpa: dict) -> None:
        meta = hpa.get("metadata") or {}
        for ref in meta.get("ownerReferences") or []:
            if ref.get("kind") == "ScaledObject":
                self.queue.add(f"{meta.get('namespace')}/{ref.get('name')}")

    # -- lifecycle ----------------------------------------------------------------------------------
    def start_workers(self) -> None:
        if self._threads:
            return
        self._started_at = time.monotonic()
        self.status_writer.start()
        self.loops.start()
        for i in range(self.workers):
            t = threading.Thread(target=self._worker, name=f"scaledobject-worker-{i}", daemon=True)
            t.start()
            self._threads.append(t)

    def stop(self, timeout: float = 10.0) -> None:
        super().stop(timeout)
        if self._jobs is not None:
            self._jobs.stop()
        if self._job_pods is not None:
            self._job_pods.stop()
        self.loops.stop(timeout)
        self.fanout.close()
        self.status_writer.stop(timeout)
        self.sender.close()

    def _worker(self) -> None:
        for key in keys_from(self.queue):
            try:
                if not self._stopping.is_set():
                    self.process(key)
            finally:
                self.queue.done(key)

    def process(self, key: str) -> None:
        try:
            with self.key_lock(key):
                if key.startswith(SJ_PREFIX):
                    self.scaled_jobs.reconcile(key)
                else:
                    self.reconciler.reconcile(key)
        except Retry as exc:
            self.metrics.reconciles.labels("retry").inc()
            log.warning("reconcile failed; retrying with backoff", **fields(scaledobject=key, error=str(exc)))
            self.queue.add_rate_limited(key)
            return
        except Exception as exc:  # noqa: BLE001 - one bad ScaledObject never stops the others
            self.metrics.reconciles.labels("error").inc()
            log.exception("reconcile failed; retrying with backoff", **fields(scaledobject=key, error=str(exc)))
            self.queue.add_rate_limited(key)
            return
        self.metrics.reconciles.labels("ok").inc()
        self.queue.forget(key)

    def _tick(self, key: str) -> None:
        if self._stopping.is_set():
            return
        try:
            if key.startswith(SJ_PREFIX):
                self.scaled_jobs.poll(key)
            else:
                self.scale_loop.poll(key)
        except Retry as exc:
            log.warning("scale loop: write failed; next poll retries", **fields(scaledobject=key, error=str(exc)))
        self.metrics.queries.set(self.cache.fetches)

    @contextmanager
    def key_lock(self, key: str) -> Iterator[None]:
        with self._locks_lock:
            lock = self._key_locks.setdefault(key, threading.Lock())
        with lock:
            yield

    # -- state --------------------------------------------------------------------------------------
    def stop_loop(self, key: str, obj: dict) -> None:
        """Cancel the scale loop; KEDA's DeleteScalableObject emits Normal KEDAScalersStopped "Stopped
        scalers watch" only when a loop was running (deletion, pause, a failed check)."""
        running = key in self.loops
        self.loops.cancel(key)
        if running:
            self.recorder.event(obj, "Normal", "KEDAScalersStopped", "Stopped scalers watch", dedupe=False)

    def forget(self, key: str) -> None:
        self.loops.cancel(key)
        state = self.states.pop(key, None)
        if state is not None:
            self.drop_series(state)
        with self._locks_lock:
            self._key_locks.pop(key, None)
        self.status_writer.forget(key)
        if state is not None:
            self.recorder.forget(state.uid)
        self.metrics.loops.set(len(self.loops))

    def drop_series(self, state: SOState) -> None:
        for built in state.triggers:
            labels = scaler_labels(state, built)
            for metric in (self.metrics.scaler_value, self.metrics.scaler_active, self.metrics.scaler_errors):
                try:
                    metric.remove(*labels)
                except KeyError:
                    pass

    def record_poll(self, state: SOState, results: list) -> None:
        """keda_scaler_* for one poll (labels as KEDA's)."""
        for built, r in zip(state.triggers, results):
            if built.spec.is_resource:
                continue
            labels = scaler_labels(state, built)
            if r.error is not None:
                self.metrics.scaler_errors.labels(*labels).inc()
            elif r.value is not None:
                self.metrics.scaler_value.labels(*labels).set(r.value)
            self.metrics.scaler_active.labels(*labels).set(1 if r.active else 0)

    def drop_state(self, key: str) -> None:
        state = self.states.pop(key, None)
        if state is not None:
            self.drop_series(state)
        self.metrics.loops.set(len(self.loops))

    def start_loop(self, key: str, obj: dict, so: Any, pause: Any, target: Resource, status: dict,
                   built: list[BuiltTrigger]) -> None:
        """Install the reconciled state and (re)start the loop: at once for a changed object, jittered
        over the polling interval for the ones found at start (so that they spread out)."""
        old = self.states.get(key)
        running = key in self.loops
        if old is not None and old.uid == so.uid:
            # updated in place, never replaced: the metrics path may hold this state while it counts a
            # failure, and a replacement copied before that count would lose it
            unchanged = old.polling_interval == float(so.polling_interval) and old.generation == so.generation
            with old.lock:
                old.so, old.pause, old.target, old.triggers = so, pause, target, built
                old.target_kind = status.get("scaleTargetKind", "")
                old.generation, old.polling_interval = so.generation, float(so.polling_interval)
            state = old
            if running and unchanged:
                return
        else:
            state = SOState(key=key, uid=so.uid, so=so, pause=pause, target=target,
                            target_kind=status.get("scaleTargetKind", ""), triggers=built,
                            health=dict(status.get("health") or {}), generation=so.generation,
                            polling_interval=float(so.polling_interval))
            self.states[key] = state
        if not running:
            self.recorder.event(obj, "Normal", "KEDAScalersStarted", "Started scalers watch", dedupe=False)
        first = 0.0
        if self.first_tick_jitter and not running:
            at_start = self._started_at is not None and time.monotonic() - self._started_at < 10
            first = random.uniform(0, state.polling_interval if at_start else min(1.0, state.polling_interval))
        self.loops.every(key, state.polling_interval, first)
        self.metrics.loops.set(len(self.loops))

    def rebuild(self, state: SOState, built: BuiltTrigger) -> None:
        fresh = build_trigger(built.spec, state.so.namespace, self.auth_sources(state.so))
        state.triggers = [fresh if b is built else b for b in state.triggers]

    # -- reads --------------------------------------------------------------------------------------
    def auth_sources(self, so: Any) -> AuthSources:
        return self.auth_sources_for(so.namespace, lambda var, container: self._read_env(so, var, container))

    def auth_sources_for(self, namespace: str, env: Any) -> AuthSources:
        return AuthSources(
            trigger_auth=lambda ns, name: self.trigger_auths.store.get(f"{ns}/{name}"),
            cluster_trigger_auth=lambda name: self.cluster_trigger_auths.store.get(name),
            secret=self._read_secret, env=env or (lambda _var, _container: None),
            cluster_object_namespace=self.cluster_object_namespace)

    def _read_secret(self, namespace: str, name: str) -> dict | None:
        try:
            return self.client.get(SECRETS, name, namespace)
        except ApiError as exc:
            if exc.status in (403, 404):
                log.warning("secret for a TriggerAuthentication not readable",
                            **fields(secret=f"{namespace}/{name}", error=str(exc)))
                return None
            raise Retry(f"reading secret {namespace}/{name}: {exc}") from exc

    def _read_env(self, so: Any, var: str, container: str | None) -> str | None:
        inf = self.workloads.get(so.target.kind)
        target = inf.store.get(f"{so.namespace}/{so.target.name}") if inf else None
        containers = ((target or {}).get("spec") or {}).get("containers") or []
        container = container or so.target.env_source_container_name or None
        for c in containers:
            if container and c.get("name") != container:
                continue
            for e in c.get("env") or []:
                if e.get("name") == var and "value" in e:
                    return str(e["value"])
            if not container:
                break
        return None

    def current_replicas(self, state: SOState) -> int | None:
        res = state.target
        inf = self.workloads.get(res.kind) if res in CACHED_TARGETS.values() else None
        if inf is not None:
            obj = inf.store.get(f"{state.so.namespace}/{state.so.target.name}")
            return None if obj is None else int(obj["spec"].get("replicas", 1) or 0)
        try:
            scale = self.client.get(res, state.so.target.name, state.so.namespace, subresource="scale")
        except ApiError:
            return None
        return int((scale.get("spec") or {}).get("replicas") or 0)

    def ready_pods(self, state: SOState) -> int:
        """Running and Ready pods of the target's selector (fallback for Value metrics)."""
        inf = self.workloads.get(state.target.kind)
        target = inf.store.get(f"{state.so.namespace}/{state.so.target.name}") if inf else None
        selector = ((target or {}).get("spec") or {}).get("selector")
        if not selector:
            return 0
        try:
            parse_selector(selector)
            pods = self.client.list(PODS, state.so.namespace)["items"]
        except (ApiError, SelectorError):
            return 0
        return sum(1 for p in pods if matches(selector, (p.get("metadata") or {}).get("labels"))
                   and (p.get("status") or {}).get("phase") == "Running"
                   and any(c.get("type") == "Ready" and c.get("status") == "True"
                           for c in (p.get("status") or {}).get("conditions") or []))

    def set_scale(self, res: Resource, namespace: str, name: str, replicas: int) -> None:
        body = {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": name, "namespace": namespace},
                "spec": {"replicas": int(replicas)}}
        self.client.update(res, body, namespace, subresource="scale")

    # -- the metrics endpoint -----------------------------------------------------------------------
    def scaled_object_metric(self, namespace: str, name: str, metric: str) -> dict:
        """GetScaledObjectMetrics for the adapter (promop.autoscaler.keda.metrics_api)."""
        key = f"{namespace}/{name}"
        state = self.states.get(key)
        if state is None:
            obj = self.scaledobjects.store.get(key)
            if obj is None:
                raise MetricError(404, f"scaledobjects.keda.sh \"{name}\" not found")
            state = self._standby_state(key, obj)
        return self.metric_path.answer(state, metric)

    def last_good(self, namespace: str, name: str) -> dict:
        """The last good values standing in for failing triggers (`promop keda explain`)."""
        state = self.states.get(f"{namespace}/{name}")
        if state is None:
            raise MetricError(404, f"ScaledObject {namespace}/{name} has no scale loop on this replica")
        return {"lastGood": views(state, self.wall())}

    def _standby_state(self, key: str, obj: dict) -> SOState:
        """A state built from the cache for a replica that runs no loop for `key` (a standby behind the
        same Service as the leader, or before the first reconcile): the HPA's request is answered
        all the same, with the health the status last recorded."""
        from promop.keda.spec import KedaSpecError, parse_scaled_object, pause_state

        from promop.keda.status import READY_HPA_NOT_WORKING

        status = obj.get("status") or {}
        ready = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), {})
        # Not ready because of the HPA itself (HPANotWorking: it could not get this metric, e.g. asked
        # before the first poll): the leader answers it from its loop's state, and so must a standby.
        # Refusing would keep the HPA failing, and Ready False, for as long as the Service sends the
        # HPA's requests here.
        if ready.get("status") == "False" and ready.get("reason") != READY_HPA_NOT_WORKING:
            raise MetricError(503, f"ScaledObject {key} is not ready for scaling (see its Ready condition)")
        try:
            so = parse_scaled_object(obj)
            pause = pause_state(so.annotations)
        except KedaSpecError as exc:
            raise MetricError(503, f"ScaledObject {key} is invalid: {exc}") from None
        from promop.autoscaler.keda.resources import target_resource
        from promop.autoscaler.keda.triggers import build_triggers

        return SOState(key=key, uid=so.uid, so=so, pause=pause,
                       target=target_resource(so.target.api_version, so.target.kind),
                       target_kind=status.get("scaleTargetKind", ""),
                       triggers=build_triggers(so, self.auth_sources(so)), health=dict(status.get("health") or {}),
                       polling_interval=float(so.polling_interval))


def scaler_labels(state: SOState, built: BuiltTrigger) -> tuple:
    return (state.so.namespace, built.metric_name, state.so.name, f"{built.spec.type}Scaler",
            str(built.spec.index), "scaledobject")


def _own_namespace() -> str:
    try:
        with open("/var/run/secrets/kubernetes.io/serviceaccount/namespace", encoding="utf-8") as f:
            return f.read().strip() or "keda"
    except OSError:
        return os.environ.get("POD_NAMESPACE") or "keda"
