"""KEDA's ScaledJob with the prometheus trigger: every pollingInterval, create the Jobs the queue asks for.

The sizing, the pending rule and the rollout rule are promop.keda.scaledjob's; here the Jobs of a
ScaledJob are counted (informers on Jobs and on their pods, both labelled `scaledjob.keda.sh/name`),
created from `jobTargetRef` (promop.autoscaler.keda.jobbody), the finished ones beyond the history
limits deleted, the previous generation's deleted on a spec change (rollout), and status, Events and
the TriggerAuthentications' `status.scaledjobs` written as KEDA writes them. Values come through the
same shared result cache as the ScaledObjects'.

Reconcile (KEDA's ScaledJobReconciler, on add, generation or pause-annotation change): finalizer and
label, conditions initialized, pause, triggersTypes/authenticationsTypes, rollout, the loop started,
Ready. Poll (KEDA's RequestJobScale): count, create, Ready/Active from the triggers, history cleanup.
"""

from __future__ import annotations

import logging
import random
from typing import Any

from promop.host.logs import fields
from promop.keda.scaledjob import (
    is_finished, is_pending, jobs_to_delete, rollout_deletions, rollout_propagation, scale_decision, scaler_metrics,
)
from promop.keda.spec import FINALIZER, KedaSpecError, parse_scaled_job
from promop.keda.status import (
    ACTIVE, PAUSED, READY, are_initialized, get_condition, initial_conditions, set_condition,
)
from promop.kube.errors import ApiError
from promop.kube.store import NAMESPACE_INDEX

from promop.autoscaler.keda.authstatus import sync_auth_status
from promop.autoscaler.keda.jobbody import SJ_LABEL, job_body, slim_job_pod
from promop.autoscaler.keda.resources import JOBS, SCALEDJOBS
from promop.autoscaler.keda.statusdiff import merge_diff
from promop.autoscaler.keda.triggers import build_triggers

__all__ = ["PREFIX", "SJ_LABEL", "ScaledJobs", "job_body", "slim_job_pod"]

log = logging.getLogger("promop.autoscaler.keda")

PREFIX = "scaledjob:"        # the work queue's and the scheduler's keys for ScaledJobs

# (status, reason, message) as KEDA writes them on a ScaledJob
READY_RECONCILED = ("True", "ScaledJobReady", "ScaledJob is defined correctly and is ready to scaling")
READY_POLL_OK = ("True", "ScaledJobReady", "ScaledJob is defined correctly and is ready for scaling")
READY_PAUSED = ("True", "ScaledJobReady", "ScaledJob is paused, skipping reconcile loop")
READY_TRIGGER_ERROR = ("False", "TriggerError", "Triggers defined in ScaledJob are not working correctly")
READY_PARTIAL_ERROR = ("Unknown", "PartialTriggerError", "Some triggers defined in ScaledJob are not working correctly")
ACTIVE_TRUE = ("True", "ScalerActive", "Scaling is performed because triggers are active")
ACTIVE_FALSE = ("False", "ScalerNotActive", "Scaling is not performed because triggers are not active")
ACTIVE_CHECK_FAILED = ("Unknown", "UnknownState", "ScaledJob check failed")
PAUSED_TRUE = ("True", "ScaledJobPaused", "ScaledJob is paused")
PAUSED_FALSE = ("False", "ScaledJobUnpaused", "ScaledJob is unpaused")
READY_EVENT = "ScaledJob is ready for scaling"          # message.ScaledJobReadyMsg


def _finished(job: dict) -> str | None:
    """"Complete" or "Failed" when the Job has finished, else None."""
    for c in (job.get("status") or {}).get("conditions") or []:
        if c.get("type") in ("Complete", "Failed") and c.get("status") == "True":
            return c["type"]
    return None


class CheckFailed(Exception):
    """A ScaledJob KEDA's reconcile refuses: Ready=False ScaledJobCheckFailed with this message."""


