"""A kubelet and workload controllers in miniature: pods appear and disappear as replicas change.

For every Deployment, StatefulSet and ReplicaSet in the sandbox, `Kubelet`
keeps exactly `spec.replicas` pods matching its template (Running and Ready at
once, owned by the workload), deletes the extra ones (the newest first; a
StatefulSet's highest ordinals first) and reports the counts in the workload's
status. It reacts to the store's events, not to a timer.
"""

from __future__ import annotations

import copy
import queue
import random
import string
import threading
import time

from promop.sandbox.errors import ApiError
from promop.sandbox.watch import Watcher

WORKLOADS = (("apps", "deployments"), ("apps", "statefulsets"), ("apps", "replicasets"))
PODS = ("", "pods")


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class _Feed(Watcher):
    """A store watcher that hands changed workload keys to the kubelet's queue (never blocks the store).
    Not a client's watch stream: faults do not close it."""

    internal = True

    def __init__(self, key: tuple[str, str], out: "queue.Queue") -> None:
        super().__init__(key, None, None, False, "", "")
        self.out = out

    def offer(self, event) -> None:  # called under the store lock
        obj = event.obj
        meta = obj.get("metadata") or {}
        if event.key == PODS:
            for ref in meta.get("ownerReferences") or []:
                if ref.get("controller"):
                    self.out.put((_kind_key(ref.get("kind")), meta.get("namespace", ""), ref.get("name")))
            return
        self.out.put((event.key, meta.get("namespace", ""), meta.get("name")))


def _kind_key(kind: str | None) -> tuple[str, str]:
    return {"Deployment": WORKLOADS[0], "StatefulSet": WORKLOADS[1], "ReplicaSet": WORKLOADS[2]}.get(
        kind or "", ("", ""))


