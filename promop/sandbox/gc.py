"""Deletion: finalizers, deletionTimestamp, propagation policies (ownerReference garbage
collection in Background, Foreground and Orphan modes) and namespace termination.

As on a real cluster, the DELETE request only marks or removes the object itself; what the
garbage collector and the namespace controller do follows in the background (`gc_delay`
seconds later, then as each step's effects allow): dependents of a deleted owner still exist
for a moment, a Foreground owner stays readable with the `foregroundDeletion` finalizer until
its blocking dependents are gone, an Orphan owner carries the `orphan` finalizer until its
dependents are released, and a Namespace stays `Terminating` until its content is gone.
Dependents whose ownerReferences name no existing owner (or an owner in another namespace)
are collected too."""

from __future__ import annotations

import time
import uuid
from typing import Callable

from promop.sandbox.background import Background
from promop.sandbox.store import Store

FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"
NAMESPACE_FINALIZER = "kubernetes"
POLICIES = ("Background", "Foreground", "Orphan")

Key = tuple[str, str]
NAMESPACES: Key = ("", "namespaces")
EVENTS: Key = ("", "events")


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _meta_copy(obj: dict) -> dict:
    new = dict(obj)
    new["metadata"] = dict(obj["metadata"])
    return new


class Collector:
    """Deletes objects the way the apiserver plus its garbage collector would."""

    def __init__(self, store: Store, on_removed: Callable[[Key, dict], None],
                 background: Background | None = None, delay: float = 0.05) -> None:
        self.store = store
        self.on_removed_hook = on_removed  # resource-specific clean-up (CRD unserving)
        self.background = background or Background()
        self.delay = delay

    def _later(self, work: Callable[[], None], delay: float | None = None) -> None:
        def locked() -> None:
            with self.store.lock:
                work()

        self.background.after(self.delay if delay is None else delay, locked)

    # -- the request's part (caller holds the store lock) -------------------------------------
    def delete(self, key: Key, obj: dict, policy: str = "Background") -> tuple[dict, bool]:
        """Start deleting `obj`; returns (object, gone)."""
        meta = obj["metadata"]
        if meta.get("deletionTimestamp"):
            return obj, False
        if key == NAMESPACES:
            return self._delete_namespace(obj), False
        finalizers = list(meta.get("finalizers") or [])
        if policy == "Foreground" and FOREGROUND not in finalizers:
            finalizers.append(FOREGROUND)
        if policy == "Orphan" and ORPHAN not in finalizers:
            finalizers.append(ORPHAN)
        if not finalizers:
            return self._remove(key, obj), True
        pending = _meta_copy(obj)
        pending["metadata"].update(deletionTimestamp=now(), deletionGracePeriodSeconds=0,
                                   finalizers=finalizers)
        pending = self.store.put(key, pending, obj)
        uid = meta["uid"]
        if policy == "Foreground":
            self._later(lambda: self._foreground(uid))
        elif policy == "Orphan":
            self._later(lambda: self._orphan(uid))
        return pending, False

    def finish_if_released(self, key: Key, obj: dict) -> bool:
        """After an update of a deleting object: remove it once its finalizers are gone."""
        meta = obj["metadata"]
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            if key == NAMESPACES and (obj.get("spec") or {}).get("finalizers"):
                return False
            self._remove(key, obj)
            return True
        return False

    def written(self, key: Key, obj: dict, old: dict | None) -> None:
        """After a create or update: verify new ownerReferences in the background."""
        refs = obj["metadata"].get("ownerReferences")
        if refs and refs != ((old or {}).get("metadata") or {}).get("ownerReferences"):
            where = (key, obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
            self._later(lambda: self._verify_owners(*where))

    # -- internals ------------------------------------------------------------------------------
    def _remove(self, key: Key, obj: dict) -> dict:
        gone = self.store.remove(key, obj)
        self.on_removed_hook(key, gone)
        uid = gone["metadata"]["uid"]
        if self.store.dependents.get(uid):
            self._later(lambda: self._collect(uid))
        for ref in gone["metadata"].get("ownerReferences") or []:
            owner = self.store.by_uid(ref.get("uid", ""))
            if owner is not None and owner["metadata"].get("deletionTimestamp"):
                owner_uid = ref["uid"]
                self._later(lambda: self._foreground(owner_uid))
        namespace = gone["metadata"].get("namespace")
        ns = self.store.get(NAMESPACES, "", namespace) if namespace else None
        if ns is not None and ns["metadata"].get("deletionTimestamp"):
            self._later(lambda: self._drain_namespace(namespace))
        return gone

    def _live_dependents(self, uid: str) -> list[tuple[Key, dict]]:
        found = []
        for dkey, namespace, name in list(self.store.dependents.get(uid, ())):
            dependent = self.store.get(dkey, namespace, name)
            if dependent is not None:
                found.append((dkey, dependent))
        return found

    def _blocking(self, uid: str) -> list[tuple[Key, dict]]:
        """Dependents a foreground deletion waits for: those with blockOwnerDeletion."""
        return [(key, dependent) for key, dependent in self._live_dependents(uid)
                if any(ref.get("uid") == uid and ref.get("blockOwnerDeletion")
                       for ref in dependent["metadata"].get("ownerReferences") or [])]

    def _without_owners(self, dkey: Key, dependent: dict, uids: set[str]) -> None:
        updated = _meta_copy(dependent)
        refs = [r for r in dependent["metadata"].get("ownerReferences") or []
                if r.get("uid") not in uids]
        if refs:
            updated["metadata"]["ownerReferences"] = refs
        else:
            updated["metadata"].pop("ownerReferences", None)
        self.store.put(dkey, updated, dependent)

    def _release(self, uid: str, finalizer: str) -> None:
        owner = self.store.by_uid(uid)
        if owner is None or finalizer not in (owner["metadata"].get("finalizers") or []):
            return
        key = self.store.uids[uid][0]
        released = _meta_copy(owner)
        released["metadata"]["finalizers"] = [f for f in owner["metadata"]["finalizers"]
                                              if f != finalizer]
        if not released["metadata"]["finalizers"]:
            self._remove(key, released)
        else:
            self.store.put(key, released, owner)

    def _collect(self, uid: str) -> None:
        """The owner `uid` is gone: delete its dependents that have no other live owner,
        detach the others."""
        if self.store.by_uid(uid) is not None:
            return
        for dkey, dependent in self._live_dependents(uid):
            others = [r for r in dependent["metadata"].get("ownerReferences") or []
                      if r.get("uid") != uid and self.store.by_uid(r.get("uid", ""))]
            if others:
                self._without_owners(dkey, dependent, {uid})
            elif not dependent["metadata"].get("deletionTimestamp"):
                self.delete(dkey, dependent, "Background")
        self.store.dependents.pop(uid, None)

    def _foreground(self, uid: str) -> None:
        """An owner in foreground deletion: delete its dependents, and drop the finalizer once
        none with blockOwnerDeletion is left."""
        owner = self.store.by_uid(uid)
        if owner is None or not owner["metadata"].get("deletionTimestamp") or \
                FOREGROUND not in (owner["metadata"].get("finalizers") or []):
            return
        for dkey, dependent in self._live_dependents(uid):
            if not dependent["metadata"].get("deletionTimestamp"):
                blocking = any(r.get("uid") == uid and r.get("blockOwnerDeletion")
                               for r in dependent["metadata"].get("ownerReferences") or [])
                self.delete(dkey, dependent, "Foreground" if blocking else "Background")
        if not self._blocking(uid):
            self._release(uid, FOREGROUND)

    def _orphan(self, uid: str) -> None:
        for dkey, dependent in self._live_dependents(uid):
            self._without_owners(dkey, dependent, {uid})
        self._release(uid, ORPHAN)

    def _verify_owners(self, key: Key, namespace: str, name: str) -> None:
        """The garbage collector's check of a dependent's ownerReferences: owners that do not
        exist (or live in another namespace, reported with an OwnerRefInvalidNamespace Event)
        are absent; with no owner left the dependent is deleted, else the dangling references
        are removed."""
        dependent = self.store.get(key, namespace, name)
        if dependent is None or dependent["metadata"].get("deletionTimestamp"):
            return
        refs = dependent["metadata"].get("ownerReferences") or []
        absent = set()
        for ref in refs:
            where = self.store.uids.get(ref.get("uid", ""))
            if where is None:
                absent.add(ref.get("uid"))
                continue
            owner_namespace = where[1]
            if owner_namespace and owner_namespace != namespace:
                absent.add(ref.get("uid"))
                self._invalid_namespace_event(key, dependent, ref)
        if not absent:
            return
        if len(absent) == len(refs):
            self.delete(key, dependent, "Background")
        else:
            self._without_owners(key, dependent, absent)

    def _invalid_namespace_event(self, key: Key, dependent: dict, ref: dict) -> None:
        meta = dependent["metadata"]
        namespace = meta.get("namespace") or "default"
        stamp = now()
        event = {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"{meta['name']}.{uuid.uuid4().hex[:16]}",
                         "namespace": namespace, "uid": str(uuid.uuid4()),
                         "creationTimestamp": stamp},
            "involvedObject": {"apiVersion": dependent.get("apiVersion"),
                               "kind": dependent.get("kind"), "name": meta["name"],
                               "namespace": meta.get("namespace", ""), "uid": meta["uid"]},
            "reason": "OwnerRefInvalidNamespace", "type": "Warning",
            "message": f"ownerRef [{ref.get('apiVersion')}, Kind={ref.get('kind')}, "
                       f"Namespace={meta.get('namespace', '')}, Name={ref.get('name')}, "
                       f"UID={ref.get('uid')}] does not exist in namespace "
                       f"\"{meta.get('namespace', '')}\"",
            "source": {"component": "garbage-collector-controller"},
            "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1,
            "reportingComponent": "garbage-collector-controller", "reportingInstance": "",
        }
        if self.store.get(NAMESPACES, "", namespace) is not None:
            self.store.put(EVENTS, event, None)

    # -- namespaces -----------------------------------------------------------------------------
    def _delete_namespace(self, obj: dict) -> dict:
        name = obj["metadata"]["name"]
        terminating = _meta_copy(obj)
        terminating["metadata"].update(deletionTimestamp=now(), deletionGracePeriodSeconds=0)
        terminating["status"] = dict(obj.get("status") or {}, phase="Terminating")
        terminating = self.store.put(NAMESPACES, terminating, obj)
        self._later(lambda: self._drain_namespace(name))
        return terminating

    def _drain_namespace(self, name: str) -> None:
        """The namespace controller: delete the content of a terminating namespace, then
        remove its `kubernetes` finalizer, and with that the namespace."""
        ns = self.store.get(NAMESPACES, "", name)
        if ns is None or not ns["metadata"].get("deletionTimestamp"):
            return
        for key in list(self.store.objects):
            for child, _raw in list(self.store.items(key, name)):
                current = self.store.get(key, name, child["metadata"]["name"])
                if current is not None and not current["metadata"].get("deletionTimestamp"):
                    self.delete(key, current, "Background")
        if not self.store.namespace_is_empty(name):
            return  # finalizers hold some content: each removal there drains again
        spec = ns.get("spec") or {}
        if NAMESPACE_FINALIZER in (spec.get("finalizers") or []):
            finalized = _meta_copy(ns)
            finalized["spec"] = dict(spec, finalizers=[f for f in spec["finalizers"]
                                                       if f != NAMESPACE_FINALIZER])
            if not finalized["spec"]["finalizers"]:
                del finalized["spec"]["finalizers"]
            ns = self.store.put(NAMESPACES, finalized, ns)
        self.finish_if_released(NAMESPACES, ns)
