"""The Eviction subresource (`POST .../pods/<name>/eviction`) and PodDisruptionBudgets.

As kube-apiserver's EvictionREST (pkg/registry/core/pod/storage/eviction.go), deciding from the
PDB's status, which promop.sandbox.disruption keeps as kube-controller-manager would:

- the body is a policy/v1 or policy/v1beta1 `Eviction` named as the URL (else 400); its
  `deleteOptions.dryRun` and the request's `dryRun` must agree (else 500);
- a missing pod is 404; a pod Pending, Succeeded, Failed or being deleted is deleted at once,
  whatever its budget says;
- several PDBs selecting the pod: 500 `This pod has more than one PodDisruptionBudget, ...`;
- a pod not Ready is deleted without spending the budget when the PDB's
  `unhealthyPodEvictionPolicy` is `AlwaysAllow`, or (`IfHealthyBudget`, the default) when
  `currentHealthy >= desiredHealthy > 0`;
- otherwise the budget decides: a PDB whose status lags its generation is 429 (`is still being
  processed`, Retry-After 10), a negative `disruptionsAllowed` or over 2000 `disruptedPods` 403,
  0 allowed 429 `Cannot evict pod as it would violate the pod's disruption budget.` with a
  `DisruptionBudget` cause; else `disruptionsAllowed` goes down by one and the pod is noted in
  `status.disruptedPods` (not on a dry run);
- the pod then gets the `DisruptionTarget` condition (reason `EvictionByEvictionAPI`) and is
  deleted with the Eviction's deleteOptions: preconditions on uid or resourceVersion that no
  longer hold are 409; success is 201 with a `Success` Status.

RBAC: the `create` verb on `pods/eviction` (the sandbox's authorizer handles subresources).
Not simulated: admission webhooks registered for `pods/eviction` are not called.
The budget check and the delete run under the store lock, so the apiserver's retries on
conflicts are never needed here.
"""

from __future__ import annotations

import copy
from typing import Any, Mapping

from promop.sandbox import pdb_kind  # noqa: F401 - registers the kind (validation, printer)
from promop.sandbox.disruption import (PDBS, PODS, DisruptionController, now_text, pod_ready, selects,
                                       with_condition)
from promop.sandbox.errors import ApiError, bad_request, not_found
from promop.sandbox.resources import ResourceType

VERSIONS = ("policy/v1", "policy/v1beta1")
MAX_DISRUPTED_PODS = 2000
DISCOVERY_ENTRY = {"name": "pods/eviction", "singularName": "", "namespaced": True, "group": "policy",
                   "version": "v1", "kind": "Eviction", "verbs": ["create"]}
VIOLATES = "Cannot evict pod as it would violate the pod's disruption budget."


def _success() -> dict:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}


def _too_many(message: str, retry_after: int) -> ApiError:
    details: dict[str, Any] = {"causes": [{"type": "DisruptionBudget", "message": message}]}
    headers = {}
    if retry_after:
        details["retryAfterSeconds"] = retry_after
        headers["Retry-After"] = str(retry_after)
    return ApiError(429, VIOLATES, reason="TooManyRequests", details=details, headers=headers)


def _still_processing(name: str) -> ApiError:
    return _too_many(f"The disruption budget {name} is still being processed by the server.", 10)


def _forbidden(name: str, why: str) -> ApiError:
    return ApiError(403, f'poddisruptionbudget.policy "{name}" is forbidden: {why}', reason="Forbidden",
                    details={"name": name, "group": "policy", "kind": "poddisruptionbudget"})


def _pod_conflict(name: str, why: str) -> ApiError:
    return ApiError(409, f'Operation cannot be fulfilled on Pod "{name}": {why}', reason="Conflict",
                    details={"name": name, "kind": "Pod"})


def check_body(body: Any, namespace: str, name: str) -> dict:
    """The Eviction as the create handler decodes it (400 when it is not one for this pod)."""
    if not isinstance(body, Mapping):
        raise bad_request("the body of an eviction must be an Eviction object")
    kind, version = body.get("kind", "Eviction"), body.get("apiVersion", "policy/v1")
    if kind != "Eviction":
        raise bad_request(f"not a Eviction object: {kind}")
    if version not in VERSIONS:
        raise bad_request(f'no kind "Eviction" is registered for version "{version}"')
    meta = body.get("metadata") or {}
    if meta.get("namespace") and meta["namespace"] != namespace:
        raise bad_request("the namespace of the provided object does not match the namespace sent on the request")
    if meta.get("name", "") != name:
        raise bad_request("name in URL does not match name in Eviction object")
    return dict(body)


def delete_options(eviction: Mapping[str, Any], dry_run: list) -> dict:
    """propagateDryRun: the Eviction's deleteOptions with the request's dryRun."""
    options = dict(eviction.get("deleteOptions") or {})
    if not options.get("dryRun"):
        options["dryRun"] = list(dry_run)
    elif dry_run and list(dry_run) != list(options["dryRun"]):
        raise ApiError(500, f"Non-matching dry-run options in request and content: {dry_run} and "
                            f"{options['dryRun']}", reason="")
    return options


def can_ignore_pdb(pod: Mapping[str, Any]) -> bool:
    """A pod not running, or already going, was disrupted before this eviction."""
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed", "Pending") or \
        bool(pod["metadata"].get("deletionTimestamp"))


