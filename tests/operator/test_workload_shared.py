"""The parts the workload controllers (Alertmanager, ThanosRuler, PrometheusAgent) share, one rule each.

Pure or with a small fake client: what each shared helper must do for all three controllers at once
(the controllers' own tests drive them against the sandbox).
"""

from __future__ import annotations

import logging
import re

import pytest
from prometheus_client import CollectorRegistry

from promop.host.workers import keys_from
from promop.kube.errors import ApiError, Conflict, NotFound
from promop.kube.resources import MONITORING_GROUP, Resource
from promop.operator.apply import UNCHANGED, Applied, OwnerGone, RetryLater, owner_check
from promop.operator.metrics import OperatorMetrics
from promop.operator.status import combined_availability
from promop.operator.workload.controller import crds_served
from promop.operator.workload.status import statefulset_status
from promop.operator.workload.sync import SyncReport, WorkloadSyncer, stale_shards

RULERS = Resource(MONITORING_GROUP, "v1", "thanosrulers", kind="ThanosRuler")
CONFIGS = Resource(MONITORING_GROUP, "v1alpha1", "alertmanagerconfigs", kind="AlertmanagerConfig")


def _obj(name: str, ns: str = "ns", uid: str = "u1", **md) -> dict:
    return {"metadata": {"name": name, "namespace": ns, "uid": uid, **md}}


class FakeClient:
    """GETs answer from `objects` (missing: NotFound); updates answer `update_result` or raise it."""

    def __init__(self, objects: dict | None = None, update_result=None, list_errors: dict | None = None) -> None:
        self.objects = objects or {}
        self.update_result = update_result
        self.list_errors = list_errors or {}
        self.gets: list[tuple] = []
        self.updates: list[dict] = []

    def get(self, res, name, ns=None):
        self.gets.append((res.plural, name, ns))
        if (name, ns) not in self.objects:
            raise NotFound("not found")
        return self.objects[(name, ns)]

    def update(self, res, body, ns=None, subresource=None):
        self.updates.append(body)
        if isinstance(self.update_result, Exception):
            raise self.update_result
        return self.update_result

    def list(self, res, *args, **kwargs):
        if res.plural in self.list_errors:
            raise self.list_errors[res.plural]
        return {"items": []}


# ---- apply.owner_check ------------------------------------------------------------------------

def test_owner_check_passes_only_for_the_same_live_owner():
    owner = _obj("r", uid="u1")
    client = FakeClient({("r", "ns"): _obj("r", uid="u1")})
    owner_check(client, RULERS, owner)()
    assert client.gets == [("thanosrulers", "r", "ns")]  # a direct GET of the owner, by its resource


@pytest.mark.parametrize("live", [None, _obj("r", uid="u2"), _obj("r", uid="u1", deletionTimestamp="2024-01-01T00:00:00Z")],
                         ids=["gone", "recreated", "being-deleted"])
def test_owner_check_refuses_when_the_owner_is_not_the_one_we_render_for(live):
    client = FakeClient({("r", "ns"): live} if live else {})
    with pytest.raises(OwnerGone, match="ns/r"):
        owner_check(client, RULERS, _obj("r", uid="u1"))()


# ---- stale shards -----------------------------------------------------------------------------

def test_stale_shards_are_the_owned_unwanted_shards_of_this_object_only():
    owner = _obj("a", uid="u1")
    ref = {"ownerReferences": [{"kind": "ThanosRuler", "uid": "u1", "name": "a"}]}
    objects = [
        _obj("thanos-ruler-a-rulefiles-0", **ref),            # wanted
        _obj("thanos-ruler-a-rulefiles-1", **ref),            # stale
        _obj("thanos-ruler-a-rulefiles-2", ns="other", **ref),  # another namespace
        _obj("thanos-ruler-ab-rulefiles-1", **ref),           # another object's prefix
        _obj("thanos-ruler-a-rulefiles-3", ownerReferences=[{"kind": "ThanosRuler", "uid": "u9"}]),  # not ours
        _obj("thanos-ruler-a-rulefiles-4", ownerReferences=[{"kind": "Prometheus", "uid": "u1"}]),  # other kind
        _obj("thanos-ruler-a-rulefiles", **ref),              # not a shard
    ]
    assert stale_shards(objects, owner, "ThanosRuler", "thanos-ruler-a", re.compile(r"-rulefiles-\d+$"),
                        {"thanos-ruler-a-rulefiles-0"}) == ["thanos-ruler-a-rulefiles-1"]


