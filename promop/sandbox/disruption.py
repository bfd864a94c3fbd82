"""kube-controller-manager's disruption controller in miniature: PodDisruptionBudget status.

The Eviction subresource (promop.sandbox.eviction) decides from a PDB's status alone, as the
apiserver does, so something must keep that status: this controller. Shortly after a pod, PDB
or workload in a namespace changes (`controller_delay`), it recomputes the status of every PDB
there as pkg/controller/disruption does:

- the PDB's pods: those its selector matches in its namespace (a null selector matches none,
  an empty one every pod, policy/v1);
- `expectedPods` and `desiredHealthy`: an integer `minAvailable` wants that many of the pods it
  found; a percentage `minAvailable` or any `maxUnavailable` scales the replicas of the pods'
  controllers (StatefulSet, Deployment through its ReplicaSet, ReplicaSet), rounding up; a pod
  whose controller is missing makes the sync fail (`DisruptionAllowed` False, reason
  `SyncFailed`, observedGeneration not advanced: evictions get 429 meanwhile);
- `currentHealthy`: pods Ready, not being deleted and not in `disruptedPods` (an eviction's
  note that it is about to delete the pod; kept while the pod exists undeleted, for 2 min);
- `disruptionsAllowed = max(currentHealthy - desiredHealthy, 0)` (0 with no expected pods) and
  the `DisruptionAllowed` condition (`SufficientPods` / `InsufficientPods`).

Differences: pods without a controller are left out of the scale (upstream also emits an
`UnmanagedPods` Event), custom workloads' scale subresources are not consulted (their pods
fail the sync), no Events are emitted, and an expired `disruptedPods` entry is dropped at the
next sync rather than by a timer at its expiry.
"""

from __future__ import annotations

import calendar
import math
import threading
import time
from typing import Any, Mapping

from promop.labelselector import SelectorError, matches
from promop.sandbox.watch import Watcher

PDBS = ("policy", "poddisruptionbudgets")
PODS = ("", "pods")
WORKLOADS = (("apps", "statefulsets"), ("apps", "deployments"), ("apps", "replicasets"))
DELETION_TIMEOUT = 120.0  # seconds an eviction's disruptedPods entry counts the pod as gone
CONDITION = "DisruptionAllowed"


class SyncFailed(Exception):
    """The controller cannot compute the PDB's status (upstream's failSafe)."""


def now_text() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _seconds(text: str) -> float:
    try:
        return float(calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%SZ")))
    except (TypeError, ValueError):
        return 0.0


def selects(pdb: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    """Does the PDB's selector match the pod (same namespace assumed)? policy/v1: null selects
    nothing, `{}` everything; an invalid selector selects nothing."""
    selector = (pdb.get("spec") or {}).get("selector")
    if selector is None:
        return False
    try:
        return matches(selector, (pod.get("metadata") or {}).get("labels") or {})
    except SelectorError:
        return False


def pod_ready(pod: Mapping[str, Any]) -> bool:
    """podutil.IsPodReady: the Ready condition is True (the phase is not looked at)."""
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or ())


def scaled(value: Any, total: int) -> int:
    """intstr.GetScaledValueFromIntOrPercent rounding up; SyncFailed on a bad value."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise SyncFailed(f"invalid value for IntOrString: invalid type: {type(value).__name__}")
    if isinstance(value, int):
        return value
    if not value.endswith("%") or not value[:-1].isdigit():
        raise SyncFailed(f"invalid value for IntOrString: invalid value {value!r}: "
                         "string is not a percentage")
    return math.ceil(int(value[:-1]) * total / 100)


def _controller_ref(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    return next((r for r in (obj.get("metadata") or {}).get("ownerReferences") or () if r.get("controller")),
                None)


def _owner(store, key: tuple[str, str], namespace: str, ref: Mapping[str, Any]) -> dict | None:
    found = store.get(key, namespace, ref.get("name", ""))
    if found is None or found["metadata"].get("uid") != ref.get("uid"):
        return None
    return found


def _scale_of(store, namespace: str, ref: Mapping[str, Any]) -> tuple[str, int] | None:
    """(uid, replicas) of the workload a pod's controller reference leads to (a ReplicaSet's
    Deployment when it has one), or None when it is missing or of a kind not handled."""
    group = str(ref.get("apiVersion", "")).rpartition("/")[0]
    kind = ref.get("kind")
    if group != "apps" or kind not in ("StatefulSet", "Deployment", "ReplicaSet"):
        return None
    key = {"StatefulSet": WORKLOADS[0], "Deployment": WORKLOADS[1], "ReplicaSet": WORKLOADS[2]}[kind]
    workload = _owner(store, key, namespace, ref)
    if workload is None:
        return None
    if kind == "ReplicaSet":
        parent = _controller_ref(workload)
        if parent is not None and parent.get("kind") == "Deployment":
            return _scale_of(store, namespace, parent)
    return workload["metadata"]["uid"], int((workload.get("spec") or {}).get("replicas", 1))


def expected_scale(store, namespace: str, pods: list[dict]) -> int:
    """The summed replicas of the pods' controllers, each counted once (getExpectedScale)."""
    seen: dict[str, int] = {}
    for pod in pods:
        ref = _controller_ref(pod)
        if ref is None:
            continue  # unmanaged: upstream warns with an UnmanagedPods Event and leaves it out
        found = _scale_of(store, namespace, ref)
        if found is None:
            raise SyncFailed(f'found no controllers for pod "{pod["metadata"]["name"]}"')
        seen[found[0]] = found[1]
    return sum(seen.values())