class ScaledJobs:
    def __init__(self, ctl: Any) -> None:
        self.ctl = ctl
        self._started: dict[str, int] = {}      # key -> the generation whose loop runs

    def key_of(self, obj: dict) -> str:
        meta = obj.get("metadata") or {}
        return f"{PREFIX}{meta.get('namespace')}/{meta.get('name')}"

    # -- reconcile ----------------------------------------------------------------------------------
    def reconcile(self, key: str) -> None:
        """Metadata, pause, rollout and the loop's timing (on add/change); the finalizer's removal and the
        authentications' `status.scaledjobs` on deletion."""
        ctl = self.ctl
        obj = ctl.scaledjobs.store.get(key[len(PREFIX):])
        if obj is None:
            self._started.pop(key, None)
            ctl.loops.cancel(key)
            return
        meta = obj["metadata"]
        finalizers = list(meta.get("finalizers") or [])
        if meta.get("deletionTimestamp"):
            self._finalize(key, obj, finalizers)
            return
        patch: dict = {}
        if FINALIZER not in finalizers:
            patch["finalizers"] = finalizers + [FINALIZER]
        if (meta.get("labels") or {}).get(SJ_LABEL) != meta["name"]:
            patch["labels"] = {SJ_LABEL: meta["name"]}
        if patch:
            self._patch_meta(obj, patch)
        status = dict(obj.get("status") or {})
        if not are_initialized(status.get("conditions")):
            status["conditions"] = _apply(status.get("conditions"), {
                c["type"]: (c["status"], "", "") for c in initial_conditions()
                if get_condition(status.get("conditions"), c["type"]) is None})
        was_ready = (get_condition(status.get("conditions"), READY) or {}).get("status")
        try:
            ready = self._reconcile_spec(key, obj, status)
        except CheckFailed as exc:
            self._stop(key, obj)
            self._write(obj, status, {READY: ("False", "ScaledJobCheckFailed", str(exc)),
                                      ACTIVE: ACTIVE_CHECK_FAILED})
            ctl.recorder.event(obj, "Warning", "ScaledJobCheckFailed", str(exc))
        else:
            if was_ready != "True":
                ctl.recorder.event(obj, "Normal", "ScaledJobReady", READY_EVENT)
            self._write(obj, status, {READY: ready})
        sync_auth_status(ctl, obj, "scaledjobs")

    def _reconcile_spec(self, key: str, obj: dict, status: dict) -> tuple[str, str, str]:
        """KEDA's reconcileScaledJob: the Ready condition it leads to, or CheckFailed. `status` is updated
        in place (pause condition, trigger and authentication types)."""
        ctl = self.ctl
        try:
            sj = parse_scaled_job(obj)
        except KedaSpecError as exc:
            raise CheckFailed(str(exc)) from None
        paused = get_condition(status.get("conditions"), PAUSED) or {}
        if sj.paused:
            self._stop(key, obj)
            if paused.get("status") != "True":
                status["conditions"] = _apply(status.get("conditions"), {PAUSED: PAUSED_TRUE})
                ctl.recorder.event(obj, "Normal", "ScaledJobPaused", PAUSED_TRUE[2])
            return READY_PAUSED
        if paused.get("status") == "True":
            status["conditions"] = _apply(status.get("conditions"), {PAUSED: PAUSED_FALSE})
            ctl.recorder.event(obj, "Normal", "ScaledJobUnpaused", PAUSED_FALSE[2])
        status["triggersTypes"] = sj.triggers_types
        status["authenticationsTypes"] = sj.authentications_types
        if any((t or {}).get("metricType") for t in (obj.get("spec") or {}).get("triggers") or []):
            raise CheckFailed("Cannot set metricType in ScaledJob triggers: metricType is set in one of the "
                              "ScaledJob scaler")
        self._rollout(obj, sj)
        self._start(key, obj, sj)
        return READY_RECONCILED

    def _start(self, key: str, obj: dict, sj: Any) -> None:
        """(Re)start the loop. When it was not running or the generation changed, KEDA rebuilds the scalers
        and starts the watch: Normal KEDAScalersStarted "Scaler <type> is built" per trigger, then
        KEDAScalersStarted "Started scalers watch" (the order KEDA's e2e tests read)."""
        ctl = self.ctl
        if key not in ctl.loops or self._started.get(key) != sj.generation:
            for t in sj.triggers:
                ctl.recorder.event(obj, "Normal", "KEDAScalersStarted", f"Scaler {t.type} is built", dedupe=False)
            ctl.recorder.event(obj, "Normal", "KEDAScalersStarted", "Started scalers watch", dedupe=False)
        self._started[key] = sj.generation
        ctl.loops.every(key, float(sj.polling_interval), random.uniform(0, min(1.0, sj.polling_interval)))

    def _stop(self, key: str, obj: dict) -> None:
        """Stop the loop (KEDAScalersStopped "Stopped scalers watch" when one ran)."""
        self._started.pop(key, None)
        self.ctl.stop_loop(key, obj)

    def _rollout(self, obj: dict, sj: Any) -> None:
        """deletePreviousVersionScaleJobs: unless `gradual`, delete the Jobs of another generation (read
        from the API: a reconcile is rare and must not wait for the Jobs' cache). The Events'
        reasons are KEDA's (its docs' events reference); their messages are promop's."""
        ctl = self.ctl
        try:
            jobs = ctl.client.list(JOBS, sj.namespace, label_selector=f"{SJ_LABEL}={sj.name}")["items"]
        except ApiError as exc:
            raise CheckFailed(f"Cannot get list of Jobs owned by this scaledJob: {exc}") from None
        old = rollout_deletions(sj, jobs)
        if not old:
            return
        policy = rollout_propagation(sj)
        ctl.recorder.event(obj, "Normal", "ScaledJobRolloutCleanupStarted",
                           f"Deleting {len(old)} jobs of a previous generation (propagationPolicy {policy})",
                           dedupe=False)
        for job in old:
            name = job["metadata"]["name"]
            try:
                ctl.client.delete(JOBS, name, sj.namespace, propagation_policy=policy)
            except ApiError as exc:
                if exc.status == 404:
                    continue
                ctl.recorder.event(obj, "Warning", "ScaledJobRolloutCleanupFailed",
                                   f"Not able to delete job: {name}: {exc}")
                raise CheckFailed(f"Not able to delete job: {name}: {exc}") from None
        log.info("rollout: jobs of a previous generation deleted",
                 **fields(scaledjob=f"{sj.namespace}/{sj.name}", jobs=len(old), propagation=policy))
        ctl.recorder.event(obj, "Normal", "ScaledJobRolloutCleanupCompleted",
                           f"RolloutStrategy: immediate, deleted jobs owned by the previous version of the "
                           f"scaleJob: {len(old)} jobs deleted", dedupe=False)

    def _finalize(self, key: str, obj: dict, finalizers: list[str]) -> None:
        ctl = self.ctl
        self._stop(key, obj)
        sync_auth_status(ctl, obj, "scaledjobs")
        if FINALIZER in finalizers:
            ctl.recorder.event(obj, "Normal", "ScaledJobDeleted", "ScaledJob was deleted")
            self._patch_meta(obj, {"finalizers": [f for f in finalizers if f != FINALIZER]})

    def _patch_meta(self, obj: dict, patch: dict) -> None:
        meta = obj["metadata"]
        patch = {**patch, "resourceVersion": meta.get("resourceVersion")}
        try:
            self.ctl.client.patch(SCALEDJOBS, meta["name"], {"metadata": patch}, meta["namespace"])
        except ApiError as exc:
            if exc.status != 404:
                from promop.autoscaler.keda.reconcile import Retry

                raise Retry(f"metadata of ScaledJob {meta['namespace']}/{meta['name']}: {exc}") from exc

    # -- poll ---------------------------------------------------------------------------------------
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
            return  # the reconcile stops the loop and writes Paused
        jobs_informer, pods_informer = ctl.jobs(), ctl.job_pods()
        if not (jobs_informer.has_synced() and pods_informer.has_synced()):
            return  # the caches are starting (first ScaledJob): the next poll counts
        jobs = [j for j in jobs_informer.store.by_index(NAMESPACE_INDEX, sj.namespace)
                if ((j.get("metadata") or {}).get("labels") or {}).get(SJ_LABEL) == sj.name]
        pods: dict[str, list[dict]] = {}
        for p in pods_informer.store.by_index(NAMESPACE_INDEX, sj.namespace):
            job_name = ((p.get("metadata") or {}).get("labels") or {}).get("job-name")
            if job_name:
                pods.setdefault(job_name, []).append(p)
        running = [j for j in jobs if not is_finished(j)]
        pending = sum(1 for j in running if is_pending(j, pods.get(j["metadata"]["name"], []),
                                                         sj.scaling_strategy.pending_pod_conditions))
        metrics, errors = self._metrics(sj)
        decision = scale_decision(sj, metrics, len(running), pending)
        extra: dict = {}
        if decision.active:
            extra["lastActiveTime"] = ctl.wall().strftime("%Y-%m-%dT%H:%M:%SZ")
            self._create(obj, sj, decision, len(running), pending)
        self._poll_status(obj, decision.active, errors, extra)
        self._history(jobs, sj)

    def _create(self, obj: dict, sj: Any, decision: Any, running: int, pending: int) -> None:
        """createJobs: nothing when the effective max scale is 0; else `create` Jobs, a failed one a Warning
        (the others are still tried), then `KEDAJobsCreated` "Created <n> jobs" (n as asked, as KEDA)."""
        ctl = self.ctl
        if decision.effective <= 0:
            return
        for _ in range(decision.create):
            try:
                ctl.client.create(JOBS, job_body(obj, sj), sj.namespace)
            except ApiError as exc:
                ctl.recorder.event(obj, "Warning", "KEDAJobCreateFailed",
                                   f"Failed to create job {sj.name}-: {exc}")
        ctl.recorder.event(obj, "Normal", "KEDAJobsCreated", f"Created {decision.create} jobs", dedupe=False)
        if decision.create:
            log.info("jobs created", **fields(scaledjob=f"{sj.namespace}/{sj.name}", jobs=decision.create,
                                              running=running, pending=pending))

    def _poll_status(self, obj: dict, active: bool, errors: list[str], extra: dict) -> None:
        """RequestJobScale's conditions: Ready Unknown PartialTriggerError (an error, yet active), False
        TriggerError (errors, inactive), else back to True when it was not; Active with the Events
        ScaledJobActive / ScaledJobInactive when it changes (or was Unknown)."""
        status = dict(obj.get("status") or {})
        conditions = status.get("conditions")
        ready = (get_condition(conditions, READY) or {}).get("status")
        want: dict = {}
        if errors:
            log.warning("ScaledJob triggers failed", **fields(scaledjob=obj["metadata"]["name"],
                                                               error="; ".join(errors)))
            if active and ready != "Unknown":
                want[READY] = READY_PARTIAL_ERROR
            elif not active and ready != "False":
                want[READY] = READY_TRIGGER_ERROR
        elif ready != "True":
            want[READY] = READY_POLL_OK
        cond = get_condition(conditions, ACTIVE) or {}
        if cond.get("status") in (None, "Unknown") or (cond.get("status") == "True") != active:
            if active and cond.get("status") != "True":
                self.ctl.recorder.event(obj, "Normal", "ScaledJobActive", ACTIVE_TRUE[2], dedupe=False)
            if not active and cond.get("status") != "False":
                self.ctl.recorder.event(obj, "Normal", "ScaledJobInactive", ACTIVE_FALSE[2], dedupe=False)
            want[ACTIVE] = ACTIVE_TRUE if active else ACTIVE_FALSE
        status.update(extra)
        self._write(obj, status, want)

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

    def _write(self, obj: dict, status: dict, conds: dict) -> None:
        """Patch the status where it differs from the cached object's: `status` with `conds` applied."""
        old = dict(obj.get("status") or {})
        new = dict(status)
        new["conditions"] = _apply(status.get("conditions"), conds)
        for k in ("triggersTypes", "authenticationsTypes"):
            if new.get(k) == "":
                new.pop(k)                       # omitempty
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


def _apply(conditions: list[dict] | None, conds: dict) -> list[dict]:
    out = list(conditions or [])
    for type_, (status, reason, message) in conds.items():
        want = {"type": type_, "status": status, **({"reason": reason} if reason else {}),
                **({"message": message} if message else {})}
        if get_condition(out, type_) != want:
            out = set_condition(out, type_, status, reason, message)
    return out
