"""The Eviction subresource and PodDisruptionBudgets, as kube-apiserver's EvictionREST and
kube-controller-manager's disruption controller (pkg/registry/core/pod/storage/eviction.go,
pkg/controller/disruption): answers, status codes and messages a client branches on."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

import pytest
from deadlines import scaled
from kubernetes import client

NS = "default"
SELECTOR = {"matchLabels": {"app": "a"}}


def request(sb, method: str, path: str, body=None, token: str | None = None) -> tuple[int, dict, dict]:
    """(code, headers, decoded body) of a raw request to the sandbox."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(sb.url + path, data=data, method=method,
                                 headers={"Content-Type": "application/json",
                                          **({"Authorization": f"Bearer {token}"} if token else {})})
    try:
        with urllib.request.urlopen(req, timeout=scaled(10)) as resp:
            return resp.status, dict(resp.headers), json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), json.loads(err.read())


def evict(sb, name: str, query: str = "", body: dict | None = None, token: str | None = None):
    body = body if body is not None else {"apiVersion": "policy/v1", "kind": "Eviction",
                                          "metadata": {"name": name, "namespace": NS}}
    return request(sb, "POST", f"/api/v1/namespaces/{NS}/pods/{name}/eviction{query}", body, token)


def make_pod(core, name: str, ready: bool = True, phase: str = "Running", labels=None, owner=None) -> dict:
    meta = {"name": name, "labels": labels if labels is not None else {"app": "a"}}
    if owner is not None:
        meta["ownerReferences"] = [{"apiVersion": owner.get("apiVersion", "apps/v1"), "kind": owner["kind"], "name": owner["metadata"]["name"],
                                    "uid": owner["metadata"]["uid"], "controller": True}]
    core.create_namespaced_pod(NS, {"metadata": meta, "spec": {"containers": [{"name": "c", "image": "i"}]}})
    status = {"phase": phase, "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    return core.patch_namespaced_pod_status(name, NS, {"status": status}).to_dict()


def make_pdb(sb, name: str = "budget", **spec) -> dict:
    spec.setdefault("selector", SELECTOR)
    code, _, obj = request(sb, "POST", f"/apis/policy/v1/namespaces/{NS}/poddisruptionbudgets",
                           {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name},
                            "spec": spec})
    assert code == 201, obj
    return obj


def pdb(sb, name: str = "budget") -> dict:
    return request(sb, "GET", f"/apis/policy/v1/namespaces/{NS}/poddisruptionbudgets/{name}")[2]


def settled(sb, name: str = "budget") -> dict:
    """The PDB once the disruption controller has caught up with everything written so far."""
    deadline = time.monotonic() + scaled(5)
    while time.monotonic() < deadline:
        assert sb.background.wait_idle(scaled(5))
        got = pdb(sb, name)
        if (got.get("status") or {}).get("observedGeneration") == got["metadata"]["generation"]:
            return got
        time.sleep(0.01)
    raise AssertionError(f"PDB {name} never observed: {pdb(sb, name)}")


def exists(sb, name: str) -> bool:
    return request(sb, "GET", f"/api/v1/namespaces/{NS}/pods/{name}")[0] == 200


def pods(core, n: int, **kw) -> None:
    for i in range(n):
        make_pod(core, f"p{i}", **kw)


# -- without a budget -----------------------------------------------------------------------------------------

def test_eviction_without_a_budget_deletes_the_pod_marked_as_a_disruption_target(sandbox, core):
    make_pod(core, "p0")
    code, _, body = evict(sandbox, "p0")
    assert (code, body) == (201, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                                  "code": 201})
    assert not exists(sandbox, "p0")
    last = [e.obj for e in sandbox.store.history if e.key == ("", "pods") and e.type == "MODIFIED"][-1]
    target = [c for c in last["status"]["conditions"] if c["type"] == "DisruptionTarget"]
    assert target and target[0]["status"] == "True" and target[0]["reason"] == "EvictionByEvictionAPI"


def test_a_missing_pod_is_404(sandbox):
    code, _, body = evict(sandbox, "gone")
    assert (code, body["reason"], body["message"]) == (404, "NotFound", 'pods "gone" not found')