class Kubelet:
    """Start with `Kubelet(sandbox).start()`; `stop()` ends the thread. `pod_hook(pod)` may edit each new pod."""

    def __init__(self, sandbox, *, pod_hook=None) -> None:
        self.sandbox = sandbox
        self.api = sandbox.api
        self.registry = sandbox.registry
        self.pod_hook = pod_hook
        self._queue: queue.Queue = queue.Queue()
        self._feeds: list[_Feed] = []
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self.errors: list[str] = []

    def _rt(self, key: tuple[str, str]):
        group, plural = key
        return self.registry.lookup(group, "v1", plural)

    def start(self) -> "Kubelet":
        for key in (*WORKLOADS, PODS):
            feed = _Feed(key, self._queue)
            self.sandbox.store.add_watcher(feed, None)
            self._feeds.append(feed)
        self._thread = threading.Thread(target=self._run, name="sandbox-kubelet", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._queue.put(None)
        for feed in self._feeds:
            self.sandbox.store.remove_watcher(feed)
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> "Kubelet":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def _run(self) -> None:
        while not self._stop.is_set():
            item = self._queue.get()
            if item is None:
                return
            pending = {item}
            while True:  # coalesce a burst of events into one pass per workload
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    return
                pending.add(more)
            for key, namespace, name in pending:
                if key in WORKLOADS and name:
                    try:
                        self.reconcile(key, namespace, name)
                    except ApiError as exc:  # a conflict or a deleted namespace: the next event retries
                        self.errors.append(str(exc))
                    except Exception as exc:  # noqa: BLE001 - keep simulating the other workloads
                        self.errors.append(repr(exc))

    def _owned_pods(self, workload: dict) -> list[dict]:
        uid = workload["metadata"]["uid"]
        ns = workload["metadata"].get("namespace", "")
        pods = []
        for obj, _raw in self.sandbox.store.items(PODS, ns):
            refs = (obj.get("metadata") or {}).get("ownerReferences") or []
            if any(r.get("uid") == uid and r.get("controller") for r in refs) and \
                    not obj["metadata"].get("deletionTimestamp"):
                pods.append(obj)
        return pods

    def reconcile(self, key: tuple[str, str], namespace: str, name: str) -> None:
        """Make the pods of one workload match its replicas and write its status."""
        rt = self._rt(key)
        pods_rt = self._rt(PODS)
        with self.sandbox.store.lock:
            workload = self.sandbox.store.get(key, namespace, name)
            if workload is None or workload["metadata"].get("deletionTimestamp"):
                return
            spec = workload.get("spec") or {}
            want = spec.get("replicas", 1)
            pods = self._owned_pods(workload)
            if len(pods) > want:
                if key == WORKLOADS[1]:
                    pods.sort(key=lambda p: _ordinal(p["metadata"]["name"]))
                else:
                    pods.sort(key=lambda p: (p["metadata"].get("creationTimestamp", ""), p["metadata"]["name"]))
                for pod in pods[want:][::-1]:
                    self.api.delete(pods_rt, namespace, pod["metadata"]["name"], {})
                pods = pods[:want]
            elif len(pods) < want:
                taken = {p["metadata"]["name"] for p in pods}
                for _ in range(want - len(pods)):
                    pods.append(self._create_pod(key, workload, taken))
            ready = len(pods)
            status = dict(workload.get("status") or {})
            new_status = dict(status, replicas=ready, readyReplicas=ready, availableReplicas=ready,
                              updatedReplicas=ready, observedGeneration=workload["metadata"].get("generation", 1))
            if key == WORKLOADS[1]:
                new_status["currentReplicas"] = ready
            if new_status != status:
                body = copy.deepcopy(workload)
                body["status"] = new_status
                self.api.update(rt, namespace, name, body, subresource="status")

    def _create_pod(self, key: tuple[str, str], workload: dict, taken: set[str]) -> dict:
        meta = workload["metadata"]
        template = copy.deepcopy((workload.get("spec") or {}).get("template") or {})
        tmeta = template.get("metadata") or {}
        if key == WORKLOADS[1]:
            i = 0
            while f"{meta['name']}-{i}" in taken:
                i += 1
            pod_name = f"{meta['name']}-{i}"
        else:
            while True:
                pod_name = meta["name"] + "-" + "".join(random.choices(string.ascii_lowercase + string.digits, k=5))
                if pod_name not in taken:
                    break
        taken.add(pod_name)
        kind = {WORKLOADS[0]: "Deployment", WORKLOADS[1]: "StatefulSet", WORKLOADS[2]: "ReplicaSet"}[key]
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": pod_name, "namespace": meta.get("namespace", ""),
                            "labels": dict(tmeta.get("labels") or {}),
                            "annotations": dict(tmeta.get("annotations") or {}),
                            "ownerReferences": [{"apiVersion": "apps/v1", "kind": kind, "name": meta["name"],
                                                 "uid": meta["uid"], "controller": True,
                                                 "blockOwnerDeletion": True}]},
               "spec": dict(template.get("spec") or {"containers": []}, nodeName="sandbox-node")}
        if self.pod_hook is not None:
            self.pod_hook(pod)
        pods_rt = self._rt(PODS)
        created = self.api.create(pods_rt, pod["metadata"]["namespace"], pod)
        stamp = _now()
        created = copy.deepcopy(created)
        created["status"] = {
            "phase": "Running", "startTime": stamp, "podIP": "127.0.0.1", "hostIP": "127.0.0.1",
            "conditions": [{"type": t, "status": "True", "lastTransitionTime": stamp}
                           for t in ("PodScheduled", "Initialized", "ContainersReady", "Ready")],
            "containerStatuses": [{"name": c.get("name", ""), "ready": True, "restartCount": 0,
                                   "started": True, "state": {"running": {"startedAt": stamp}}}
                                  for c in created["spec"].get("containers") or []],
        }
        return self.api.update(pods_rt, created["metadata"]["namespace"], pod_name, created, subresource="status")


def _ordinal(name: str) -> int:
    tail = name.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else 0