# ---- SyncReport.count -------------------------------------------------------------------------

def test_report_counts_every_action_and_only_changes_as_writes():
    report = SyncReport("ns/a")
    report.count(Applied(UNCHANGED, {}, {}))
    report.count(Applied("updated", {}, {}))
    report.count("deleted")
    assert report.actions == {UNCHANGED: 1, "updated": 1, "deleted": 1}
    assert report.writes == 2


# ---- the single-StatefulSet status ----------------------------------------------------------------

def _sts(ready: int) -> dict:
    return {"status": {"replicas": 2, "availableReplicas": ready, "updatedReplicas": 2}}


def _conditions(status: dict) -> dict:
    return {c["type"]: c for c in status["conditions"]}


@pytest.mark.parametrize("sts,expected,want", [
    (None, 2, ("False", "StatefulSetNotFound", "StatefulSet alertmanager-a not found")),
    (_sts(0), 2, ("False", "NoPodReady", "0/2 pods ready")),
    (_sts(1), 2, ("Degraded", "SomePodsNotReady", "1/2 pods ready")),
    (_sts(2), 2, ("True", "", "")),
    (_sts(0), 0, ("True", "", "")),  # scaled to zero: nothing to wait for
])
def test_available_follows_the_ready_pods(sts, expected, want):
    status = statefulset_status(_obj("a", generation=3), sts, app="alertmanager", expected=expected, error=None,
                                now="T")
    available = _conditions(status)["Available"]
    assert (available["status"], available["reason"], available["message"]) == want
    assert available["observedGeneration"] == 3


def test_counts_selector_and_reconciled():
    status = statefulset_status(_obj("a"), _sts(1), app="thanos-ruler", expected=2, error=None,
                                reconciled_reason="DeprecatedFieldsInUse", reconciled_message="m", now="T")
    assert {k: status[k] for k in ("replicas", "updatedReplicas", "availableReplicas", "unavailableReplicas")} == \
        {"replicas": 2, "updatedReplicas": 2, "availableReplicas": 1, "unavailableReplicas": 1}
    assert status["selector"] == ("app.kubernetes.io/instance=a,app.kubernetes.io/managed-by=prometheus-operator,"
                                  "app.kubernetes.io/name=thanos-ruler,thanos-ruler=a")
    rec = _conditions(status)["Reconciled"]
    assert (rec["status"], rec["reason"], rec["message"]) == ("True", "DeprecatedFieldsInUse", "m")
    failed = _conditions(statefulset_status(_obj("a"), _sts(2), app="thanos-ruler", expected=2, error="boom",
                                            reconciled_reason="ignored", now="T"))["Reconciled"]
    assert (failed["status"], failed["reason"], failed["message"]) == ("False", "ReconciliationFailed", "boom")


def test_transition_time_kept_while_a_condition_holds():
    old = {"conditions": [{"type": "Available", "status": "True", "lastTransitionTime": "EARLIER"},
                          {"type": "Reconciled", "status": "True", "lastTransitionTime": "EARLIER"}]}
    status = statefulset_status({**_obj("a"), "status": old}, _sts(1), app="alertmanager", expected=2,
                                error=None, now="NOW")
    assert _conditions(status)["Available"]["lastTransitionTime"] == "NOW"  # True -> Degraded: a transition
    assert _conditions(status)["Reconciled"]["lastTransitionTime"] == "EARLIER"


def test_several_workloads_report_the_worst_with_every_reason_once():
    parts = [("True", "", ""), ("Degraded", "SomePodsNotReady", "a: 1/2"), ("False", "NoPodReady", "b: 0/2"),
             ("Degraded", "SomePodsNotReady", "c: 1/2")]
    assert combined_availability(parts) == ("False", "SomePodsNotReadyAndNoPodReady", "a: 1/2; b: 0/2; c: 1/2")
    assert combined_availability([("True", "", "")] * 2) == ("True", "", "")


# ---- WorkloadSyncer: status write and Events ------------------------------------------------------

class RulerLike(WorkloadSyncer):
    kind, resource, controller, log = "ThanosRuler", RULERS, "thanosruler", logging.getLogger("test")


def _syncer(client: FakeClient) -> RulerLike:
    return RulerLike(client, None, None, OperatorMetrics(CollectorRegistry()), now=lambda: "NOW")


