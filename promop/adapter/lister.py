"""The objects metrics describe, read from the API server.

A `*` request needs the names of the objects matching a label selector;
metrics.k8s.io needs pods and nodes. Upstream lists through the API on every
request; here a metadata-only informer per resource is started on first use
and answers from memory once synced (a direct LIST answers until then), so
a request costs no API round trip.
"""

from __future__ import annotations

import logging
import operator
import threading
from typing import Any

from promop.adapter.resources import ResourceInfo
from promop.adapter.selector import Requirement
from promop.kube.client import KubeClient
from promop.kube.informer import Informer
from promop.kube.store import NAMESPACE_INDEX
from promop.kube.resources import Resource

log = logging.getLogger("promop.adapter")


def _keep_metadata(obj: dict) -> dict:
    meta = obj.get("metadata") or {}
    out = {"metadata": {k: meta[k] for k in ("name", "namespace", "labels", "resourceVersion") if k in meta}}
    phase = (obj.get("status") or {}).get("phase")
    if phase:
        out["status"] = {"phase": phase}
    return out


def _labels_match(obj: dict, selector: list[Requirement]) -> bool:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return all(r.matches(labels) for r in selector)


def _matches(obj: dict, namespace: str | None, selector: list[Requirement]) -> bool:
    if namespace is not None and (obj.get("metadata") or {}).get("namespace") != namespace:
        return False
    return _labels_match(obj, selector)


def _order(objs: list[dict]) -> list[dict]:
    return sorted(objs, key=lambda o: ((o.get("metadata") or {}).get("namespace", ""),
                                       (o.get("metadata") or {}).get("name", "")))


class KubeLister:
    """Informer-backed object metadata; pods need their phase, so pods are read whole."""

    def __init__(self, client: KubeClient, sync_timeout: float = 5.0, use_informers: bool = True) -> None:
        self.client = client
        self.sync_timeout = sync_timeout
        self.use_informers = use_informers
        self._informers: dict[tuple[str, str], Informer] = {}
        self._lock = threading.Lock()
        # (resource, namespace, selector) -> (the objects it was computed from, the answer): an HPA asks the
        # same question every 15 s, and filtering and sorting were a tenth of a request's CPU
        self._answers: dict[tuple, tuple[list[dict], list[dict]]] = {}

    def _resource(self, info: ResourceInfo) -> Resource:
        return Resource(info.group, info.version, info.resource, info.namespaced, info.kind)

    def _informer(self, info: ResourceInfo) -> Informer | None:
        if not self.use_informers:
            return None
        key = (info.group, info.resource)
        with self._lock:
            inf = self._informers.get(key)
            if inf is None:
                inf = Informer(self.client, self._resource(info), metadata_only=info.resource != "pods",
                               transform=_keep_metadata, name=f"adapter-{info.resource}")
                inf.start()
                self._informers[key] = inf
        return inf if inf.has_synced() or inf.wait_for_sync(0.0) else None

    def list(self, info: ResourceInfo, namespace: str | None, selector: list[Requirement],
             selector_text: str) -> list[dict]:
        inf = self._informer(info)
        if inf is not None:
            # the namespace index rather than a scan of every object: this runs on each `*` request
            objs = inf.store.by_index(NAMESPACE_INDEX, namespace) if namespace is not None else inf.store.list()
            key = (info.group, info.resource, namespace, selector_text)
            hit = self._answers.get(key)
            # the store replaces an object on every change, so the same objects (by identity) mean the same answer
            if hit is not None and len(hit[0]) == len(objs) and all(map(operator.is_, hit[0], objs)):
                return hit[1]
            answer = _order([o for o in objs if _labels_match(o, selector)] if selector else objs)
            with self._lock:
                if len(self._answers) >= 256:
                    self._answers.clear()
                self._answers[key] = (objs, answer)
            return answer
        page = self.client.list(self._resource(info), namespace if info.namespaced else None,
                                label_selector=selector_text or None, metadata_only=info.resource != "pods")
        return _order([_keep_metadata(o) for o in page.get("items") or []])

    def get(self, info: ResourceInfo, namespace: str | None, name: str) -> dict | None:
        inf = self._informer(info)
        if inf is not None:
            key = f"{namespace}/{name}" if info.namespaced and namespace else name
            obj = inf.store.get_by_key(key)
            return obj
        from promop.kube.errors import NotFound

        try:
            return _keep_metadata(self.client.get(self._resource(info), name,
                                                  namespace if info.namespaced else None))
        except NotFound:
            return None

    def stop(self) -> None:
        with self._lock:
            informers = list(self._informers.values())
            self._informers.clear()
        for inf in informers:
            inf.stop()


class StaticLister:
    """Objects given up front: for tests and `explain`."""

    def __init__(self, objects: dict[str, list[dict]] | None = None) -> None:
        self.objects = objects or {}   # resource plural → objects

    def list(self, info: ResourceInfo, namespace: str | None, selector: list[Requirement],
             selector_text: str) -> list[dict]:
        return _order([o for o in self.objects.get(info.resource, []) if _matches(o, namespace, selector)])

    def get(self, info: ResourceInfo, namespace: str | None, name: str) -> dict | None:
        for o in self.objects.get(info.resource, []):
            meta = o.get("metadata") or {}
            if meta.get("name") == name and (not info.namespaced or meta.get("namespace") == namespace):
                return o
        return None


def get_json(client: KubeClient, path: str) -> Any:
    """GET a non-resource path (discovery) through the client's one request path."""
    return client._request("GET", path, endpoint=path)  # noqa: SLF001 - the client's single request path
