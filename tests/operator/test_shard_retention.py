"""spec.shardRetentionPolicy: upstream's TestProcessShardRetention and TestGracePeriodForPrometheusStorage
as pure decisions, then on the sandbox: a retained shard survives the scale-down with its deadline, a
deleted one goes."""

from __future__ import annotations

import datetime as dt

import pytest
from operator_testlib import NS, eventually, names, prometheus

from promop.kube.resources import NAMESPACES, PROMETHEUSES, STATEFULSETS
from promop.operator.shard_retention import DEADLINE_ANNOTATION, ZERO_TIME, RetentionError, decide, grace_period

NOW = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc)
RETAIN = {"shardRetentionPolicy": {"whenScaled": "Retain"}}


def _sts(annotations: dict | None = None) -> dict:
    return {"metadata": {"name": "prometheus-example", "namespace": "test", "annotations": annotations or {}}}


@pytest.mark.parametrize("gate, spec", [
    (False, RETAIN),  # the gate is off: Retain means nothing
    (True, {}),  # no policy
    (True, {"shardRetentionPolicy": {}}),  # whenScaled defaults to Delete
    (True, {"shardRetentionPolicy": {"whenScaled": "Delete"}}),
])
def test_deleted_at_once(gate, spec):
    decision = decide(spec, _sts(), gate, NOW)
    assert decision.delete and decision.annotate is None


def test_retain_without_annotation_writes_a_deadline_a_day_away():
    decision = decide(RETAIN, _sts(), True, NOW)
    assert not decision.delete
    assert decision.annotate == {DEADLINE_ANNOTATION: "2026-01-03T03:04:05Z"}


def test_retain_with_a_deadline_in_the_future_does_nothing():
    decision = decide(RETAIN, _sts({DEADLINE_ANNOTATION: "2026-01-03T03:04:05Z"}), True, NOW)
    assert not decision.delete and decision.annotate is None


def test_retain_with_a_deadline_past_deletes():
    decision = decide(RETAIN, _sts({DEADLINE_ANNOTATION: "2026-01-02T03:04:04Z"}), True, NOW)
    assert decision.delete and decision.annotate is None


def test_size_only_retention_keeps_the_shard_forever():
    spec = {**RETAIN, "retentionSize": "10Gi"}
    assert decide(spec, _sts(), True, NOW).annotate == {DEADLINE_ANNOTATION: ZERO_TIME}
    later = NOW + dt.timedelta(days=3650)
    assert not decide(spec, _sts({DEADLINE_ANNOTATION: ZERO_TIME}), True, later).delete


@pytest.mark.parametrize("spec, expected", [
    (RETAIN, dt.timedelta(hours=24)),
    ({"shardRetentionPolicy": {"whenScaled": "Retain", "retain": {"retentionPeriod": "15d"}}}, dt.timedelta(days=15)),
    ({**RETAIN, "retention": "15d"}, dt.timedelta(days=15)),
    ({**RETAIN, "retentionSize": "10Gi"}, None),
    ({**RETAIN, "retention": "7d", "retentionSize": "10Gi"}, dt.timedelta(days=7)),
    ({"shardRetentionPolicy": {"whenScaled": "Retain", "retain": {"retentionPeriod": "2h"}}, "retention": "7d"},
     dt.timedelta(hours=2)),
])
def test_grace_period(spec, expected):
    assert grace_period(spec) == expected


def test_an_invalid_retention_is_an_error_naming_the_field():
    with pytest.raises(RetentionError, match=r"^spec\.retention: "):
        grace_period({**RETAIN, "retention": "invalid"})


@pytest.fixture
def ns(kube):
    kube.create(NAMESPACES, {"metadata": {"name": NS}})
    return NS


def test_scaled_down_shard_is_retained_with_its_deadline_then_deleted_under_delete(kube, start_operator, ns):
    start_operator()
    kube.create(PROMETHEUSES, prometheus(shards=3, shardRetentionPolicy={"whenScaled": "Retain"}))
    three = ["prometheus-p", "prometheus-p-shard-1", "prometheus-p-shard-2"]
    eventually(lambda: names(kube, STATEFULSETS) == three, 20, "3 shards")
    kube.patch(PROMETHEUSES, "p", {"spec": {"shards": 2}}, NS)

    def deadline() -> str | None:
        annotations = kube.get(STATEFULSETS, "prometheus-p-shard-2", NS)["metadata"].get("annotations") or {}
        return annotations.get(DEADLINE_ANNOTATION)

    eventually(lambda: deadline() is not None, 20, "the deletion deadline on the retained shard")
    at = dt.datetime.fromisoformat(deadline().replace("Z", "+00:00"))
    assert dt.timedelta(hours=23) < at - dt.datetime.now(dt.timezone.utc) <= dt.timedelta(hours=24)
    assert names(kube, STATEFULSETS) == three
    assert kube.get(STATEFULSETS, "prometheus-p-shard-1", NS)["metadata"].get("annotations", {}).get(
        DEADLINE_ANNOTATION) is None  # only the excess shard

    kube.patch(PROMETHEUSES, "p", {"spec": {"shards": 3}}, NS)  # scaled back up: an active shard again
    eventually(lambda: deadline() is None, 20, "the deadline dropped from the shard in use again")

    kube.patch(PROMETHEUSES, "p", {"spec": {"shards": 1, "shardRetentionPolicy": {"whenScaled": "Delete"}}}, NS)
    eventually(lambda: names(kube, STATEFULSETS) == ["prometheus-p"], 20, "Delete removes the excess shards")