def desired(store, pdb: Mapping[str, Any], pods: list[dict]) -> tuple[int, int]:
    """(expectedPods, desiredHealthy) of getExpectedPodCount."""
    spec = pdb.get("spec") or {}
    namespace = pdb["metadata"].get("namespace", "")
    if spec.get("maxUnavailable") is not None:
        expected = expected_scale(store, namespace, pods)
        return expected, max(expected - scaled(spec["maxUnavailable"], expected), 0)
    if isinstance(spec.get("minAvailable"), int) and not isinstance(spec.get("minAvailable"), bool):
        return len(pods), spec["minAvailable"]
    if spec.get("minAvailable") is not None:
        expected = expected_scale(store, namespace, pods)
        return expected, scaled(spec["minAvailable"], expected)
    return 0, 0


def disrupted(pdb: Mapping[str, Any], pods: list[dict], now: float) -> dict[str, str]:
    """The disruptedPods entries still standing: the pod exists, is not being deleted, and the
    eviction is under DELETION_TIMEOUT old (buildDisruptedPodMap)."""
    noted = (pdb.get("status") or {}).get("disruptedPods") or {}
    out = {}
    for pod in pods:
        name = pod["metadata"]["name"]
        if pod["metadata"].get("deletionTimestamp") or name not in noted:
            continue
        if _seconds(noted[name]) + DELETION_TIMEOUT > now:
            out[name] = noted[name]
    return out


def with_condition(status: dict, allowed: bool, generation: int, reason: str = "", message: str = "") -> dict:
    """The status with its DisruptionAllowed condition set (the transition time kept unless the
    condition's status changes), as apimeta.SetStatusCondition."""
    value = "True" if allowed else "False"
    reason = reason or ("SufficientPods" if allowed else "InsufficientPods")
    conditions = [dict(c) for c in status.get("conditions") or ()]
    old = next((c for c in conditions if c.get("type") == CONDITION), None)
    new = {"type": CONDITION, "status": value, "reason": reason, "message": message,
           "observedGeneration": generation,
           "lastTransitionTime": old["lastTransitionTime"] if old and old.get("status") == value
           and old.get("lastTransitionTime") else now_text()}
    conditions = [new if c is old else c for c in conditions] if old else conditions + [new]
    return dict(status, conditions=conditions)


def compute_status(store, pdb: Mapping[str, Any], pods: list[dict], now: float) -> dict:
    """The status the disruption controller writes for `pdb` given its namespace's pods."""
    mine = [p for p in pods if selects(pdb, p)]
    status = dict(pdb.get("status") or {})
    try:
        expected, desired_healthy = desired(store, pdb, mine)
    except SyncFailed as exc:
        status["disruptionsAllowed"] = 0
        return with_condition(status, False, int(status.get("observedGeneration") or 0), "SyncFailed", str(exc))
    still = disrupted(pdb, mine, now)
    healthy = sum(1 for p in mine if pod_ready(p) and not p["metadata"].get("deletionTimestamp")
                  and p["metadata"]["name"] not in still)
    allowed = healthy - desired_healthy if expected > 0 else 0
    generation = int(pdb["metadata"].get("generation") or 1)
    status.update(disruptionsAllowed=max(allowed, 0), currentHealthy=healthy, desiredHealthy=desired_healthy,
                  expectedPods=expected, observedGeneration=generation)
    if still:
        status["disruptedPods"] = still
    else:
        status.pop("disruptedPods", None)
    return with_condition(status, allowed > 0, generation)


class _Feed(Watcher):
    """Hands the namespace of each pod, PDB or workload change to the controller (under the
    store lock: never blocks). Not a client's watch stream: faults do not close it."""

    internal = True

    def __init__(self, key: tuple[str, str], controller: "DisruptionController") -> None:
        super().__init__(key, None, None, False, "", "")
        self.controller = controller

    def offer(self, event) -> None:
        self.controller.changed(event.key, event.namespace or (event.obj.get("metadata") or {}).get("namespace", ""))


class DisruptionController:
    """Installed on every sandbox; it works only in namespaces that have PDBs."""

    def __init__(self, sandbox) -> None:
        self.sandbox = sandbox
        self.api = sandbox.api
        self.store = sandbox.store
        self._lock = threading.Lock()
        self._due: set[str] = set()

    def start(self) -> "DisruptionController":
        for key in (PDBS, PODS, *WORKLOADS):
            self.store.add_watcher(_Feed(key, self), None)
        return self

    def changed(self, key: tuple[str, str], namespace: str) -> None:
        if key != PDBS and not self.store.items(PDBS, namespace):
            return
        with self._lock:
            if namespace in self._due:
                return
            self._due.add(namespace)
        self.api.background.after(self.api.controller_delay, lambda: self.sync(namespace))

    def sync(self, namespace: str) -> None:
        """Recompute and write the status of every PDB in the namespace (through /status)."""
        with self._lock:
            self._due.discard(namespace)
        rt = self.sandbox.registry.lookup("policy", "v1", "poddisruptionbudgets")
        with self.store.lock:
            pods = [entry[0] for entry in self.store.items(PODS, namespace)]
            for pdb, _ in self.store.items(PDBS, namespace):
                if pdb["metadata"].get("deletionTimestamp"):
                    continue
                status = compute_status(self.store, pdb, pods, time.time())
                if status != pdb.get("status"):
                    self.api._write(rt, pdb, dict(pdb, status=status), "status", manager="kube-controller-manager")
