"""The recommender controller: informers feed the model and the queue, the queue feeds `sync`.

- At start (once leading): history from Prometheus, or, when Prometheus cannot answer, the checkpoints.
- Every --recommender-interval: fresh samples (Prometheus or metrics.k8s.io) into the model, every VPA
  queued; `sync` computes its recommendation with the pure model and patches status only when it differs.
- Then checkpoints (oldest written first, within --checkpoints-timeout), and every
  --checkpoints-gc-interval the checkpoints of VPAs that no longer exist are deleted.
- Pod updates bring OOM kills (lastState.terminated.reason OOMKilled) into the model at once.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable

from prometheus_client import CollectorRegistry

from promop.host.logs import fields
from promop.host.workers import QueueController
from promop.kube.errors import AlreadyExists, ApiError, NotFound
from promop.kube.informer import Informer
from promop.kube.resources import PODS, Resource
from promop.kube.store import Tombstone
from promop.kube.workqueue import RateLimitingQueue
from promop.recommender.history import load_history
from promop.recommender.metrics import make_metrics
from promop.recommender.options import Options
from promop.recommender.targets import OwnerCache, TargetError, resolve_target
from promop.vpa.cluster import ClusterState
from promop.quantity import int_value
from promop.vpa.recommend import ContainerPolicy, container_policy, recommend
from promop.vpa.state import AggregateContainerState
from promop.vpa.timeutil import format_time, parse_time

log = logging.getLogger("promop.recommender")

GROUP = "autoscaling.k8s.io"
VPAS = Resource(GROUP, "v1", "verticalpodautoscalers", kind="VerticalPodAutoscaler")
CHECKPOINTS = Resource(GROUP, "v1", "verticalpodautoscalercheckpoints", kind="VerticalPodAutoscalerCheckpoint")
METRICS_PODS = Resource("metrics.k8s.io", "v1beta1", "pods", kind="PodMetrics")


def policies_of(vpa: dict) -> list[ContainerPolicy]:
    """resourcePolicy.containerPolicies[] as ContainerPolicy; ValueError names the field."""
    out = []
    for i, spec in enumerate((((vpa.get("spec") or {}).get("resourcePolicy") or {}).get("containerPolicies")
                              or [])):
        out.append(ContainerPolicy.from_spec(spec or {}, where=f"spec.resourcePolicy.containerPolicies[{i}]"))
    return out


class Recommender(QueueController):
    def __init__(self, client: Any, options: Options, registry: CollectorRegistry | None = None, *,
                 prom_client: Any = None, clock: Callable[[], float] = time.time,
                 informer_kwargs: dict | None = None) -> None:
        self.client = client
        self.options = options
        self.registry = registry if registry is not None else CollectorRegistry()
        self.metrics = make_metrics(self.registry)
        self.clock = clock
        self.model = ClusterState(options.model)
        self.lock = threading.RLock()
        if prom_client is None:
            from promop.prom.client import PrometheusClient

            prom_client = PrometheusClient(options.history.prometheus_address, timeout=options.prometheus_timeout,
                                           retries=1)
        self.prom = prom_client
        ns = options.vpa_object_namespace or None
        kw = dict(informer_kwargs or {})
        self.vpas = Informer(client, VPAS, namespace=ns, registry=self.registry, **kw)
        self.pods = Informer(client, PODS, namespace=ns, registry=self.registry, **kw)
        self.informers = [self.vpas, self.pods]
        self.queue = RateLimitingQueue(name="recommender", registry=self.registry)
        self.owners = OwnerCache(client)
        self.targets: dict[str, tuple[Any, str]] = {}          # vpa key -> (selector or None, error)
        self.initial: dict[str, dict[str, AggregateContainerState]] = {}   # from checkpoints
        self.checkpoint_written: dict[str, float] = {}
        self.seen_ooms: set[tuple[str, str, str]] = set()
        self.history_source = ""
        self.bootstrapped = threading.Event()
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._last_gc = 0.0
        self._inflight = 0
        self._inflight_lock = threading.Lock()
        self.vpas.add_handler(self._vpa_added, self._vpa_updated, self._vpa_deleted)
        self.pods.add_handler(self._pod_added, self._pod_updated, self._pod_deleted)

    # ---- lifecycle ------------------------------------------------------------------

    def readiness(self) -> tuple[bool, str]:
        """Ready once the caches hold their first LIST and the history is loaded."""
        synced, why = super().readiness()
        if not synced:
            return False, why
        if not self.bootstrapped.is_set():
            return False, "loading history"
        return True, ""

    def start_workers(self) -> None:
        """Bootstrap the model, then run the loop and the workers (call once leading)."""
        t = threading.Thread(target=self._main, name="recommender-loop", daemon=True)
        t.start()
        self._threads.append(t)

    def _main(self) -> None:
        self.bootstrap()
        for i in range(max(1, self.options.workers)):
            t = threading.Thread(target=self._worker, name=f"recommender-worker-{i}", daemon=True)
            t.start()
            self._threads.append(t)
        while not self._stopping.is_set():
            started = time.monotonic()
            try:
                self.run_once()
            except Exception:  # one bad round must not end the loop
                log.exception("recommender round failed")
            self._stopping.wait(max(0.0, self.options.interval - (time.monotonic() - started)))

    # ---- bootstrap: history or checkpoints -------------------------------------------

    def bootstrap(self) -> None:
        from promop.prom.client import PromError

        now = self.clock()
        t = time.monotonic()
        live = {(p["metadata"].get("namespace", ""), p["metadata"]["name"]): p["metadata"].get("labels") or {}
                for p in self.pods.store.list()}
        try:
            with self.lock:
                stats = load_history(self.prom, self.options.history, self.model, now, live,
                                     chunk_steps=self.options.history_chunk_steps)
            self.history_source = "prometheus"
            self.metrics.samples.labels("history").inc(stats.samples)
            log.info("history loaded from Prometheus", **fields(pods=stats.pods, containers=stats.containers,
                                                            samples=stats.samples,
                                                            seconds=round(time.monotonic() - t, 2)))
        except PromError as exc:
            self.metrics.source_errors.labels("prometheus").inc()
            log.warning("Prometheus history unavailable; resuming from checkpoints", **fields(error=str(exc)))
            n = self.load_checkpoints()
            self.history_source = "checkpoints"
            log.info("checkpoints loaded", **fields(count=n))
        self.metrics.execution_latency.labels("bootstrap").observe(time.monotonic() - t)
        self.bootstrapped.set()

    def load_checkpoints(self) -> int:
        n = 0
        ns = self.options.vpa_object_namespace or None
        try:
            items = self.client.list(CHECKPOINTS, ns).get("items") or []
        except ApiError as exc:
            log.warning("cannot list checkpoints", **fields(error=str(exc)))
            return 0
        for cp in items:
            meta, spec = cp.get("metadata") or {}, cp.get("spec") or {}
            key = f"{meta.get('namespace')}/{spec.get('vpaObjectName')}"
            if self.vpas.store.get_by_key(key) is None:
                continue
            try:
                state = AggregateContainerState.from_checkpoint(cp.get("status") or {}, self.options.model)
            except (ValueError, KeyError) as exc:
                log.warning("checkpoint skipped", **fields(checkpoint=f"{meta.get('namespace')}/{meta.get('name')}",
                                                        error=str(exc)))
                continue
            with self.lock:
                self.initial.setdefault(key, {})[spec.get("containerName") or ""] = state
            n += 1
        return n

    # ---- informer handlers ----------------------------------------------------------------

    def _for_us(self, vpa: dict) -> bool:
        names = [r.get("name") for r in (vpa.get("spec") or {}).get("recommenders") or []]
        return not names or self.options.recommender_name in names

    def _vpa_added(self, vpa: dict, _initial: bool = False) -> None:
        self._register(vpa)

    def _vpa_updated(self, old: dict, new: dict) -> None:
        if (old.get("spec") or {}) != (new.get("spec") or {}) or old.get("metadata", {}).get("generation") != \
                new.get("metadata", {}).get("generation"):
            self._register(new)

    def _register(self, vpa: dict, enqueue: bool = True) -> None:
        key = _key(vpa)
        ns = vpa["metadata"].get("namespace", "")
        try:
            selector = resolve_target(self.client, ns, (vpa.get("spec") or {}).get("targetRef") or {})
            self.targets[key] = (selector, "")
            with self.lock:
                self.model.set_vpa(key, ns, selector.matches)
        except TargetError as exc:
            self.targets[key] = (None, str(exc))
            with self.lock:
                self.model.delete_vpa(key)
        if enqueue:
            self.queue.add(key)

    def _vpa_deleted(self, obj: dict | Tombstone) -> None:
        vpa = obj.obj if isinstance(obj, Tombstone) else obj
        key = _key(vpa)
        with self.lock:
            self.model.delete_vpa(key)
            self.initial.pop(key, None)
        self.targets.pop(key, None)
        self.checkpoint_written.pop(key, None)
        self.delete_checkpoints_of(vpa["metadata"].get("namespace", ""), vpa["metadata"]["name"])

    def _pod_added(self, pod: dict, _initial: bool = False) -> None:
        self._observe_pod(pod)

    def _pod_updated(self, old: dict, new: dict) -> None:
        self._observe_pod(new)

    def _pod_deleted(self, obj: dict | Tombstone) -> None:
        pod = obj.obj if isinstance(obj, Tombstone) else obj
        with self.lock:
            self.model.delete_pod(pod["metadata"].get("namespace", ""), pod["metadata"]["name"])

    def _observe_pod(self, pod: dict) -> None:
        meta = pod.get("metadata") or {}
        ns, name = meta.get("namespace", ""), meta.get("name", "")
        now = self.clock()
        requests = {c.get("name"): ((c.get("resources") or {}).get("requests") or {})
                    for c in (pod.get("spec") or {}).get("containers") or []}
        with self.lock:
            self.model.add_or_update_pod(ns, name, meta.get("labels") or {}, now,
                                         (pod.get("status") or {}).get("phase") or "Unknown")
            for cname in requests:
                self.model.container(ns, name, cname, now)
            for st in (pod.get("status") or {}).get("containerStatuses") or []:
                term = ((st.get("lastState") or {}).get("terminated") or {})
                if term.get("reason") != "OOMKilled" or not term.get("finishedAt"):
                    continue
                seen = (meta.get("uid") or f"{ns}/{name}", st.get("name", ""), term["finishedAt"])
                if seen in self.seen_ooms:
                    continue
                self.seen_ooms.add(seen)
                try:
                    request = int_value(requests.get(st.get("name"), {}).get("memory") or 0)
                    t = parse_time(term["finishedAt"])
                except ValueError:
                    continue
                c = self.model.container(ns, name, st.get("name", ""), now)
                if c.record_oom(t, request):
                    self.metrics.ooms.inc()
                    log.info("OOM kill recorded", **fields(pod=f"{ns}/{name}", container=st.get("name"),
                                                        memory_request=request))

    # ---- the loop ---------------------------------------------------------------------------

    def run_once(self) -> None:
        """One round: fresh samples, queue every VPA, wait for the workers, checkpoints, GC."""
        now = self.clock()
        t = time.monotonic()
        self.fetch_fresh_samples(now)
        self.metrics.execution_latency.labels("LoadMetrics").observe(time.monotonic() - t)
        t = time.monotonic()
        for key in self.vpas.store.keys():
            self.queue.add(key)
        deadline = time.monotonic() + max(5.0, self.options.interval)
        while (len(self.queue) or self._processing()) and time.monotonic() < deadline and not self._stopping.is_set():
            time.sleep(0.02)
        self.metrics.execution_latency.labels("UpdateVPAs").observe(time.monotonic() - t)
        self.observe_vpa_counts()
        t = time.monotonic()
        self.write_checkpoints(now)
        self.metrics.execution_latency.labels("MaintainCheckpoints").observe(time.monotonic() - t)
        if now - self._last_gc >= self.options.checkpoints_gc_interval:
            self._last_gc = now
            self.garbage_collect_checkpoints()
            with self.lock:
                self.model.garbage_collect(now)
                self.metrics.aggregate_states.set(len(self.model.aggregates))

    def observe_vpa_counts(self) -> None:
        counts: dict[tuple[str, str, str], int] = {}
        for vpa in self.vpas.store.list():
            conds = {c.get("type"): c.get("status") for c in (vpa.get("status") or {}).get("conditions") or []}
            k = (str(conds.get("RecommendationProvided") == "True").lower(),
                 str(conds.get("NoPodsMatched") != "True").lower(),
                 str(conds.get("ConfigUnsupported") == "True").lower())
            counts[k] = counts.get(k, 0) + 1
        self.metrics.vpa_objects.clear()
        for k, n in counts.items():
            self.metrics.vpa_objects.labels(*k).set(n)
        with self.lock:
            self.metrics.aggregate_states.set(len(self.model.aggregates))

    def _processing(self) -> bool:
        with self._inflight_lock:
            return self._inflight > 0

    def fetch_fresh_samples(self, now: float) -> int:
        if self.options.metrics_source == "metrics-api":
            return self._fresh_from_metrics_api(now)
        from promop.prom.client import PromError
        from promop.recommender.history import container_key, to_amounts

        h = self.options.history
        queries = ((f"rate(container_cpu_usage_seconds_total{{{h.pod_selector()}}}"
                    f"[{self.options.live_cpu_rate_window}])", "cpu"),
                   (f"container_memory_working_set_bytes{{{h.pod_selector()}}}", "memory"))
        n = 0
        for query, kind in queries:
            try:
                result = self.prom.query_vector(query, now)
            except PromError as exc:
                self.metrics.source_errors.labels("prometheus").inc()
                log.warning("fresh samples unavailable", **fields(error=str(exc)))
                return n
            with self.lock:
                for s in result:
                    key = container_key(h, s.labels)
                    if key is None:
                        continue
                    amounts = to_amounts([(s.timestamp, s.value)], kind)
                    if not amounts:
                        continue
                    c = self.model.container(key[0], key[1], key[2], now)
                    n += c.add_cpu_samples(amounts) if kind == "cpu" else c.add_memory_samples(amounts)
        self.metrics.samples.labels("prometheus").inc(n)
        return n

    def _fresh_from_metrics_api(self, now: float) -> int:
        from promop.quantity import milli_value

        try:
            items = self.client.list(METRICS_PODS, self.options.vpa_object_namespace or None).get("items") or []
        except ApiError as exc:
            self.metrics.source_errors.labels("metrics-api").inc()
            log.warning("metrics.k8s.io unavailable", **fields(error=str(exc)))
            return 0
        n = 0
        with self.lock:
            for item in items:
                meta = item.get("metadata") or {}
                try:
                    t = parse_time(item.get("timestamp"))
                except ValueError:
                    continue
                for c in item.get("containers") or []:
                    usage = c.get("usage") or {}
                    cs = self.model.container(meta.get("namespace", ""), meta.get("name", ""), c.get("name", ""), now)
                    try:
                        if "cpu" in usage:
                            n += cs.add_cpu_sample(milli_value(usage["cpu"]), t)
                        if "memory" in usage:
                            n += cs.add_memory_sample(int_value(usage["memory"]), t)
                    except ValueError:
                        continue
        self.metrics.samples.labels("metrics-api").inc(n)
        return n

    # ---- sync: one VPA ----------------------------------------------------------------------

    def _worker(self) -> None:
        while True:
            key, shutdown = self.queue.get()
            if shutdown:
                return
            if key is None:
                continue
            with self._inflight_lock:
                self._inflight += 1
            try:
                self.sync(key)
                self.queue.forget(key)
            except ApiError as exc:
                log.warning("status write failed; will retry", **fields(vpa=key, error=str(exc)))
                self.queue.add_rate_limited(key)
            except Exception:
                log.exception("sync failed", **fields(vpa=key))
                self.queue.add_rate_limited(key)
            finally:
                self.queue.done(key)
                with self._inflight_lock:
                    self._inflight -= 1

    def states_of(self, key: str, shared: bool = False) -> dict[str, AggregateContainerState]:
        """Per container, the VPA's aggregates merged, plus what its checkpoints restored: copies, or with
        `shared` possibly the live aggregates (read them only while holding the lock)."""
        with self.lock:
            states = self.model.vpa_aggregates(key, shared=shared)
            for cname, init in self.initial.get(key, {}).items():
                if cname not in states:
                    states[cname] = AggregateContainerState(self.options.model)
                elif shared:
                    states[cname] = states[cname].copy()
                states[cname].merge(init)
        return states

    def compute(self, key: str, vpa: dict) -> tuple[dict, list, dict]:
        """(recommendations by container, policies, states by container) for one VPA, from the model, under
        the model's lock (the states may be the live aggregates). ValueError names a bad resourcePolicy field."""
        policies = policies_of(vpa)
        with self.lock:
            states = self.states_of(key, shared=True)
            return recommend(states, policies, self.options.model), policies, states

    def apply_intake_overrides(self, key: str, vpa: dict) -> None:
        """Per-VPA oomBumpUpRatio, oomMinBumpUp and memory aggregation interval for the containers it matches
        (upstream's PerVPAConfig): they change how later samples and OOMs are taken in."""
        policies = policies_of(vpa)
        if not policies:
            return
        ns = vpa["metadata"].get("namespace", "")
        with self.lock:
            entry = self.model._vpas.get(key)
            if entry is None:
                return
            for pod in self.model.matching_pods(ns, entry[1]):
                for cname, c in pod.containers.items():
                    p = container_policy(cname, policies)
                    c.config = p.intake_config(self.options.model) if p is not None else self.options.model

    def matched_pods(self, key: str, vpa: dict) -> int:
        selector, _ = self.targets.get(key, (None, ""))
        if selector is None:
            return 0
        ns = vpa["metadata"].get("namespace", "")
        ref = (vpa.get("spec") or {}).get("targetRef") or {}
        count = 0
        for pod in self.pods.store.by_index("namespace", ns):
            meta = pod.get("metadata") or {}
            if not selector.matches(meta.get("labels") or {}):
                continue
            top = self.owners.top_controller(pod)
            # The pod's chain must end at the target; a chain we cannot read counts by the selector alone.
            if top is None or top == (ref.get("kind"), ref.get("name")) or top[0] in ("ReplicaSet", "Job"):
                count += 1
        return count

    def sync(self, key: str) -> None:
        vpa = self.vpas.store.get_by_key(key)
        if vpa is None or not self._for_us(vpa):
            return
        if key not in self.targets or self.targets[key][0] is None:
            self._register(vpa, enqueue=False)   # e.g. the target was created after the VPA
        selector, target_error = self.targets.get(key, (None, ""))
        ns, name = vpa["metadata"].get("namespace", ""), vpa["metadata"]["name"]
        try:
            recs = self.compute(key, vpa)[0]
            policy_error = ""
        except ValueError as exc:
            recs, policy_error = {}, str(exc)
        if not policy_error:
            self.apply_intake_overrides(key, vpa)
        pods = self.matched_pods(key, vpa)
        status = self.desired_status(vpa, recs, pods, target_error or policy_error)
        current = vpa.get("status") or {}
        if _comparable(current) == _comparable(status):
            return
        body = {"status": {"recommendation": status.get("recommendation"), "conditions": status["conditions"]}}
        try:
            self.client.patch(VPAS, name, body, ns, patch_type="merge", subresource="status")
        except NotFound:
            return
        except ApiError:
            self.metrics.status_updates.labels("error").inc()
            raise
        self.metrics.status_updates.labels("ok").inc()
        if recs and not (current.get("recommendation") or {}).get("containerRecommendations"):
            created = vpa["metadata"].get("creationTimestamp")
            if created:
                try:
                    self.metrics.recommendation_latency.observe(max(0.0, self.clock() - parse_time(created)))
                except ValueError:
                    pass
        log.info("recommendation written", **fields(vpa=key, containers=",".join(sorted(recs)) or "-", pods=pods))

    def desired_status(self, vpa: dict, recs: dict, pods: int, config_error: str) -> dict:
        now = format_time(self.clock())
        old = {c.get("type"): c for c in (vpa.get("status") or {}).get("conditions") or []}

        def cond(ctype: str, status: str, reason: str = "", message: str = "") -> dict:
            prev = old.get(ctype) or {}
            c = {"type": ctype, "status": status,
                 "lastTransitionTime": prev.get("lastTransitionTime") if prev.get("status") == status else now}
            if reason:
                c["reason"] = reason
            if message:
                c["message"] = message
            return c

        conditions = []
        if config_error:
            conditions.append(cond("ConfigUnsupported", "True", "ConfigUnsupported", config_error))
        if pods == 0:
            reason, msg = "NoPodsMatched", "No pods match this VPA object"
            conditions.append(cond("NoPodsMatched", "True", reason, msg))
        else:
            reason, msg = "", ""
        if recs:
            conditions.append(cond("RecommendationProvided", "True"))
        else:
            conditions.append(cond("RecommendationProvided", "False", reason, msg))
        rec = {"containerRecommendations": [recs[n].as_status() for n in sorted(recs)]} if recs else None
        return {"recommendation": rec, "conditions": conditions}

    # ---- checkpoints ---------------------------------------------------------------------------

    def write_checkpoints(self, now: float) -> int:
        """Oldest-written VPAs first, until --checkpoints-timeout (at least --min-checkpoints VPAs)."""
        deadline = time.monotonic() + self.options.checkpoints_timeout
        keys = sorted(self.vpas.store.keys(), key=lambda k: self.checkpoint_written.get(k, 0.0))
        written = 0
        for i, key in enumerate(keys):
            if time.monotonic() > deadline and i >= self.options.min_checkpoints:
                break
            vpa = self.vpas.store.get_by_key(key)
            if vpa is None or not self._for_us(vpa):
                continue
            ns, name = vpa["metadata"].get("namespace", ""), vpa["metadata"]["name"]
            with self.lock:
                states = self.states_of(key)
                entry = self.model._vpas.get(key)
                if entry is not None:
                    match = entry[1]
                    # The ongoing interval's peak is left out, so a restore does not count it twice.
                    for pod in self.model.matching_pods(ns, match):
                        for cname, c in pod.containers.items():
                            if cname in states:
                                c.subtract_current_peak(states[cname], now)
                saved = {cname: s.save() for cname, s in states.items()}
            for cname, status in saved.items():
                status["lastUpdateTime"] = format_time(now)
                body = {"apiVersion": f"{GROUP}/v1", "kind": "VerticalPodAutoscalerCheckpoint",
                        "metadata": {"name": f"{name}-{cname}", "namespace": ns},
                        "spec": {"vpaObjectName": name, "containerName": cname}, "status": status}
                try:
                    self._put_checkpoint(ns, body)
                    written += 1
                    self.metrics.checkpoints_written.labels("ok").inc()
                except ApiError as exc:
                    self.metrics.checkpoints_written.labels("error").inc()
                    log.warning("checkpoint write failed", **fields(checkpoint=f"{ns}/{name}-{cname}", error=str(exc)))
            self.checkpoint_written[key] = now
        return written

    def _put_checkpoint(self, ns: str, body: dict) -> None:
        try:
            self.client.create(CHECKPOINTS, body, ns)
        except AlreadyExists:
            ops = [{"op": "add", "path": "/spec", "value": body["spec"]},
                   {"op": "add", "path": "/status", "value": body["status"]}]
            self.client.patch(CHECKPOINTS, body["metadata"]["name"], ops, ns, patch_type="json")

    def delete_checkpoints_of(self, ns: str, vpa_name: str) -> int:
        try:
            items = self.client.list(CHECKPOINTS, ns).get("items") or []
        except ApiError as exc:
            log.warning("cannot list checkpoints", **fields(namespace=ns, error=str(exc)))
            return 0
        n = 0
        for cp in items:
            if (cp.get("spec") or {}).get("vpaObjectName") == vpa_name:
                n += self._delete_checkpoint(cp)
        return n

    def garbage_collect_checkpoints(self) -> int:
        """Delete checkpoints whose VPA does not exist (only with a synced VPA cache)."""
        if not self.vpas.has_synced():
            return 0
        try:
            items = self.client.list(CHECKPOINTS, self.options.vpa_object_namespace or None).get("items") or []
        except ApiError as exc:
            log.warning("cannot list checkpoints", **fields(error=str(exc)))
            return 0
        n = 0
        for cp in items:
            key = f"{cp['metadata'].get('namespace')}/{(cp.get('spec') or {}).get('vpaObjectName')}"
            if self.vpas.store.get_by_key(key) is None:
                n += self._delete_checkpoint(cp)
        return n

    def _delete_checkpoint(self, cp: dict) -> int:
        meta = cp.get("metadata") or {}
        try:
            self.client.delete(CHECKPOINTS, meta["name"], meta.get("namespace"))
        except NotFound:
            return 0
        except ApiError as exc:
            log.warning("checkpoint delete failed", **fields(checkpoint=f"{meta.get('namespace')}/{meta.get('name')}",
                                                          error=str(exc)))
            return 0
        self.metrics.checkpoints_deleted.inc()
        log.info("checkpoint deleted (its VPA is gone)", **fields(checkpoint=f"{meta.get('namespace')}/{meta['name']}"))
        return 1


def _key(obj: dict) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def _comparable(status: dict) -> tuple:
    conds = tuple(sorted((c.get("type"), c.get("status"), c.get("reason", ""), c.get("message", ""))
                         for c in status.get("conditions") or []))
    return (status.get("recommendation") or None, conds)