@pytest.mark.parametrize("body, message", [
    ({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "other"}},
     "name in URL does not match name in Eviction object"),
    ({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "p0", "namespace": "kube-system"}},
     "the namespace of the provided object does not match the namespace sent on the request"),
    ({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p0"}}, "not a Eviction object: Pod"),
    ({"apiVersion": "policy/v2", "kind": "Eviction", "metadata": {"name": "p0"}},
     'no kind "Eviction" is registered for version "policy/v2"'),
])
def test_a_body_that_is_not_an_eviction_of_this_pod_is_400(sandbox, core, body, message):
    make_pod(core, "p0")
    code, _, answer = evict(sandbox, "p0", body=body)
    assert (code, answer["reason"], answer["message"]) == (400, "BadRequest", message)
    assert exists(sandbox, "p0")


def test_a_v1beta1_eviction_is_accepted(sandbox, core):
    make_pod(core, "p0")
    code, _, _ = evict(sandbox, "p0", body={"apiVersion": "policy/v1beta1", "kind": "Eviction",
                                             "metadata": {"name": "p0"}})
    assert code == 201 and not exists(sandbox, "p0")


def test_preconditions_that_no_longer_hold_are_409(sandbox, core):
    pod = make_pod(core, "p0")
    uid, rv = pod["metadata"]["uid"], pod["metadata"]["resource_version"]
    base = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "p0"}}
    code, _, body = evict(sandbox, "p0", body={**base, "deleteOptions": {"preconditions": {"uid": "not-it"}}})
    assert (code, body["reason"]) == (409, "Conflict")
    assert body["message"] == (f'Operation cannot be fulfilled on Pod "p0": the UID in the precondition (not-it) '
                               f"does not match the UID in record ({uid}). The object might have been deleted and "
                               "then recreated")
    code, _, body = evict(sandbox, "p0", body={**base, "deleteOptions": {"preconditions": {"resourceVersion": "1"}}})
    assert code == 409 and "the ResourceVersion in the precondition (1) does not match" in body["message"]
    assert exists(sandbox, "p0")
    code, _, _ = evict(sandbox, "p0", body={**base, "deleteOptions": {"preconditions": {"uid": uid,
                                                                                       "resourceVersion": rv}}})
    assert code == 201 and not exists(sandbox, "p0")


