"""Deletion: finalizers, deletionTimestamp, propagation policies (ownerReference garbage
collection in Background, Foreground and Orphan modes) and namespace termination.

Collection runs synchronously inside the deleting request, under the store lock, so tests can
observe its results as soon as the DELETE returns (each step is still its own watch event)."""

from __future__ import annotations

import time
from typing import Callable

from promop.sandbox.store import Store

FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"
POLICIES = ("Background", "Foreground", "Orphan")

Key = tuple[str, str]
NAMESPACES: Key = ("", "namespaces")


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _meta_copy(obj: dict) -> dict:
    new = dict(obj)
    new["metadata"] = dict(obj["metadata"])
    return new


class Collector:
    """Deletes objects the way the apiserver plus its garbage collector would."""

    def __init__(self, store: Store, on_removed: Callable[[Key, dict], None]) -> None:
        self.store = store
        self.on_removed_hook = on_removed  # resource-specific clean-up (CRD unserving)
        self._draining: set[str] = set()

    def delete(self, key: Key, obj: dict, policy: str = "Background") -> tuple[dict, bool]:
        """Start deleting `obj`; returns (object, gone). Caller holds the store lock."""
        meta = obj["metadata"]
        if meta.get("deletionTimestamp"):
            return obj, False
        uid = meta["uid"]
        if policy == "Orphan":
            self._orphan_dependents(uid)
        finalizers = list(meta.get("finalizers") or [])
        live_dependents = self._live_dependents(uid)
        if policy == "Foreground" and live_dependents and FOREGROUND not in finalizers:
            finalizers.append(FOREGROUND)
        if key == NAMESPACES:
            return self._delete_namespace(obj, finalizers)
        if not finalizers:
            return self._remove(key, obj), True
        pending = _meta_copy(obj)
        pending["metadata"].update(deletionTimestamp=now(), deletionGracePeriodSeconds=0,
                                   finalizers=finalizers)
        pending = self.store.put(key, pending, obj)
        if policy == "Foreground":
            for dkey, dependent in live_dependents:
                self.delete(dkey, dependent, "Foreground")
            self._maybe_finish_foreground(uid)
        return self.store.get(key, meta.get("namespace", ""), meta["name"]) or pending, False

    def finish_if_released(self, key: Key, obj: dict) -> bool:
        """After an update of a deleting object: remove it once its finalizers are gone."""
        meta = obj["metadata"]
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            if key == NAMESPACES and self._namespace_has_content(meta["name"]):
                return False
            self._remove(key, obj)
            return True
        return False

    # -- internals ---------------------------------------------------------------------------------
    def _remove(self, key: Key, obj: dict) -> dict:
        gone = self.store.remove(key, obj)
        self._collect(gone)
        self.on_removed_hook(key, gone)
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

    def _without_owner(self, dkey: Key, dependent: dict, uid: str) -> None:
        updated = _meta_copy(dependent)
        refs = [r for r in dependent["metadata"].get("ownerReferences") or []
                if r.get("uid") != uid]
        if refs:
            updated["metadata"]["ownerReferences"] = refs
        else:
            updated["metadata"].pop("ownerReferences", None)
        self.store.put(dkey, updated, dependent)

    def _orphan_dependents(self, uid: str) -> None:
        for dkey, dependent in self._live_dependents(uid):
            self._without_owner(dkey, dependent, uid)

    def _collect(self, gone: dict) -> None:
        """The owner `gone` no longer exists: collect or detach its dependents, and release
        owners waiting in foreground deletion for it."""
        uid = gone["metadata"]["uid"]
        for dkey, dependent in self._live_dependents(uid):
            others = [r for r in dependent["metadata"].get("ownerReferences") or []
                      if r.get("uid") != uid and self.store.by_uid(r.get("uid", ""))]
            if others:
                self._without_owner(dkey, dependent, uid)
            else:
                self.delete(dkey, dependent, "Background")
        self.store.dependents.pop(uid, None)
        for ref in gone["metadata"].get("ownerReferences") or []:
            self._maybe_finish_foreground(ref.get("uid", ""))
        namespace = gone["metadata"].get("namespace")
        if namespace and namespace not in self._draining:
            ns = self.store.get(NAMESPACES, "", namespace)
            if ns is not None and ns["metadata"].get("deletionTimestamp"):
                self.finish_if_released(NAMESPACES, ns)

    def _maybe_finish_foreground(self, owner_uid: str) -> None:
        owner = self.store.by_uid(owner_uid)
        if owner is None or FOREGROUND not in (owner["metadata"].get("finalizers") or []):
            return
        if not owner["metadata"].get("deletionTimestamp") or self._blocking(owner_uid):
            return
        key = self.store.uids[owner_uid][0]
        released = _meta_copy(owner)
        released["metadata"]["finalizers"] = [f for f in owner["metadata"]["finalizers"]
                                              if f != FOREGROUND]
        if not released["metadata"]["finalizers"]:
            self._remove(key, released)
        else:
            self.store.put(key, released, owner)

    def _namespace_has_content(self, namespace: str) -> bool:
        return not self.store.namespace_is_empty(namespace)

    def _delete_namespace(self, obj: dict, finalizers: list[str]) -> tuple[dict, bool]:
        name = obj["metadata"]["name"]
        terminating = _meta_copy(obj)
        terminating["metadata"].update(deletionTimestamp=now(), deletionGracePeriodSeconds=0)
        if finalizers:
            terminating["metadata"]["finalizers"] = finalizers
        terminating["status"] = dict(obj.get("status") or {}, phase="Terminating")
        terminating = self.store.put(NAMESPACES, terminating, obj)
        self._draining.add(name)
        try:
            for key, bucket in list(self.store.objects.items()):
                for (namespace, _), (child, _raw) in list(bucket.items()):
                    if namespace == name and self.store.get(key, namespace,
                                                            child["metadata"]["name"]):
                        self.delete(key, self.store.get(key, namespace,
                                                        child["metadata"]["name"]), "Background")
        finally:
            self._draining.discard(name)
        current = self.store.get(NAMESPACES, "", name) or terminating
        if self.finish_if_released(NAMESPACES, current):
            return current, True
        return current, False
