"""KEDA's ScaledJob with the prometheus trigger: every pollingInterval, create the Jobs the queue asks for.

The sizing is promop.keda.scaledjob's (strategies default/custom/accurate/eager, multiple-trigger
calculations, minReplicaCount); here the Jobs of a ScaledJob are counted (an informer on Jobs
labelled `scaledjob.keda.sh/name`), created from `jobTargetRef` with an owner reference, the finished
ones beyond the history limits deleted, and status/Events written. Values come through the same
shared result cache as the ScaledObjects'.
"""

from __future__ import annotations

import logging
import random
import string
from datetime import datetime, timezone
from typing import Any

from promop.host.logs import fields
from promop.keda.scaledjob import jobs_to_create, jobs_to_delete, scaler_metrics
from promop.keda.spec import FINALIZER, KedaSpecError, parse_scaled_job
from promop.keda.status import ACTIVE, PAUSED, READY, get_condition, set_condition
from promop.kube.errors import ApiError
from promop.kube.store import NAMESPACE_INDEX

from promop.autoscaler.keda.resources import JOBS, SCALEDJOBS
from promop.autoscaler.keda.statusdiff import merge_diff
from promop.autoscaler.keda.triggers import build_triggers

log = logging.getLogger("promop.autoscaler.keda")

SJ_LABEL = "scaledjob.keda.sh/name"
PREFIX = "scaledjob:"        # the work queue's and the scheduler's keys for ScaledJobs


def _finished(job: dict) -> str | None:
    """"Complete" or "Failed" when the Job has finished, else None."""
    for c in (job.get("status") or {}).get("conditions") or []:
        if c.get("type") in ("Complete", "Failed") and c.get("status") == "True":
            return c["type"]
    return None


def _pending(job: dict) -> bool:
    """An unfinished Job none of whose pods is ready yet (KEDA: its pods are not running)."""
    st = job.get("status") or {}
    return not st.get("ready") and not st.get("succeeded")


def job_body(sj_obj: dict, sj: Any) -> dict:
    """The Job KEDA creates: `<scaledjob>-<random>`, the template's labels plus the ScaledJob's, an owner
    reference to the ScaledJob, and jobTargetRef as its spec."""
    meta = sj_obj["metadata"]
    template = (sj.job_spec.get("template") or {}).get("metadata") or {}
    labels = {**(template.get("labels") or {}), "app.kubernetes.io/managed-by": "keda-operator",
              "app.kubernetes.io/name": meta["name"], "app.kubernetes.io/part-of": meta["name"],
              "scaledjob.keda.sh/name": meta["name"]}
    suffix = "".join(random.choice(string.ascii_lowercase + string.digits) for _ in range(5))
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": f"{meta['name'][:57]}-{suffix}", "namespace": meta["namespace"], "labels": labels,
                         "annotations": {"scaledjob.keda.sh/generation": str(meta.get("generation", 0))},
                         "ownerReferences": [{"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledJob",
                                              "name": meta["name"], "uid": meta.get("uid"), "controller": True,
                                              "blockOwnerDeletion": True}]},
            "spec": sj.job_spec}


