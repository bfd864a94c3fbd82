"""The plumbing of a workload controller: queue, workers, lifecycle, repair and event routing.

A subclass sets the class attributes (its kind, queue name, thread names), builds its informers
(`self.instances` for the workload objects, `self.statefulsets`, `self.namespaces`) and its
syncer in `__init__` after calling ours, then registers its handlers with `route` and
`route_namespaces`. Hooks it may override: `_reconcile` (what a dequeued key gets), `_take`,
`_queued` and `_retry` (per-key state carried between events and the worker), `_synced_once`
(for `idle`) and `_namespace_keys` (which objects a Namespace label change concerns).

Other operators' objects (--controller-id) are dropped both when queued and when dequeued, so
neither a sync nor a status write ever touches them.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Callable

from prometheus_client import CollectorRegistry

from promop.host.logs import fields
from promop.host.workers import keys_from
from promop.kube.client import KubeClient
from promop.kube.errors import ApiError, NotFound
from promop.kube.informer import Informer
from promop.kube.informer_group import InformerGroup
from promop.kube.shared_informers import SharedInformers
from promop.kube.resources import Resource
from promop.kube.store import Tombstone
from promop.kube.workqueue import RateLimitingQueue
from promop.labelselector import SelectorError, parse_selector
from promop.operator import mapping, ownership, repair
from promop.operator.apply import RetryLater
from promop.operator.metrics import OperatorMetrics

Keys = Callable[[Any], list[str]]


def unwrap(obj: Any) -> dict:
    """The object of an event (a deleted object arrives as a Tombstone)."""
    return obj.obj if isinstance(obj, Tombstone) else obj


def metadata(obj: Any) -> dict:
    return unwrap(obj).get("metadata") or {}


def instance_update_matters(old: dict, new: dict) -> bool:
    """A workload object's update: a resync (same resourceVersion), or a change of generation, labels or
    annotations; our own status writes only bump the resourceVersion, so they do not loop."""
    return not mapping.resource_version_changed(old, new) or mapping.prometheus_update_matters(old, new)


class WorkloadController(InformerGroup):
    """Informers, queue and workers for one kind of workload object (the interface of Controller)."""

    kind: str                      # the workload kind: owner references, Events, log lines
    name: str                      # the queue's name and the controller label of the metrics
    worker_name: str               # worker threads are promop-<worker_name>-worker-<i>
    log: logging.Logger
    max_workers: int | None = None  # a cap on --workers
    repair_recheck: float | None = 60.0  # seconds: an unfinished rollout is looked at again (None: not)
    owner_controller_only = True   # only controller ownerReferences map an owned object to its owner
    namespace_selector_field = ""  # the spec field selecting the namespaces of what it selects

    instances: Informer            # the workload objects
    statefulsets: Informer
    namespaces: Informer
    syncer: Any                    # .tell(obj, reason, note): an Event on a workload object

    def __init__(self, client: KubeClient, options: Any, registry: CollectorRegistry | None,
                 informer_kwargs: dict | None, shared: SharedInformers | None = None) -> None:
        self.client = client
        self.shared = shared  # the process's shared informers (promop.kube.shared_informers), or None
        self.options = options
        self.registry = registry if registry is not None else CollectorRegistry()
        self.metrics: OperatorMetrics | None = None  # set by controllers that export the operator's metrics
        self.queue = RateLimitingQueue(name=self.name, registry=self.registry)
        self.informer_kwargs = {"resync_period": 0, "registry": self.registry, **(informer_kwargs or {})}
        self._workers: list[threading.Thread] = []
        self._stopping = threading.Event()

    @property
    def controller_id(self) -> str:
        return getattr(self.options, "controller_id", "")

    # ---- lifecycle --------------------------------------------------------------------

    def start_workers(self) -> None:
        """Start processing the queue (called at once, or when this replica becomes leader)."""
        if self._workers:
            return
        self._set_ready(1)
        count = max(1, getattr(self.options, "workers", 1))
        for i in range(min(count, self.max_workers or count)):
            t = threading.Thread(target=self._worker, name=f"promop-{self.worker_name}-worker-{i}", daemon=True)
            t.start()
            self._workers.append(t)

    def stop_taking_work(self) -> None:
        """Workers finish the sync they are in and take no more (leadership lost)."""
        self._stopping.set()
        self._set_ready(0)

    def stop(self, timeout: float = 30.0) -> None:
        """Let in-flight syncs finish (the backlog is dropped), then stop the queue, workers and informers."""
        self.stop_taking_work()
        drained = threading.Thread(target=self.queue.shutdown_with_drain, daemon=True)
        drained.start()
        drained.join(timeout)
        self.queue.shutdown()
        for t in self._workers:
            t.join(timeout)
        for inf in self.informers:
            inf.stop()

    def idle(self) -> bool:
        """Every workload object of ours synced at least once, nothing queued, in flight or undelivered."""
        done = all(self._synced_once(k) for k in self.instances.store.keys()
                   if ownership.key_managed(self.instances.store, k, self.controller_id))
        return (done and len(self.queue) == 0 and self.queue.processing() == 0 and self.queue.waiting() == 0
                and all(inf.pending() == 0 for inf in self.informers))

    def _synced_once(self, key: str) -> bool:
        return key in self.syncer.last_report

    def _set_ready(self, value: int) -> None:
        if self.metrics is not None:
            self.metrics.ready.labels(self.name).set(value)

    # ---- workers ----------------------------------------------------------------------

    def _worker(self) -> None:
        for key in keys_from(self.queue):
            if self._stopping.is_set():
                self.queue.done(key)  # stop taking work: the backlog is dropped, in-flight syncs finish
                continue
            self._process(key)

    def _process(self, key: str) -> None:
        """Sync one dequeued key; any failure is retried with backoff, a success repaired (if asked)."""
        q = self.queue
        work = self._take(key)
        if not ownership.key_managed(self.instances.store, key, self.controller_id):
            q.forget(key)  # another operator's (--controller-id): neither reconciled nor its status written
            q.done(key)
            return
        try:
            self._reconcile(key, work)
        except RetryLater as exc:
            self.log.debug("sync deferred; retrying", **fields(key=key, reason=str(exc)))
            self._retry(key, work)
        except Exception as exc:  # noqa: BLE001 - every failure is retried with backoff
            self.log.warning("sync failed; retrying with backoff",
                             **fields(key=key, kind=self.kind, error=str(exc), retries=q.num_requeues(key)))
            self._retry(key, work)
        else:
            q.forget(key)
            self._repair(key)
        finally:
            q.done(key)

    def _take(self, key: str) -> Any:
        """What the events queued for `key` since it was last taken ask for (passed to `_reconcile`)."""
        return None

    def _reconcile(self, key: str, work: Any) -> None:
        self.syncer.sync(key)

    def _retry(self, key: str, work: Any) -> None:
        self.queue.add_rate_limited(key)

    def _repair(self, key: str) -> None:
        """--repair-policy-for-statefulsets: after a sync, unstick the object's StatefulSets (repair.py)."""
        obj, policy = self.instances.store.get(key), getattr(self.options, "repair_policy", "none")
        if policy == "none" or obj is None:
            return
        mine = [s for s in self.statefulsets.store.list() if key in self.owner_keys(s)]
        repair.repair(self.client, mine, policy,
                      lambda note: self.syncer.tell({**obj, "kind": self.kind}, repair.REASON, note))
        if self.repair_recheck is not None and any(repair.rolling(s) for s in mine):
            self.queue.add_after(key, self.repair_recheck)  # a stuck pod changes nothing: look again later

    # ---- event mapping ----------------------------------------------------------------

    def _enqueue(self, keys: list[str], triggered_by: str, action: str, status_only: bool = False) -> None:
        """Queue `keys` (other operators' dropped); `status_only`: only a workload's status changed."""
        keys = ownership.managed_keys(keys, self.instances.store, self.controller_id)
        if not keys:
            return
        if self.metrics is not None:
            self.metrics.triggered.labels(self.name, triggered_by, action).inc()
        for key in keys:
            self._queued(key, status_only)
            self.queue.add(key)

    def _queued(self, key: str, status_only: bool) -> None:
        """`key` is about to be queued for an event (per-key state for `_take`)."""

    def route(self, inf: Informer, kind: str, keys: Keys, update_matters: Callable[[dict, dict], bool],
              on_initial: bool = False, status_only: Callable[[dict, dict], bool] | None = None) -> None:
        """Queue the `keys` of each event of `inf`: updates only when `update_matters`, the objects of the
        initial LIST only when `on_initial`. With `status_only`, an add or an update for which it holds
        asks only for a status refresh (a workload's replicas changed), a delete for a sync."""
        e = self._enqueue

        def on_add(obj: Any, initial: bool) -> None:
            if on_initial or not initial:
                e(keys(obj), kind, "add", status_only=status_only is not None)

        def on_update(old: dict, new: dict) -> None:
            if update_matters(old, new):
                e(keys(new), kind, "update", status_only=status_only is not None and status_only(old, new))

        inf.add_handler(on_add=on_add, on_update=on_update, on_delete=lambda o: e(keys(o), kind, "delete"))

    def route_instances(self) -> None:
        """A workload object's events queue itself (the initial LIST too: every object gets a first sync)."""
        self.route(self.instances, self.kind, self.own_keys, instance_update_matters, on_initial=True)

    def route_namespaces(self) -> None:
        """A Namespace added, relabelled or deleted queues `_namespace_keys` (counted as an update)."""
        def changed(old: Any, new: Any) -> None:
            self._enqueue(self._namespace_keys(old, new), "Namespace", "update")

        self.namespaces.add_handler(on_add=lambda o, initial: None if initial else changed(None, o),
                                    on_update=changed, on_delete=lambda o: changed(o, None))

    def own_keys(self, obj: Any) -> list[str]:
        """The key of a workload object's event, none when another operator manages it (also once deleted)."""
        if not ownership.manages(unwrap(obj), self.controller_id):
            return []
        return [obj.key] if isinstance(obj, Tombstone) else [mapping.key_of(obj)]

    def readers(self, kind: str, obj: Any) -> list[str]:
        """The workload objects whose last sync read this Secret/ConfigMap (the syncer's `references`)."""
        md = metadata(obj)
        me = (kind, md.get("namespace", ""), md.get("name", ""))
        return [k for k, read in list(self.syncer.references.items()) if me in read]

    def owner_keys(self, obj: Any) -> list[str]:
        """The workload objects owning `obj` (a StatefulSet, a generated ConfigMap), by its ownerReferences."""
        md = metadata(obj)
        return [f"{md.get('namespace')}/{r.get('name')}" for r in md.get("ownerReferences") or ()
                if r.get("kind") == self.kind and (r.get("controller") or not self.owner_controller_only)]

    def managed(self) -> list[dict]:
        """The workload objects this operator manages (--controller-id)."""
        return [o for o in self.instances.store.list() if ownership.manages(o, self.controller_id)]

    def namespace_labels(self, namespace: str) -> dict:
        """A namespace's labels, with the kubernetes.io/metadata.name every namespace carries."""
        ns = self.namespaces.store.get(namespace)
        labels = dict(((ns or {}).get("metadata") or {}).get("labels") or {})
        labels.setdefault("kubernetes.io/metadata.name", namespace)
        return labels

    def for_namespace(self, namespace: str) -> list[str]:
        """The workload objects that may select objects of `namespace`: those in it, and those whose
        `namespace_selector_field` matches its labels (an invalid selector matches nothing)."""
        out = []
        for obj in self.managed():
            ns_sel = (obj.get("spec") or {}).get(self.namespace_selector_field)
            if (obj.get("metadata") or {}).get("namespace") == namespace:
                out.append(mapping.key_of(obj))
            elif ns_sel is not None:
                try:
                    if parse_selector(ns_sel).matches(self.namespace_labels(namespace)):
                        out.append(mapping.key_of(obj))
                except SelectorError:
                    continue
        return out

    def _namespace_keys(self, old: Any, new: Any) -> list[str]:
        """A Namespace's labels changed (or it came or went): the objects with a namespace selector."""
        o = (metadata(old).get("labels") if old is not None else None) or {}
        n = (metadata(new).get("labels") if new is not None else None) or {}
        if o == n and old is not None and new is not None:
            return []
        return [mapping.key_of(obj) for obj in self.managed()
                if (obj.get("spec") or {}).get(self.namespace_selector_field) is not None]


def crds_served(client: KubeClient, resources: tuple[Resource, ...], kind: str, log: logging.Logger) -> bool:
    """Are the CRDs of `kind`'s controller installed? Upstream skips the controller (with a warning) when
    they are not, and so do we when the apiserver cannot tell us."""
    noun = "CRD is" if len(resources) == 1 else "CRDs are"
    try:
        for res in resources:
            client.list(res, limit=1)
    except NotFound:
        log.warning(f"the {kind} {noun} not installed; the {kind} controller is not started "
                    "(install crds/ or run with --manage-crds)")
        return False
    except ApiError as exc:
        log.warning(f"cannot check the {kind} {noun.split()[0]}; the {kind} controller is not started",
                    **fields(error=str(exc)))
        return False
    return True
