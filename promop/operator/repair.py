"""`--repair-policy-for-statefulsets`: unstick a StatefulSet rollout stuck on a broken revision.

Kubernetes' StatefulSet controller does not replace a pod that never became
ready (kubernetes/kubernetes#67250): after a bad spec (revision B) is fixed
(revision C), the pod of B stays broken and the rollout waits forever. Upstream
(0.90+, `pkg/operator/statefulset_reporter.go` `Repair`) then removes that pod
so the controller recreates it at C:

- nothing when the policy is `none` (the default) or the StatefulSet's
  `status.observedGeneration` lags its `metadata.generation` (not reconciled yet);
- pods owned by the StatefulSet, highest ordinal first (label
  `apps.kubernetes.io/pod-index`, else the name's suffix); skip the ready ones
  (phase Running and condition Ready True), those at the current or the update
  revision (`controller-revision-hash`) and those already being deleted;
- the first one left is evicted (`evict`: the Eviction API, which honours
  PodDisruptionBudgets) or deleted (`delete`), propagation Background; one pod
  per StatefulSet per sync (the next sync sees fresh state).

What was done is told on the workload object (an Event, reason
`StatefulSetRepaired`) and in the log.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Iterable, Mapping

from promop.host.logs import fields
from promop.kube.errors import ApiError, NotFound
from promop.kube.resources import PODS
from promop.labelselector import SelectorError, parse_selector

log = logging.getLogger("promop.operator.repair")

REVISION_LABEL = "controller-revision-hash"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
REASON = "StatefulSetRepaired"


def _md(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return (obj or {}).get("metadata") or {}


def pod_ready(pod: Mapping[str, Any]) -> bool:
    status = pod.get("status") or {}
    if status.get("phase") != "Running":
        return False
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or ())


def _ordinal(pod: Mapping[str, Any]) -> int:
    md = _md(pod)
    text = (md.get("labels") or {}).get(POD_INDEX_LABEL) or str(md.get("name", "")).rsplit("-", 1)[-1]
    return int(text) if text.isdigit() else -1


def owned_by(pod: Mapping[str, Any], sts: Mapping[str, Any]) -> bool:
    return any(r.get("kind") == "StatefulSet" and r.get("name") == _md(sts).get("name")
               for r in _md(pod).get("ownerReferences") or ())


def pod_to_repair(sts: Mapping[str, Any], pods: Iterable[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The pod upstream's Repair would remove, or None (pure: the decision alone)."""
    status = sts.get("status") or {}
    if _md(sts).get("generation") != status.get("observedGeneration"):
        return None
    current, update = status.get("currentRevision"), status.get("updateRevision")
    for pod in sorted((p for p in pods if owned_by(p, sts)), key=_ordinal, reverse=True):
        revision = (_md(pod).get("labels") or {}).get(REVISION_LABEL)
        if pod_ready(pod) or revision in (current, update) or _md(pod).get("deletionTimestamp"):
            continue
        return pod
    return None


def rolling(sts: Mapping[str, Any]) -> bool:
    """Is the StatefulSet's rollout unfinished (revisions differ or pods not ready)? Then it is
    looked at again later even if nothing changes (upstream's status poller, every minute)."""
    status = sts.get("status") or {}
    want = (sts.get("spec") or {}).get("replicas", 1)
    return status.get("currentRevision") != status.get("updateRevision") or int(status.get("readyReplicas") or 0) < want


def remove(client: Any, pod: Mapping[str, Any], policy: str) -> None:
    """Evict or delete `pod` (propagation Background), as the policy says."""
    ns, name = _md(pod).get("namespace"), _md(pod).get("name")
    options = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"}
    if policy == "evict":
        body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": ns},
                "deleteOptions": options}
        # the eviction subresource is a create (POST) the client has no verb for
        client._request("POST", PODS.path(ns, name, "eviction"), endpoint=PODS.endpoint(ns, name, "eviction"),
                        body=body, content_type="application/json")
    else:
        client.delete(PODS, name, ns, propagation_policy="Background")


def repair(client: Any, statefulsets: Iterable[Mapping[str, Any]], policy: str,
           tell: Callable[[str], Any]) -> list[str]:
    """Apply `policy` to each StatefulSet (of one workload object); `tell(note)` reports each removal
    (an Event on the workload). Returns the removed pods' names. Errors are logged, not raised:
    a failed repair is tried again at the next sync."""
    if policy not in ("evict", "delete"):
        return []
    done = []
    for sts in statefulsets:
        md, status = _md(sts), sts.get("status") or {}
        try:
            selector = parse_selector((sts.get("spec") or {}).get("selector") or {})
            pods = client.list(PODS, md.get("namespace"), label_selector=str(selector) or None)["items"]
            pod = pod_to_repair(sts, pods)
            if pod is None:
                continue
            remove(client, pod, policy)
        except NotFound:
            continue
        except (ApiError, SelectorError, OSError) as exc:
            log.warning("cannot repair a stuck StatefulSet", **fields(statefulset=f"{md.get('namespace')}/"
                                                                               f"{md.get('name')}", error=str(exc)))
            continue
        name = _md(pod).get("name")
        verb = "evicted" if policy == "evict" else "deleted"
        note = (f"{verb} pod {name} of StatefulSet {md.get('name')}: not ready at revision "
                f"{(_md(pod).get('labels') or {}).get(REVISION_LABEL)}, neither the current "
                f"({status.get('currentRevision')}) nor the update revision ({status.get('updateRevision')}); "
                f"--repair-policy-for-statefulsets={policy}")
        log.info("repaired a stuck StatefulSet", **fields(statefulset=f"{md.get('namespace')}/{md.get('name')}",
                                                          pod=name, policy=policy))
        tell(note)
        done.append(name)
    return done