class Evictions:
    """The subresource handler, installed as `sandbox.subresources[("", "pods", "eviction")]`."""

    def __init__(self, sandbox) -> None:
        self.sandbox = sandbox
        self.store = sandbox.store

    def __call__(self, api, verb: str, route, params: dict, body, content_type: str, manager: str | None):
        if verb != "create":
            raise ApiError(405, f"{verb} is not supported on pods/eviction", reason="MethodNotAllowed")
        namespace, name = route.namespace or "", route.name
        eviction = check_body(body, namespace, name)
        options = delete_options(eviction, [v for v in params.get("dryRun", []) if v])
        pods = api.registry.lookup("", "v1", "pods")
        with self.store.lock:
            pod = self.store.get(PODS, namespace, name)
            if pod is None:
                raise not_found("pods", "", name)
            if not can_ignore_pdb(pod):
                failure = self._budget(api, pod, options)
                if failure is not None:
                    return 500, failure
            self._delete(api, pods, pod, options, manager)
        return 201, _success()

    def _budget(self, api, pod: dict, options: dict) -> dict | None:
        """Spend the budget of the pod's PDB (ApiError when it cannot); a Status to answer instead
        of deleting when several PDBs select the pod."""
        namespace = pod["metadata"].get("namespace", "")
        pdbs = [entry[0] for entry in self.store.items(PDBS, namespace) if selects(entry[0], pod)]
        if len(pdbs) > 1:
            return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": "This pod has more than one PodDisruptionBudget, which the eviction subresource "
                               "does not support.", "code": 500}
        if not pdbs:
            return None
        pdb = pdbs[0]
        status = pdb.get("status") or {}
        if not pod_ready(pod):
            if (pdb.get("spec") or {}).get("unhealthyPodEvictionPolicy") == "AlwaysAllow":
                return None
            if int(status.get("currentHealthy") or 0) >= int(status.get("desiredHealthy") or 0) > 0:
                return None
        self._decrement(api, pdb, pod["metadata"]["name"], bool(options.get("dryRun")))
        return None

    def _decrement(self, api, pdb: dict, pod_name: str, dry_run: bool) -> None:
        """checkAndDecrement."""
        name, status = pdb["metadata"]["name"], dict(pdb.get("status") or {})
        allowed = int(status.get("disruptionsAllowed") or 0)
        if int(status.get("observedGeneration") or 0) < int(pdb["metadata"].get("generation") or 1):
            raise _still_processing(name)
        if allowed < 0:
            raise _forbidden(name, "pdb disruptions allowed is negative")
        if len(status.get("disruptedPods") or {}) > MAX_DISRUPTED_PODS:
            raise _forbidden(name, "DisruptedPods map too big - too many evictions not confirmed by PDB controller")
        if allowed == 0:
            raise _too_many(f"The disruption budget {name} needs {int(status.get('desiredHealthy') or 0)} "
                                  f"healthy pods and has {int(status.get('currentHealthy') or 0)} currently", 0)
        if dry_run:
            return
        status["disruptionsAllowed"] = allowed - 1
        if allowed == 1:
            status = with_condition(status, False, int(status.get("observedGeneration") or 0))
        status["disruptedPods"] = dict(status.get("disruptedPods") or {}, **{pod_name: now_text()})
        rt = api.registry.lookup("policy", "v1", "poddisruptionbudgets")
        api._write(rt, pdb, dict(pdb, status=status), "status", manager="kube-apiserver")

    def _delete(self, api, pods: ResourceType, pod: dict, options: dict, manager: str | None) -> None:
        """addConditionAndDeletePod: check the preconditions against the pod as it is, mark it a
        DisruptionTarget, delete it."""
        name = pod["metadata"]["name"]
        pre = options.get("preconditions") or {}
        if pre.get("uid") and pre["uid"] != pod["metadata"]["uid"]:
            raise _pod_conflict(name, f"the UID in the precondition ({pre['uid']}) does not match the UID in record "
                                      f"({pod['metadata']['uid']}). The object might have been deleted and then "
                                      "recreated")
        if pre.get("resourceVersion") and pre["resourceVersion"] != pod["metadata"]["resourceVersion"]:
            raise _pod_conflict(name, f"the ResourceVersion in the precondition ({pre['resourceVersion']}) does not "
                                      f"match the ResourceVersion in record ({pod['metadata']['resourceVersion']}). "
                                      "The object might have been modified")
        dry_run = bool(options.get("dryRun"))
        if not dry_run:
            pod = api._write(pods, pod, _with_disruption_target(pod), "status", manager=manager)
        rest = {k: v for k, v in options.items() if k not in ("preconditions", "dryRun", "kind", "apiVersion")}
        api.delete(pods, pod["metadata"].get("namespace", ""), name, rest, dry_run)


def _with_disruption_target(pod: dict) -> dict:
    new = copy.deepcopy(pod)
    status = new.setdefault("status", {})
    conditions = [c for c in status.get("conditions") or () if c.get("type") != "DisruptionTarget"]
    conditions.append({"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI",
                       "message": "Eviction API: evicting", "lastProbeTime": None,
                       "lastTransitionTime": now_text()})
    status["conditions"] = conditions
    return new


def install(sandbox) -> None:
    """Serve pods/eviction (and say so in discovery) and start the disruption controller."""
    sandbox.subresources[("", "pods", "eviction")] = Evictions(sandbox)
    pods = sandbox.registry.lookup("", "v1", "pods")
    pods.extra.setdefault("subresources", []).append(dict(DISCOVERY_ENTRY))
    DisruptionController(sandbox).start()