def test_dry_run_deletes_nothing_and_spends_no_budget(sandbox, core):
    pods(core, 2)
    make_pdb(sandbox, minAvailable=1)
    before = settled(sandbox)
    assert before["status"]["disruptionsAllowed"] == 1
    code, _, _ = evict(sandbox, "p0", query="?dryRun=All")
    assert code == 201 and exists(sandbox, "p0")
    code, _, _ = evict(sandbox, "p0", body={"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "p0"},
                                             "deleteOptions": {"dryRun": ["All"]}})
    assert code == 201 and exists(sandbox, "p0")
    assert pdb(sandbox)["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    last = [e.obj for e in sandbox.store.history if e.key == ("", "pods")][-1]
    assert all(c["type"] != "DisruptionTarget" for c in last["status"]["conditions"])


# -- with a budget --------------------------------------------------------------------------------------------

def test_an_allowed_eviction_spends_the_budget_and_the_next_is_429(sandbox, core):
    pods(core, 3)
    make_pdb(sandbox, minAvailable=2)
    status = settled(sandbox)["status"]
    assert (status["currentHealthy"], status["desiredHealthy"], status["expectedPods"],
            status["disruptionsAllowed"]) == (3, 2, 3, 1)
    assert [(c["type"], c["status"], c["reason"]) for c in status["conditions"]] == [
        ("DisruptionAllowed", "True", "SufficientPods")]
    sandbox.background.pause()  # the controller must not recompute between the two evictions
    try:
        assert evict(sandbox, "p0")[0] == 201
        spent = pdb(sandbox)["status"]
        assert spent["disruptionsAllowed"] == 0 and set(spent["disruptedPods"]) == {"p0"}
        assert [c["reason"] for c in spent["conditions"]] == ["InsufficientPods"]
        code, headers, body = evict(sandbox, "p1")
    finally:
        sandbox.background.pause(False)
    assert (code, body["reason"], body["message"]) == (
        429, "TooManyRequests", "Cannot evict pod as it would violate the pod's disruption budget.")
    assert body["details"]["causes"] == [{"type": "DisruptionBudget",
                                          "message": "The disruption budget budget needs 2 healthy pods and has "
                                                     "3 currently"}]
    assert "Retry-After" not in headers and "retryAfterSeconds" not in body["details"]
    assert exists(sandbox, "p1")
    status = settled(sandbox)["status"]  # the controller sees p0 gone
    assert (status["currentHealthy"], status["disruptionsAllowed"], status.get("disruptedPods")) == (2, 0, None)


def test_a_budget_not_yet_observed_is_429_still_being_processed(sandbox, core):
    pods(core, 2)
    sandbox.background.pause()
    try:
        make_pdb(sandbox, maxUnavailable=1)
        code, headers, body = evict(sandbox, "p0")
    finally:
        sandbox.background.pause(False)
    assert code == 429 and headers.get("Retry-After") == "10" and body["details"]["retryAfterSeconds"] == 10
    assert body["details"]["causes"][0]["message"] == "The disruption budget budget is still being processed by the server."
    assert exists(sandbox, "p0")


def test_several_budgets_on_one_pod_are_500(sandbox, core):
    pods(core, 2)
    make_pdb(sandbox, "one", minAvailable=0)
    make_pdb(sandbox, "two", selector={"matchLabels": {"app": "a"}, "matchExpressions": []}, minAvailable=0)
    settled(sandbox, "two")
    code, _, body = evict(sandbox, "p0")
    assert code == 500 and body["status"] == "Failure" and "reason" not in body
    assert body["message"] == ("This pod has more than one PodDisruptionBudget, which the eviction subresource "
                               "does not support.")
    assert exists(sandbox, "p0")


def test_a_budget_that_selects_other_pods_does_not_guard_this_one(sandbox, core):
    make_pod(core, "p0", labels={"app": "b"})
    make_pod(core, "p1")
    make_pdb(sandbox, maxUnavailable=0)
    settled(sandbox)
    assert evict(sandbox, "p1")[0] == 429
    assert evict(sandbox, "p0")[0] == 201


def test_null_selector_selects_nothing_and_empty_selects_every_pod(sandbox, core):
    pods(core, 1)
    make_pod(core, "bare", labels={})
    make_pdb(sandbox, "all", selector={}, maxUnavailable=0)
    assert settled(sandbox, "all")["status"]["expectedPods"] == 0  # unmanaged pods are left out of the scale
    assert evict(sandbox, "bare")[0] == 429
    request(sandbox, "DELETE", f"/apis/policy/v1/namespaces/{NS}/poddisruptionbudgets/all")
    code, _, obj = request(sandbox, "POST", f"/apis/policy/v1/namespaces/{NS}/poddisruptionbudgets",
                           {"metadata": {"name": "none"}, "spec": {"maxUnavailable": 0}})
    assert code == 201, obj
    settled(sandbox, "none")
    assert evict(sandbox, "bare")[0] == 201


@pytest.mark.parametrize("spec, desired, allowed", [
    ({"minAvailable": "50%"}, 2, 2),
    ({"minAvailable": "30%"}, 2, 2),     # 1.2 rounds up
    ({"maxUnavailable": "25%"}, 3, 1),
    ({"maxUnavailable": "30%"}, 2, 2),   # 1.2 rounds up: more may be unavailable
    ({"maxUnavailable": 1}, 3, 1),
    ({"minAvailable": "100%"}, 4, 0),
])
def test_percentages_and_max_unavailable_scale_the_controllers_replicas(sandbox, core, apps, spec, desired, allowed):
    sts = apps.create_namespaced_stateful_set(NS, {
        "metadata": {"name": "web"},
        "spec": {"replicas": 4, "serviceName": "web", "selector": SELECTOR,
                 "template": {"metadata": {"labels": {"app": "a"}},
                              "spec": {"containers": [{"name": "c", "image": "i"}]}}}}).to_dict()
    sts["kind"] = "StatefulSet"
    for i in range(4):
        make_pod(core, f"web-{i}", owner=sts)
    make_pdb(sandbox, **spec)
    status = settled(sandbox)["status"]
    assert (status["expectedPods"], status["desiredHealthy"], status["disruptionsAllowed"]) == (4, desired, allowed)
    apps.patch_namespaced_stateful_set("web", NS, {"spec": {"replicas": 8}})  # the scale, not the pods, counts
    deadline = time.monotonic() + scaled(5)
    while settled(sandbox)["status"]["expectedPods"] != 8:
        assert time.monotonic() < deadline, pdb(sandbox)
        time.sleep(0.01)


def test_a_pod_whose_controller_is_missing_fails_the_sync(sandbox, core):
    odd = core.create_namespaced_config_map(NS, {"metadata": {"name": "odd"}}).to_dict()
    make_pod(core, "p0", owner=dict(odd, kind="ConfigMap", apiVersion="v1"))  # no workload the controller knows
    make_pdb(sandbox, maxUnavailable=1)
    deadline = time.monotonic() + scaled(5)
    while not (pdb(sandbox).get("status") or {}).get("conditions"):
        assert time.monotonic() < deadline
        time.sleep(0.01)
    status = pdb(sandbox)["status"]
    assert status["disruptionsAllowed"] == 0 and status.get("observedGeneration", 0) == 0
    assert [(c["reason"], c["message"]) for c in status["conditions"]] == [
        ("SyncFailed", 'found no controllers for pod "p0"')]
    code, _, body = evict(sandbox, "p0")
    assert code == 429 and "still being processed" in body["details"]["causes"][0]["message"]


# -- pods the budget does not protect -------------------------------------------------------------------------

@pytest.mark.parametrize("phase", ["Pending", "Succeeded", "Failed"])
def test_a_pod_not_running_is_evicted_whatever_the_budget(sandbox, core, phase):
    make_pod(core, "p0", ready=False, phase=phase)
    make_pod(core, "p1")
    make_pdb(sandbox, maxUnavailable=0)
    settled(sandbox)
    assert evict(sandbox, "p0")[0] == 201 and not exists(sandbox, "p0")
    assert "disruptedPods" not in pdb(sandbox)["status"]


def test_an_unready_pod_is_evicted_without_spending_a_healthy_budget(sandbox, core):
    pods(core, 2)
    make_pod(core, "sick", ready=False)
    make_pdb(sandbox, minAvailable=2)  # 2 healthy of 2 wanted: IfHealthyBudget lets the sick one go
    status = settled(sandbox)["status"]
    assert (status["currentHealthy"], status["desiredHealthy"], status["disruptionsAllowed"]) == (2, 2, 0)
    assert evict(sandbox, "sick")[0] == 201 and not exists(sandbox, "sick")
    assert "disruptedPods" not in pdb(sandbox)["status"]
    assert evict(sandbox, "p0")[0] == 429  # a healthy one still may not go


def test_an_unready_pod_of_an_unhealthy_budget_waits_unless_always_allow(sandbox, core):
    make_pod(core, "p0")
    make_pod(core, "sick", ready=False)
    make_pdb(sandbox, minAvailable=2)  # 1 healthy of 2 wanted
    settled(sandbox)
    code, _, body = evict(sandbox, "sick")
    assert code == 429 and body["details"]["causes"][0]["message"] == \
        "The disruption budget budget needs 2 healthy pods and has 1 currently"
    req = urllib.request.Request(f"{sandbox.url}/apis/policy/v1/namespaces/{NS}/poddisruptionbudgets/budget",
                                 data=json.dumps({"spec": {"unhealthyPodEvictionPolicy": "AlwaysAllow"}}).encode(),
                                 method="PATCH", headers={"Content-Type": "application/merge-patch+json"})
    urllib.request.urlopen(req, timeout=scaled(10)).read()
    settled(sandbox)
    assert evict(sandbox, "sick")[0] == 201
    assert evict(sandbox, "p0")[0] == 429  # AlwaysAllow is for unready pods only


# -- the kind, discovery, clients, RBAC -----------------------------------------------------------------------

@pytest.mark.parametrize("spec, field, message", [
    ({"minAvailable": 1, "maxUnavailable": 1}, "spec", "minAvailable and maxUnavailable cannot be both set"),
    ({"minAvailable": -1}, "spec.minAvailable", "must be greater than or equal to 0"),
    ({"maxUnavailable": "101%"}, "spec.maxUnavailable", "must not be greater than 100%"),
    ({"maxUnavailable": "half"}, "spec.maxUnavailable", "a valid percent string must be"),
    ({"minAvailable": 1, "unhealthyPodEvictionPolicy": "Sometimes"}, "spec.unhealthyPodEvictionPolicy",
     'Unsupported value: "Sometimes"'),
])
def test_an_invalid_budget_is_422(sandbox, spec, field, message):
    code, _, body = request(sandbox, "POST", f"/apis/policy/v1/namespaces/{NS}/poddisruptionbudgets",
                            {"metadata": {"name": "bad"}, "spec": {"selector": SELECTOR, **spec}})
    assert code == 422, body
    assert [c["field"] for c in body["details"]["causes"]] == [field]
    assert message in body["details"]["causes"][0]["message"]


def test_discovery_names_the_eviction_subresource_as_kubectl_drain_looks_for_it(sandbox):
    resources = request(sandbox, "GET", "/api/v1")[2]["resources"]
    entry = next(r for r in resources if r["name"] == "pods/eviction")
    assert (entry["group"], entry["version"], entry["kind"], entry["verbs"]) == ("policy", "v1", "Eviction", ["create"])
    policy = request(sandbox, "GET", "/apis/policy/v1")[2]["resources"]
    assert {r["name"] for r in policy} == {"poddisruptionbudgets", "poddisruptionbudgets/status"}


def test_the_kubernetes_clients_eviction_and_budget_models(sandbox, api_client, core):
    pods(core, 2)
    policy = client.PolicyV1Api(api_client)
    policy.create_namespaced_pod_disruption_budget(NS, client.V1PodDisruptionBudget(
        metadata=client.V1ObjectMeta(name="budget"),
        spec=client.V1PodDisruptionBudgetSpec(min_available=1, selector=client.V1LabelSelector(match_labels={"app": "a"}))))
    settled(sandbox)
    core.create_namespaced_pod_eviction("p0", NS, client.V1Eviction(
        metadata=client.V1ObjectMeta(name="p0", namespace=NS),
        delete_options=client.V1DeleteOptions(grace_period_seconds=0, propagation_policy="Background")))
    assert not exists(sandbox, "p0")
    with pytest.raises(client.ApiException) as err:
        core.create_namespaced_pod_eviction("p1", NS, client.V1Eviction(metadata=client.V1ObjectMeta(name="p1")))
    assert err.value.status == 429
    got = policy.read_namespaced_pod_disruption_budget("budget", NS)
    assert got.status.disruptions_allowed == 0


def test_rbac_needs_create_on_pods_eviction():
    from promop.sandbox import Sandbox

    with Sandbox(port=0, authorization="rbac") as sb:
        admin = client.CoreV1Api(sb.api_client())
        make_pod(admin, "p0")
        admin.create_namespaced_service_account(NS, {"metadata": {"name": "drainer"}})
        token = sb.service_account_token(NS, "drainer")
        rbac = client.RbacAuthorizationV1Api(sb.api_client())
        rbac.create_namespaced_role(NS, {"metadata": {"name": "pods"}, "rules": [
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "delete", "create"]}]})
        rbac.create_namespaced_role_binding(NS, {"metadata": {"name": "pods"},
                                                 "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                                             "name": "pods"},
                                                 "subjects": [{"kind": "ServiceAccount", "name": "drainer",
                                                               "namespace": NS}]})
        code, _, body = evict(sb, "p0", token=token)
        assert code == 403 and body["message"] == (
            'pods "p0" is forbidden: User "system:serviceaccount:default:drainer" cannot create resource '
            '"pods/eviction" in API group "" in the namespace "default"')
        rbac.patch_namespaced_role("pods", NS, {"rules": [
            {"apiGroups": [""], "resources": ["pods/eviction"], "verbs": ["create"]}]})
        assert evict(sb, "p0", token=token)[0] == 201
