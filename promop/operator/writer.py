"""Writing one Prometheus's rendered objects, only where they differ from what the API holds.

Order (upstream's): rule ConfigMaps (changed ones first, then stale ones deleted); the config
Secret, TLS asset Secrets and other Secrets, stale TLS asset Secrets deleted; the governing
Service; one StatefulSet per shard, then excess shards deleted.

Secrets and ConfigMaps are cached as metadata only: when the cache shows the version the
WriteLog has for the same wanted content, nothing can differ and not even a GET is made;
otherwise the object is read and compared (promop.operator.diff). StatefulSets are compared
with the cache. After a restart the WriteLog is empty, so every object is compared with the API.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from promop.kube.client import KubeClient
from promop.kube.errors import NotFound
from promop.kube.resources import (CONFIGMAPS, PROMETHEUSES, ROLEBINDINGS, ROLES, SECRETS, SERVICES, STATEFULSETS,
                                   Resource)
from promop.operator.apply import CREATED, DELETED, RECREATED, UNCHANGED, UPDATED, Applier, RetryLater, owner_check
from promop.operator import shard_retention
from promop.operator.diff import input_hash
from promop.operator.writelog import NOTHING, WriteLog
from promop.render import fast_reload, split
from promop.render.model import RenderResult

BY_KIND: dict[str, Resource] = {
    "Secret": SECRETS, "ConfigMap": CONFIGMAPS, "Service": SERVICES, "StatefulSet": STATEFULSETS,
    "Role": ROLES, "RoleBinding": ROLEBINDINGS,  # fast reload (promop/render/fast_reload.py)
}
_TLS_SHARD = re.compile(r"-tls-assets-\d+$")
_STS_SHARD = re.compile(r"^(?:-shard-\d+)?$")


@dataclass
class Writes:
    """What one sync wrote: action -> count, and `Kind name` per object written."""

    actions: dict[str, int] = field(default_factory=dict)
    objects: list[str] = field(default_factory=list)

    def count(self, action: str, kind: str = "", name: str = "") -> None:
        self.actions[action] = self.actions.get(action, 0) + 1
        if action != UNCHANGED and kind:
            self.objects.append(f"{action} {kind} {name}")

    @property
    def total(self) -> int:
        return sum(n for a, n in self.actions.items() if a != UNCHANGED)


def key_of(obj: Mapping[str, Any]) -> tuple[str, str]:
    md = obj.get("metadata") or {}
    return md.get("namespace") or "", md.get("name") or ""


def fingerprint(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def owned_by(obj: Mapping[str, Any], prom: Mapping[str, Any]) -> bool:
    uid = (prom.get("metadata") or {}).get("uid")
    return any(r.get("uid") == uid and r.get("kind") == "Prometheus"
               for r in (obj.get("metadata") or {}).get("ownerReferences") or [])


class ConfigWriter:
    """Writes the config objects of a RenderResult; reads the metadata caches in `stores`."""

    def __init__(self, client: KubeClient, stores: Any, writelog: WriteLog,
                 on_sts_recreate: Callable[[], None] | None = None, shard_retention: bool = True,
                 clock: Callable[[], _dt.datetime] | None = None) -> None:
        self.client = client
        self.shard_retention = shard_retention  # the PrometheusShardRetentionPolicy gate
        self.clock = clock or (lambda: _dt.datetime.now(_dt.timezone.utc))
        self.stores = stores
        self.log = writelog
        self.applier = Applier(client, on_sts_recreate=on_sts_recreate)

    def write(self, prom: dict, result: RenderResult) -> Writes:
        writes = Writes()
        ns, _ = key_of(prom)
        check = self._owner_check(prom)
        self._rule_configmaps(prom, result.rule_configmaps, writes, check)
        desired_secret_names = set()
        for obj in result.objects():
            kind = obj.get("kind")
            if kind == "Secret":
                desired_secret_names.add(obj["metadata"]["name"])
            if kind in ("ConfigMap", "StatefulSet"):
                continue
            if obj is result.config_secret and getattr(result, "config_unmanaged", False):
                # unmanaged config: the user owns the Secret; we only create it when absent
                if self._get(SECRETS, obj["metadata"]["name"], ns) is None:
                    applied = self.applier.apply(SECRETS, obj, None, before_create=check)
                    writes.count(applied.action, "Secret", obj["metadata"]["name"])
                continue
            self._apply_known(BY_KIND[kind], obj, writes, check)
        self._delete_stale_tls(prom, desired_secret_names, writes)
        self._delete_stale_parts(prom, desired_secret_names, writes)
        was_fast = self._pods_read_through_api(prom)
        self._statefulsets(prom, result.statefulsets, writes, check)
        if was_fast and not result.reloader_rbac:
            self._delete_reloader_rbac(prom, writes)
        return writes

    def forget(self, namespace: str, name: str) -> None:
        """The Prometheus is gone: drop the records of the objects it owned."""
        prefix = f"prometheus-{name}"
        self.log.forget(lambda k: k[0] in BY_KIND and k[1] == namespace and str(k[2]).startswith(prefix))

    # ---- helpers ------------------------------------------------------------------------

    def _owner_check(self, prom: dict) -> Callable[[], None]:
        """Run before each create: is this Prometheus (same uid) still there? (apply.owner_check)"""
        return owner_check(self.client, PROMETHEUSES, prom)

    def _meta_store(self, res: Resource) -> Any:
        return {"Secret": self.stores.secrets, "ConfigMap": self.stores.configmaps}.get(res.kind)

    def _apply_known(self, res: Resource, obj: dict, writes: Writes, check: Callable[[], None]) -> None:
        """Apply `obj`, skipping even the GET when the metadata cache shows the version we last wrote
        or compared with, and `obj` is what we wanted then (so nothing can differ)."""
        ns, name = key_of(obj)
        key = (res.kind, ns, name)
        content = fingerprint(obj)
        store = self._meta_store(res)
        meta = store.get(f"{ns}/{name}") if store is not None else None
        if meta is not None and self.log.matches(key, meta, content):
            writes.count(UNCHANGED)
            return
        with self.log.writing(key):
            current = self._get(res, name, ns)
            applied = self.applier.apply(res, obj, current, before_create=check)
            if applied.action == UNCHANGED:
                self.log.matched(key, current, content)
            else:
                self.log.wrote(key, applied.before, applied.after, content)
        writes.count(applied.action, res.kind, name)

    def _rule_configmaps(self, prom: dict, desired: list[dict], writes: Writes, check: Callable[[], None]) -> None:
        """Changed ConfigMaps first, then stale ones deleted (upstream's order).

        The metadata cache says which exist; content is read only for those that may differ."""
        ns, name = key_of(prom)
        cached = {key_of(o)[1] for o in self.stores.configmaps.list()
                  if key_of(o)[0] == ns and ((o.get("metadata") or {}).get("labels") or {}).get("prometheus-name") == name
                  and owned_by(o, prom)}
        for obj in desired:
            self._apply_known(CONFIGMAPS, obj, writes, check)
        wanted = {o["metadata"]["name"] for o in desired}
        for stale in sorted(cached - wanted):
            if self._delete(CONFIGMAPS, stale, ns):
                writes.count(DELETED, "ConfigMap", stale)

    def _delete_stale_tls(self, prom: dict, desired: set[str], writes: Writes) -> None:
        ns, name = key_of(prom)
        prefix = f"prometheus-{name}"
        for obj in self.stores.secrets.list():
            o_ns, o_name = key_of(obj)
            match = _TLS_SHARD.search(o_name)
            if (o_ns == ns and match and o_name[: match.start()] == prefix
                    and o_name not in desired and owned_by(obj, prom)):
                if self._delete(SECRETS, o_name, ns):
                    writes.count(DELETED, "Secret", o_name)

    def _delete_stale_parts(self, prom: dict, desired: set[str], writes: Writes) -> None:
        """Config part Secrets (promop.render.split) no longer wanted: the config shrank, or fits one Secret."""
        ns, _ = key_of(prom)
        for obj in self.stores.secrets.list():
            o_ns, o_name = key_of(obj)
            if (o_ns == ns and o_name not in desired and split.part_index(prom, o_name) is not None
                    and owned_by(obj, prom)):
                if self._delete(SECRETS, o_name, ns):
                    writes.count(DELETED, "Secret", o_name)

    def _statefulsets(self, prom: dict, desired: list[dict], writes: Writes, check: Callable[[], None]) -> None:
        ns, name = key_of(prom)
        for obj in desired:
            sts_name = obj["metadata"]["name"]
            key = ("StatefulSet", ns, sts_name)
            # read from the cache: on a conflict, wait for the informer rather than GET (no get verb needed)
            current = self.stores.statefulsets.get(f"{ns}/{sts_name}")
            self._active_again(current, writes)
            pending = self.log.pending(key, current)
            if pending is not NOTHING:
                if pending == input_hash(obj):
                    writes.count(UNCHANGED)
                    continue
                raise RetryLater(f"StatefulSet {ns}/{sts_name}: our last write is not in the cache yet")
            with self.log.writing(key):
                applied = self.applier.apply(STATEFULSETS, obj, current, refetch=False, before_create=check)
                if applied.action in (CREATED, UPDATED, RECREATED):
                    self.log.wrote(key, applied.before, applied.after, input_hash(obj))
            writes.count(applied.action, "StatefulSet", sts_name)
        wanted = {o["metadata"]["name"] for o in desired}
        prefix = f"prometheus-{name}"
        for obj in self.stores.statefulsets.list():
            o_ns, o_name = key_of(obj)
            if (o_ns == ns and o_name not in wanted and o_name.startswith(prefix)
                    and _STS_SHARD.match(o_name[len(prefix):]) and owned_by(obj, prom)):
                if not self._scaled_down_shard_goes(prom, obj, writes):
                    continue
                if self._delete(STATEFULSETS, o_name, ns, propagation_policy="Foreground"):
                    writes.count(DELETED, "StatefulSet", o_name)

    def _active_again(self, current: dict | None, writes: Writes) -> None:
        """A retained shard is in use again (shards went back up): drop its deletion deadline, so a
        later scale-down starts a new retention period instead of reusing a stale (maybe past) one."""
        annotations = ((current or {}).get("metadata") or {}).get("annotations") or {}
        if shard_retention.DEADLINE_ANNOTATION in annotations:
            ns, name = key_of(current)
            self.client.patch(STATEFULSETS, name, {"metadata": {"annotations": {
                shard_retention.DEADLINE_ANNOTATION: None}}}, ns)
            writes.count(UPDATED, "StatefulSet", name)

    def _scaled_down_shard_goes(self, prom: dict, sts: dict, writes: Writes) -> bool:
        """spec.shardRetentionPolicy (operator/shard_retention.py): False keeps the StatefulSet, after
        writing its deletion deadline when it has none yet. A bad retention raises RetentionError."""
        decision = shard_retention.decide(prom.get("spec") or {}, sts, self.shard_retention, self.clock())
        if decision.annotate:
            ns, name = key_of(sts)
            self.client.patch(STATEFULSETS, name, {"metadata": {"annotations": decision.annotate}}, ns)
            writes.count(UPDATED, "StatefulSet", name)
        return decision.delete

    def _pods_read_through_api(self, prom: dict) -> bool:
        """Whether the cached StatefulSets run reloaders in fast-reload mode (then their Role exists)."""
        ns, _ = key_of(prom)
        for obj in self.stores.statefulsets.list():
            if key_of(obj)[0] != ns or not owned_by(obj, prom):
                continue
            pod = ((obj.get("spec") or {}).get("template") or {}).get("spec") or {}
            for c in (pod.get("containers") or []) + (pod.get("initContainers") or []):
                if any(str(a).startswith("--watch-secret=") for a in c.get("args") or []):
                    return True
        return False

    def _delete_reloader_rbac(self, prom: dict, writes: Writes) -> None:
        """Fast reload was turned off: once the pods no longer read through the API, drop their Role."""
        ns, _ = key_of(prom)
        name = fast_reload.role_name(prom)
        for res in (ROLEBINDINGS, ROLES):
            if self._delete(res, name, ns):
                writes.count(DELETED, res.kind, name)

    def _delete(self, res: Resource, name: str, ns: str, propagation_policy: str | None = None) -> bool:
        key = (res.kind, ns, name)
        self.log.forget(lambda k: k == key)
        return self.applier.delete(res, name, ns, propagation_policy=propagation_policy)

    def _get(self, res: Resource, name: str, ns: str) -> dict | None:
        try:
            return self.client.get(res, name, ns)
        except NotFound:
            return None
