"""The Job a ScaledJob creates, and what the controller keeps of a Job's pod (KEDA's generateJobs).

Why a module of its own: the Job's shape (names, labels, annotations, owner, restart policy) is what
users and their tooling select on; it is KEDA's, field by field, and tested as such.
"""

from __future__ import annotations

import copy
from typing import Any

from promop.keda.hpa import KEDA_VERSION
from promop.keda.scaledjob import GENERATION_ANNOTATION

SJ_LABEL = "scaledjob.keda.sh/name"
EXCLUDED_LABELS = "scaledjob.keda.sh/job-excluded-labels"


def job_body(sj_obj: dict, sj: Any) -> dict:
    """KEDA's Job: `generateName: <scaledjob>-`; labels app.kubernetes.io/{name,version,part-of,managed-by}
    and `scaledjob.keda.sh/name`, then the ScaledJob's own labels except those named (comma-separated,
    not trimmed) in `scaledjob.keda.sh/job-excluded-labels`; annotations `scaledjob.keda.sh/generation`
    then the ScaledJob's own (which win on a clash); a controller owner reference to the ScaledJob;
    `jobTargetRef` as the spec, its pod template labelled `scaledjob.keda.sh/name` and given
    `restartPolicy: OnFailure` when it names none (the apiserver's default, Always, is refused for Jobs)."""
    meta = sj_obj["metadata"]
    name = meta["name"]
    excluded = set(((meta.get("annotations") or {}).get(EXCLUDED_LABELS) or "").split(","))
    labels = {"app.kubernetes.io/name": name, "app.kubernetes.io/version": KEDA_VERSION,
              "app.kubernetes.io/part-of": name, "app.kubernetes.io/managed-by": "keda-operator", SJ_LABEL: name}
    labels.update({k: v for k, v in (meta.get("labels") or {}).items() if k not in excluded})
    annotations = {GENERATION_ANNOTATION: str(meta.get("generation", 0)), **(meta.get("annotations") or {})}
    spec = copy.deepcopy(sj.job_spec)
    template = spec.setdefault("template", {})
    template.setdefault("metadata", {})
    template["metadata"]["labels"] = {**(template["metadata"].get("labels") or {}), SJ_LABEL: name}
    pod_spec = template.setdefault("spec", {})
    if not pod_spec.get("restartPolicy"):
        pod_spec["restartPolicy"] = "OnFailure"
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"generateName": f"{name}-", "namespace": meta["namespace"], "labels": labels,
                         "annotations": annotations,
                         "ownerReferences": [{"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledJob",
                                              "name": name, "uid": meta.get("uid"), "controller": True,
                                              "blockOwnerDeletion": True}]},
            "spec": spec}


def slim_job_pod(obj: dict) -> dict:
    """What the pending count needs of a Job's pod: its Job (label `job-name`, which KEDA lists by), its
    phase and its conditions' types and statuses."""
    meta = obj.get("metadata") or {}
    st = obj.get("status") or {}
    return {"metadata": {k: meta.get(k) for k in ("name", "namespace", "uid", "resourceVersion", "labels")},
            "status": {"phase": st.get("phase"),
                       "conditions": [{"type": c.get("type"), "status": c.get("status")}
                                      for c in st.get("conditions") or []]}}
