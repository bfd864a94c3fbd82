"""What every workload syncer does around its own render: skip, measure, write, tell, report status.

`WorkloadSyncer` holds a syncer's common state and steps: the skip checks (gone, being deleted,
paused), the reconcile metrics around an attempt, the owner check before each create (the
workload object may be gone though our cache still has it), counting what the Applier did,
deleting the stale shards of a generated object, Events on the objects, and the status write
that keeps lastTransitionTime and says RetryLater on a conflict. A subclass supplies `_reconcile`
(render and write one object) and names its kind, resource and store.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from promop.host.logs import fields
from promop.kube.client import KubeClient
from promop.kube.errors import ApiError, Conflict, NotFound
from promop.kube.resources import EVENTS, Resource
from promop.operator import feedback
from promop.operator.apply import UNCHANGED, Applier, OwnerGone, RetryLater, owner_check
from promop.operator.metrics import OperatorMetrics
from promop.operator.status import keep_transition_times, now_rfc3339, status_changed
from promop.operator.writer import BY_KIND


@dataclass
class SyncReport:
    """What one sync did: skipped (and why), or the writes per Applier action and the selection counts."""

    key: str
    skipped: str = ""
    writes: int = 0
    actions: dict[str, int] = field(default_factory=dict)
    selected: int = 0
    rejected: int = 0
    error: str = ""

    def count(self, applied: Any) -> None:
        """Count an Applier result (an Applied, or an action string such as "deleted")."""
        action = getattr(applied, "action", applied)
        self.actions[action] = self.actions.get(action, 0) + 1
        if action != UNCHANGED:
            self.writes += 1


def ns_name(obj: Mapping[str, Any]) -> tuple[str, str]:
    md = obj.get("metadata") or {}
    return md.get("namespace") or "", md.get("name") or ""


def resource_version(obj: Mapping[str, Any] | None) -> str:
    return str(((obj or {}).get("metadata") or {}).get("resourceVersion") or "")


def owned_by(obj: Mapping[str, Any], owner: Mapping[str, Any], kind: str) -> bool:
    """Does `obj` carry an ownerReference to `owner` (same uid and kind)?"""
    uid = (owner.get("metadata") or {}).get("uid")
    return any(r.get("uid") == uid and r.get("kind") == kind
               for r in (obj.get("metadata") or {}).get("ownerReferences") or [])


def merge_owners(desired: dict, current: Mapping[str, Any]) -> dict:
    """A Service shared by a namespace's workload objects keeps every one's (non-controller) owner reference."""
    refs = list((current.get("metadata") or {}).get("ownerReferences") or [])
    uids = {r.get("uid") for r in refs}
    refs += [r for r in desired["metadata"].get("ownerReferences") or [] if r.get("uid") not in uids]
    return {**desired, "metadata": {**desired["metadata"], "ownerReferences": refs}}


def stale_shards(objects: Iterable[Mapping[str, Any]], owner: Mapping[str, Any], kind: str, prefix: str,
                 suffix: re.Pattern[str], wanted: set[str]) -> list[str]:
    """Names of the generated shards (`<prefix><suffix>`, e.g. `-rulefiles-3`) in `owner`'s namespace that
    `owner` owns and no longer wants: left behind when the shard count went down."""
    ns = ns_name(owner)[0]
    out = []
    for meta in objects:
        o_ns, o_name = ns_name(meta)
        m = suffix.search(o_name)
        if (o_ns == ns and m and o_name[: m.start()] == prefix and o_name not in wanted
                and owned_by(meta, owner, kind)):
            out.append(o_name)
    return out


class WorkloadSyncer:
    """Reconciles one workload object per call; safe for concurrent calls on different keys."""

    kind: str            # the workload kind ("ThanosRuler")
    resource: Resource   # its API resource (status writes, owner checks, Events)
    controller: str      # the controller label of the metrics
    log: logging.Logger

    def __init__(self, client: KubeClient, stores: Any, options: Any, metrics: OperatorMetrics,
                 namespace_allowed: Callable[[str], bool] = lambda ns: True,
                 now: Callable[[], str] = now_rfc3339) -> None:
        self.client = client
        self.stores = stores
        self.options = options
        self.metrics = metrics
        self.namespace_allowed = namespace_allowed
        self.now = now
        self.applier = Applier(client, on_sts_recreate=lambda: metrics.sts_delete_create.labels(self.controller).inc())
        self.events = feedback.EventDeduper()
        self._lock = threading.Lock()
        self.references: dict[str, set] = {}  # key -> what its last sync read (kind, ns, name) or (ns, name)
        self.last_result: dict[str, Any] = {}
        self.last_report: dict[str, SyncReport] = {}

    def instance(self, key: str) -> dict | None:
        """The workload object `key` in the cache (None: deleted)."""
        raise NotImplementedError

    def sync(self, key: str) -> SyncReport:
        """Reconcile `key`; its report (or "failed") is kept in `last_report`, which `idle` reads."""
        try:
            report = self._sync(key)
        except Exception:
            self.last_report[key] = SyncReport(key, skipped="failed")
            raise
        self.last_report[key] = report
        return report

    def _sync(self, key: str) -> SyncReport:
        obj = self.instance(key)
        if obj is None:
            self._deleted(key)
            return SyncReport(key, skipped="deleted")  # owned objects go by garbage collection
        if (obj.get("metadata") or {}).get("deletionTimestamp"):
            return SyncReport(key, skipped="deleting")
        if (obj.get("spec") or {}).get("paused"):
            self.log.info("paused: no action taken", **fields(key=key))
            return SyncReport(key, skipped="paused")
        return self._reconcile(key, obj)

    def _reconcile(self, key: str, obj: dict) -> SyncReport:
        raise NotImplementedError

    def _deleted(self, key: str) -> None:
        """`key` is gone: drop what we kept about it."""
        with self._lock:
            self.references.pop(key, None)
            self.last_result.pop(key, None)

    def _attempt(self, work: Callable[[], None]) -> tuple[bool, Exception | None]:
        """Run `work` inside the reconcile metrics: (False, None) when the object went away meanwhile,
        else (True, the failure the status reports, if any). RetryLater passes through."""
        started = time.monotonic()
        self.metrics.reconcile_operations.labels(self.controller).inc()
        try:
            work()
        except OwnerGone:
            return False, None
        except RetryLater:
            raise
        except Exception as exc:  # noqa: BLE001 - reported in status, then retried
            self.metrics.reconcile_errors.labels(self.controller).inc()
            return True, exc
        finally:
            self.metrics.reconcile_duration.labels(self.controller).observe(time.monotonic() - started)
        return True, None

    # ---- writes ---------------------------------------------------------------------

    def _owner_check(self, obj: Mapping[str, Any]) -> Callable[[], None]:
        return owner_check(self.client, self.resource, obj)

    def _get(self, res: Resource, name: str, ns: str) -> dict | None:
        try:
            return self.client.get(res, name, ns)
        except NotFound:
            return None

    def _apply_rendered(self, obj: dict, ns: str, check: Callable[[], None], report: SyncReport) -> None:
        """Write one rendered object compared with what a GET returns; a Service is shared by the
        namespace's workload objects, so it keeps the owner references of the others."""
        kind = obj["kind"]
        current = self._get(BY_KIND[kind], obj["metadata"]["name"], ns)
        if kind == "Service" and current is not None:
            obj = merge_owners(obj, current)
        report.count(self.applier.apply(BY_KIND[kind], obj, current, before_create=check))

    def _delete_stale(self, res: Resource, objects: Iterable[Mapping[str, Any]], owner: Mapping[str, Any],
                      prefix: str, suffix: re.Pattern[str], wanted: set[str], report: SyncReport) -> None:
        """Delete the shards of `res` that `owner` no longer wants (see `stale_shards`)."""
        ns = ns_name(owner)[0]
        for name in stale_shards(objects, owner, self.kind, prefix, suffix, wanted):
            if self.applier.delete(res, name, ns):
                report.count("deleted")

    # ---- Events and status ------------------------------------------------------------

    def tell(self, obj: Mapping[str, Any], reason: str, note: str) -> None:
        """A Warning Event on the workload object (what --repair-policy-for-statefulsets did)."""
        self._event(obj, reason, note)

    def _event(self, obj: Mapping[str, Any], reason: str, note: str, kind: str = "",
               api_version: str = "") -> None:
        """A Warning Event on `obj` (the workload object unless `kind` says otherwise), once per note."""
        if not self.events.should_emit(obj, reason, note):
            return
        kind, api_version = kind or self.kind, api_version or self.resource.api_version
        ns, name = ns_name(obj)
        self.log.warning(note, **fields(kind=kind, object=f"{ns}/{name}"))
        try:
            self.client.create(EVENTS, feedback.event_for(obj, api_version, kind, reason, note, "Warning", self.now()),
                               ns)
        except ApiError as exc:
            self.log.warning("cannot record event", **fields(object=f"{ns}/{name}", error=str(exc)))

    def _write_status(self, obj: dict, desired: dict, current: Mapping[str, Any] | None,
                      resource_version: str | None = None) -> dict | None:
        """Write `desired` as `obj`'s status unless `current` already says it (lastTransitionTime kept from
        `current` where a condition's status holds); over `resource_version` when given. The server's
        answer, or None when nothing was written (unchanged, or the object is gone)."""
        ns, name = ns_name(obj)
        desired = {**desired, "conditions": keep_transition_times((current or {}).get("conditions"),
                                                                  desired["conditions"])}
        if not status_changed(current, desired):
            return None
        self.metrics.status_updates.labels(self.controller).inc()
        body = {**obj, "status": desired}
        if resource_version is not None:
            body["metadata"] = {**obj["metadata"], "resourceVersion": resource_version}
        try:
            return self.client.update(self.resource, body, subresource="status")
        except Conflict:
            raise RetryLater(f"status of {self.kind} {ns}/{name}: our cached copy is outdated") from None
        except NotFound:
            return None
        except ApiError:
            self.metrics.status_update_errors.labels(self.controller).inc()
            raise