class ScaledJobs:
    def __init__(self, ctl: Any) -> None:
        self.ctl = ctl

    def key_of(self, obj: dict) -> str:
        meta = obj.get("metadata") or {}
        return f"{PREFIX}{meta.get('namespace')}/{meta.get('name')}"

    def reconcile(self, key: str) -> None:
        """Metadata and the loop's timing (on add/change); the finalizer's removal on deletion."""
        ctl = self.ctl
        obj = ctl.scaledjobs.store.get(key[len(PREFIX):])
        if obj is None:
            ctl.loops.cancel(key)
            return
        meta = obj["metadata"]
        finalizers = list(meta.get("finalizers") or [])
        if meta.get("deletionTimestamp"):
            ctl.loops.cancel(key)
            if FINALIZER in finalizers:
                self._patch_meta(obj, {"finalizers": [f for f in finalizers if f != FINALIZER]})
            return
        patch: dict = {}
        if FINALIZER not in finalizers:
            patch["finalizers"] = finalizers + [FINALIZER]
        if (meta.get("labels") or {}).get(SJ_LABEL) != meta["name"]:
            patch["labels"] = {SJ_LABEL: meta["name"]}
        if patch:
            self._patch_meta(obj, patch)
        try:
            sj = parse_scaled_job(obj)
        except KedaSpecError as exc:
            ctl.loops.cancel(key)
            self._status(obj, {READY: ("False", "ScaledJobCheckFailed", str(exc))})
            ctl.recorder.event(obj, "Warning", "ScaledJobCheckFailed", str(exc))
            return
        ctl.loops.every(key, float(sj.polling_interval), random.uniform(0, min(1.0, sj.polling_interval)))

    def _patch_meta(self, obj: dict, patch: dict) -> None:
        meta = obj["metadata"]
        patch = {**patch, "resourceVersion": meta.get("resourceVersion")}
        try:
            self.ctl.client.patch(SCALEDJOBS, meta["name"], {"metadata": patch}, meta["namespace"])
        except ApiError as exc:
            if exc.status != 404:
                from promop.autoscaler.keda.reconcile import Retry

                raise Retry(f"metadata of ScaledJob {meta['namespace']}/{meta['name']}: {exc}") from exc

    def poll(self, key: str) -> None:
        ctl = self.ctl
        obj = ctl.scaledjobs.store.get(key[len(PREFIX):])
        if obj is None or obj["metadata"].get("deletionTimestamp"):
            ctl.loops.cancel(key)
            return
        try:
            sj = parse_scaled_job(obj)
        except KedaSpecError:
            ctl.loops.cancel(key)
            return
        if sj.paused:
            self._status(obj, {PAUSED: ("True", "ScaledJobPaused", "ScaledJob is paused")})
            return
        informer = ctl.jobs()
        if not informer.has_synced():
            return  # the Jobs cache is starting (first ScaledJob): the next poll counts them
        jobs = [j for j in informer.store.by_index(NAMESPACE_INDEX, sj.namespace)
                if ((j.get("metadata") or {}).get("labels") or {}).get(SJ_LABEL) == sj.name]
        running = [j for j in jobs if _finished(j) is None]
        pending = sum(1 for j in running if _pending(j))
        metrics, errors = self._metrics(sj)
        n = jobs_to_create(sj, metrics, len(running), pending)
        for _ in range(n):
            try:
                ctl.client.create(JOBS, job_body(obj, sj), sj.namespace)
            except ApiError as exc:
                ctl.recorder.event(obj, "Warning", "KEDAJobCreateFailed", f"Failed to create job: {exc}")
                break
        if n:
            ctl.recorder.event(obj, "Normal", "KEDAJobsCreated", f"Created {n} jobs", dedupe=False)
            log.info("jobs created", **fields(scaledjob=key, jobs=n, running=len(running), pending=pending))
        self._history(jobs, sj)
        active = any(m.is_active for m in metrics) or sj.min_replica_count > 0
        conds = {ACTIVE: ("True", "ScalerActive", "Scaling is performed because triggers are active") if active
                 else ("False", "ScalerNotActive", "Scaling is not performed because triggers are not active"),
                 READY: ("False", "TriggerError", "; ".join(errors)) if errors and not active else
                 ("True", "ScaledJobReady", "ScaledJob is defined correctly and is ready to scaling"),
                 PAUSED: ("False", "ScaledJobUnpaused", "ScaledJob is not paused")}
        extra = {"lastActiveTime": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")} if active else {}
        self._status(obj, conds, extra)

    def _metrics(self, sj: Any) -> tuple[list, list[str]]:
        ctl = self.ctl
        metrics, errors = [], []
        for built in build_triggers(sj, ctl.auth_sources_for(sj.namespace, None)):
            r = ctl.evaluator.evaluate(built, float(sj.polling_interval))
            if r.error is not None or built.prometheus is None:
                errors.append(f"{built.metric_name}: {r.error}")
                continue
            metrics.append(scaler_metrics(max(r.value or 0.0, 0.0), built.prometheus.threshold, r.active,
                                          sj.max_replica_count))
        return metrics, errors

    def _history(self, jobs: list[dict], sj: Any) -> None:
        for state, limit in (("Complete", sj.successful_jobs_history_limit),
                             ("Failed", sj.failed_jobs_history_limit)):
            for job in jobs_to_delete([j for j in jobs if _finished(j) == state], limit):
                try:
                    self.ctl.client.delete(JOBS, job["metadata"]["name"], sj.namespace,
                                           propagation_policy="Background")
                except ApiError as exc:
                    if exc.status != 404:
                        log.warning("old job not deleted", **fields(job=job["metadata"]["name"], error=str(exc)))

    def _status(self, obj: dict, conds: dict, extra: dict | None = None) -> None:
        old = dict(obj.get("status") or {})
        new = dict(old)
        conditions = old.get("conditions") or []
        for type_, (status, reason, message) in conds.items():
            if get_condition(conditions, type_) != {"type": type_, "status": status, "reason": reason,
                                                    "message": message}:
                conditions = set_condition(conditions, type_, status, reason, message)
        new["conditions"] = conditions
        new.update(extra or {})
        patch = merge_diff(old, new)
        if not patch:
            return
        meta = obj["metadata"]
        try:
            self.ctl.client.patch(SCALEDJOBS, meta["name"], {"status": patch}, meta["namespace"],
                                  subresource="status")
        except ApiError as exc:
            if exc.status != 404:
                log.warning("ScaledJob status not written", **fields(scaledjob=meta["name"], error=str(exc)))
