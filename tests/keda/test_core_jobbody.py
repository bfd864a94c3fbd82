"""The Job a ScaledJob creates, field by field as KEDA 2.20's generateJobs (executor/scale_jobs.go)."""

from __future__ import annotations

from promop.autoscaler.keda.jobbody import job_body, slim_job_pod
from promop.keda.spec import parse_scaled_job


def _obj(labels=None, annotations=None, restart=None):
    pod = {"containers": [{"name": "w", "image": "busybox"}]}
    if restart:
        pod["restartPolicy"] = restart
    return {"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledJob",
            "metadata": {"name": "work", "namespace": "ns", "uid": "u1", "generation": 4,
                         "labels": labels or {}, "annotations": annotations or {}},
            "spec": {"jobTargetRef": {"parallelism": 1, "template": {"metadata": {"labels": {"app": "w"}},
                                                                     "spec": pod}},
                     "triggers": [{"type": "prometheus", "metadata": {}}]}}


def _body(obj):
    return job_body(obj, parse_scaled_job(obj))


def test_names_labels_annotations_owner():
    b = _body(_obj(labels={"team": "a", "scaledjob.keda.sh/name": "work"}, annotations={"note": "x"}))
    meta = b["metadata"]
    assert meta["generateName"] == "work-" and "name" not in meta and meta["namespace"] == "ns"
    assert meta["labels"] == {"app.kubernetes.io/name": "work", "app.kubernetes.io/version": "2.20.2",
                              "app.kubernetes.io/part-of": "work", "app.kubernetes.io/managed-by": "keda-operator",
                              "scaledjob.keda.sh/name": "work", "team": "a"}
    assert meta["annotations"] == {"scaledjob.keda.sh/generation": "4", "note": "x"}
    assert meta["ownerReferences"] == [{"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledJob", "name": "work",
                                        "uid": "u1", "controller": True, "blockOwnerDeletion": True}]
    assert b["spec"]["parallelism"] == 1


def test_template_label_and_restart_policy():
    obj = _obj()
    b = _body(obj)
    assert b["spec"]["template"]["metadata"]["labels"] == {"app": "w", "scaledjob.keda.sh/name": "work"}
    assert b["spec"]["template"]["spec"]["restartPolicy"] == "OnFailure"
    assert _body(_obj(restart="Never"))["spec"]["template"]["spec"]["restartPolicy"] == "Never"
    # the ScaledJob's own spec is not modified (each poll builds from it)
    assert "restartPolicy" not in obj["spec"]["jobTargetRef"]["template"]["spec"]
    assert obj["spec"]["jobTargetRef"]["template"]["metadata"]["labels"] == {"app": "w"}


def test_excluded_labels_split_on_commas_untrimmed():
    b = _body(_obj(labels={"a": "1", "b": "2", "c": "3"},
                   annotations={"scaledjob.keda.sh/job-excluded-labels": "a, b"}))
    labels = b["metadata"]["labels"]
    assert "a" not in labels and labels["b"] == "2" and labels["c"] == "3"   # " b" names no label


def test_scaledjob_annotation_wins_over_generation():
    b = _body(_obj(annotations={"scaledjob.keda.sh/generation": "99"}))
    assert b["metadata"]["annotations"]["scaledjob.keda.sh/generation"] == "99"


def test_slim_pod_keeps_what_the_pending_count_reads():
    pod = {"metadata": {"name": "p", "namespace": "ns", "labels": {"job-name": "j"}, "annotations": {"big": "x"}},
           "spec": {"containers": [{"name": "w"}]},
           "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True", "reason": "r"}]}}
    slim = slim_job_pod(pod)
    assert slim["metadata"]["labels"] == {"job-name": "j"} and "spec" not in slim
    assert slim["status"] == {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