def _value(syncer: WorkloadSyncer, counter) -> float:
    return counter.labels(syncer.controller)._value.get()


def test_status_unchanged_is_not_written():
    client = FakeClient()
    syncer = _syncer(client)
    current = {"replicas": 1, "conditions": [{"type": "Available", "status": "True", "lastTransitionTime": "T0"}]}
    desired = {"replicas": 1, "conditions": [{"type": "Available", "status": "True", "lastTransitionTime": "NOW"}]}
    assert syncer._write_status(_obj("r"), desired, current) is None  # only the time differed: kept, unchanged
    assert client.updates == [] and _value(syncer, syncer.metrics.status_updates) == 0


def test_status_written_over_the_given_resource_version():
    client = FakeClient(update_result={"written": True})
    syncer = _syncer(client)
    obj = _obj("r", resourceVersion="5")
    assert syncer._write_status(obj, {"replicas": 2, "conditions": []}, {"replicas": 1}, resource_version="7") \
        == {"written": True}
    assert client.updates[0]["metadata"]["resourceVersion"] == "7" and client.updates[0]["status"]["replicas"] == 2
    syncer._write_status(obj, {"replicas": 2, "conditions": []}, {"replicas": 1})
    assert client.updates[1]["metadata"]["resourceVersion"] == "5"  # none given: the object's own
    assert _value(syncer, syncer.metrics.status_updates) == 2


def test_status_conflict_asks_for_a_later_sync_and_other_errors_count():
    syncer = _syncer(FakeClient(update_result=Conflict("conflict")))
    with pytest.raises(RetryLater, match="status of ThanosRuler ns/r"):
        syncer._write_status(_obj("r"), {"replicas": 2, "conditions": []}, {})
    assert _value(syncer, syncer.metrics.status_update_errors) == 0
    syncer = _syncer(FakeClient(update_result=NotFound("gone")))
    assert syncer._write_status(_obj("r"), {"replicas": 2, "conditions": []}, {}) is None
    syncer = _syncer(FakeClient(update_result=ApiError("boom", status=500)))
    with pytest.raises(ApiError):
        syncer._write_status(_obj("r"), {"replicas": 2, "conditions": []}, {})
    assert _value(syncer, syncer.metrics.status_update_errors) == 1


def test_events_name_the_workload_kind_unless_told_otherwise():
    created = []

    class EventClient(FakeClient):
        def create(self, res, body, ns=None):
            created.append(body)
            return body

    syncer = _syncer(EventClient())
    syncer.tell(_obj("r"), "StatefulSetRepaired", "evicted pod r-0")
    syncer.tell(_obj("r"), "StatefulSetRepaired", "evicted pod r-0")  # the same note again: once
    syncer._event(_obj("c"), "InvalidConfiguration", "bad", kind="AlertmanagerConfig", api_version=CONFIGS.api_version)
    assert [(e["involvedObject"]["kind"], e["involvedObject"]["apiVersion"], e["reason"]) for e in created] == [
        ("ThanosRuler", RULERS.api_version, "StatefulSetRepaired"),
        ("AlertmanagerConfig", CONFIGS.api_version, "InvalidConfiguration")]


# ---- starting: the CRD check, the worker loop ------------------------------------------------------

def test_a_controller_starts_only_when_all_its_crds_answer(caplog):
    log = logging.getLogger("test.crds")
    assert crds_served(FakeClient(), (RULERS, CONFIGS), "Alertmanager", log)
    with caplog.at_level(logging.WARNING, logger="test.crds"):
        assert not crds_served(FakeClient(list_errors={"alertmanagerconfigs": NotFound("no")}), (RULERS, CONFIGS),
                               "Alertmanager", log)
        assert not crds_served(FakeClient(list_errors={"thanosrulers": ApiError("down", status=503)}), (RULERS,),
                               "ThanosRuler", log)
    assert [r.getMessage() for r in caplog.records] == [
        "the Alertmanager CRDs are not installed; the Alertmanager controller is not started "
        "(install crds/ or run with --manage-crds)",
        "cannot check the ThanosRuler CRD; the ThanosRuler controller is not started"]


def test_a_worker_takes_keys_until_the_queue_shuts_down():
    class Queue:
        def __init__(self) -> None:
            self.answers = [("a", False), (None, False), ("b", False), (None, True), ("never", False)]

        def get(self):
            return self.answers.pop(0)

    assert list(keys_from(Queue())) == ["a", "b"]
