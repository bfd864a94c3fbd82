"""kube-controller-manager's root-ca-cert-publisher in miniature (`Sandbox(publish_root_ca=True)`).

A real cluster has a ConfigMap `kube-root-ca.crt` (key `ca.crt`, the cluster's CA) in every
namespace, put there, and put back when deleted or changed, by kube-controller-manager
(tests/real_api found it: every namespace of the kit's real control plane has one). Code that lists
a namespace's ConfigMaps, or counts its events, meets it on a cluster. The sandbox serves plain
HTTP and has no CA: `ca.crt` holds a fixed self-signed certificate made once per process.

Off by default: the suite's older tests list namespaces' ConfigMaps exactly (docs/sandbox.md).
"""

from __future__ import annotations

import functools
import tempfile
import threading
from pathlib import Path

from promop.sandbox.watch import Watcher

NAME = "kube-root-ca.crt"
CONFIGMAPS = ("", "configmaps")
NAMESPACES = ("", "namespaces")
DESCRIPTION = ("Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints "
               "such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across "
               "distributions of Kubernetes clusters.")


@functools.lru_cache(maxsize=1)
def ca_pem() -> str:
    """A self-signed certificate standing for the cluster CA (made once per process)."""
    from promop.certs import self_signed

    with tempfile.TemporaryDirectory() as tmp:
        cert, _ = self_signed(tmp, ["kubernetes"], name="ca")
        return Path(cert).read_text()


def wanted(namespace: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": NAME, "namespace": namespace, "annotations": {"kubernetes.io/description": DESCRIPTION}},
            "data": {"ca.crt": ca_pem()}}


class _Feed(Watcher):
    internal = True

    def __init__(self, key: tuple[str, str], publisher: "RootCAPublisher") -> None:
        super().__init__(key, None, None, False, "", "")
        self.publisher = publisher

    def offer(self, event) -> None:
        if event.key == NAMESPACES:
            if event.type != "DELETED":
                self.publisher.due(event.obj["metadata"]["name"])
        elif event.obj["metadata"].get("name") == NAME:
            self.publisher.due(event.namespace)


class RootCAPublisher:
    """Keeps `kube-root-ca.crt` in every active namespace, as kube-controller-manager does."""

    def __init__(self, sandbox) -> None:
        self.api = sandbox.api
        self.store = sandbox.store
        self.registry = sandbox.registry
        self._lock = threading.Lock()
        self._due: set[str] = set()

    def start(self) -> "RootCAPublisher":
        for key in (NAMESPACES, CONFIGMAPS):
            self.store.add_watcher(_Feed(key, self), None)
        with self.store.lock:
            names = [ns["metadata"]["name"] for ns, _ in self.store.items(NAMESPACES, None)]
        for name in names:
            self.due(name)
        return self

    def due(self, namespace: str) -> None:
        with self._lock:
            if namespace in self._due:
                return
            self._due.add(namespace)
        self.api.background.after(self.api.controller_delay, lambda: self.sync(namespace))

    def sync(self, namespace: str) -> None:
        with self._lock:
            self._due.discard(namespace)
        rt = self.registry.lookup("", "v1", "configmaps")
        want = wanted(namespace)
        with self.store.lock:
            ns = self.store.get(NAMESPACES, "", namespace)
            if ns is None or ns["metadata"].get("deletionTimestamp"):
                return
            current = self.store.get(CONFIGMAPS, namespace, NAME)
            if current is None:
                self.api.create(rt, namespace, want, manager="kube-controller-manager")
            elif current.get("data") != want["data"] or (current["metadata"].get("annotations") or {}).get(
                    "kubernetes.io/description") != DESCRIPTION:
                meta = dict(current["metadata"], annotations={**(current["metadata"].get("annotations") or {}),
                                                               **want["metadata"]["annotations"]})
                self.api._write(rt, current, dict(current, metadata=meta, data=want["data"]), "",
                                manager="kube-controller-manager")
