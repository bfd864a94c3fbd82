"""One reconcile of a ScaledObject (KEDA's §2.1): metadata, spec checks, /scale, the owned HPA, status.

Every problem with the object ends as Ready=False ScaledObjectCheckFailed plus an Event, and the
reconcile returns: one bad ScaledObject never stops the others, and never crash-loops. Only
apiserver failures raise `Retry` (the controller requeues with backoff).
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from promop.host.logs import fields
from promop.keda.hpa import HpaBuildError, build_hpa
from promop.keda.spec import (COMPOSITE_METRIC, FINALIZER, SCALED_OBJECT_NAME_LABEL, TRANSFER_HPA_OWNERSHIP,
                              KedaSpecError, parse_scaled_object, pause_state)
from promop.keda.status import (ACTIVE, FALLBACK, FALLBACK_FALSE, PAUSED, PAUSED_FALSE, PAUSED_TRUE, READY, READY_OK,
                                are_initialized, get_condition, initial_conditions, ready_check_failed, set_condition,
                                set_triple, with_hpa)
from promop.keda.validate import validate_scaled_object
from promop.kube.errors import ApiError
from promop.kube.resources import Resource

from promop.autoscaler.keda.authstatus import sync_auth_status
from promop.autoscaler.keda.resources import CACHED_TARGETS, HPAS, SCALEDOBJECTS, target_resource
from promop.autoscaler.keda.triggers import build_triggers

log = logging.getLogger("promop.autoscaler.keda")


class Retry(Exception):
    """The apiserver failed us: requeue with backoff."""


class CheckFailed(Exception):
    """The object is wrong: (message, error) go to Ready=False ScaledObjectCheckFailed and an Event."""

    def __init__(self, message: str, error: str = "") -> None:
        super().__init__(f"{message}: {error}" if error else message)
        self.message = message
        self.error = error


def parse_time(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def owned_by(obj: dict, uid: str) -> bool:
    return any(ref.get("uid") == uid for ref in (obj.get("metadata") or {}).get("ownerReferences") or [])


def hpa_differs(existing: dict, desired: dict) -> bool:
    """KEDA updates its HPA when the spec, labels or annotations differ (here: exactly what we set)."""
    em, dm = existing.get("metadata") or {}, desired.get("metadata") or {}
    if existing.get("spec") != desired.get("spec"):
        return True
    labels, annotations = em.get("labels") or {}, em.get("annotations") or {}
    return any(labels.get(k) != v for k, v in (dm.get("labels") or {}).items()) or \
        any(annotations.get(k) != v for k, v in (dm.get("annotations") or {}).items())


def _ownership_errors(so: Any, older: list[dict], hpas: list[dict]) -> list[str]:
    """KEDA's webhook's ownership rules, with its messages: one ScaledObject per target, no foreign HPA."""
    gvk = f"{so.target.api_version}.{so.target.kind}"
    for other in older:
        ref = (other.get("spec") or {}).get("scaleTargetRef") or {}
        if ref.get("name") == so.target.name and (ref.get("kind") or "Deployment") == so.target.kind and \
                (ref.get("apiVersion") or "apps/v1") == so.target.api_version:
            return [f"the workload '{so.target.name}' of type '{gvk}' is already managed by the ScaledObject "
                    f"'{other['metadata']['name']}'"]
    for hpa in hpas:
        ref = (hpa.get("spec") or {}).get("scaleTargetRef") or {}
        annotations = (hpa.get("metadata") or {}).get("annotations") or {}
        if ref.get("name") != so.target.name or ref.get("kind") != so.target.kind or owned_by(hpa, so.uid):
            continue
        if annotations.get("validations.keda.sh/hpa-ownership") == "false":
            continue
        if str(so.annotations.get(TRANSFER_HPA_OWNERSHIP, "")).lower() == "true" and \
                hpa["metadata"]["name"] == so.hpa_name:
            continue
        return [f"the workload '{so.target.name}' of type '{gvk}' is already managed by the hpa "
                f"'{hpa['metadata']['name']}'"]
    return []


class Reconciler:
    """Holds nothing but references; the controller owns the caches, the states and the loops."""

    def __init__(self, ctl: Any) -> None:
        self.ctl = ctl          # promop.autoscaler.keda.controller.KedaController

    # -- entry --------------------------------------------------------------------------------------
    def reconcile(self, key: str) -> None:
        ctl = self.ctl
        obj = ctl.scaledobjects.store.get(key)
        if obj is None:
            ctl.forget(key)
            return
        if (obj.get("metadata") or {}).get("deletionTimestamp"):
            self.finalize(key, obj)
            return
        obj = self.ensure_metadata(obj)
        status = ctl.status_writer.latest(key, obj)   # not the cache: it lags our own last write
        new = dict(status)
        if not are_initialized(new.get("conditions")):
            have = {c.get("type") for c in new.get("conditions") or []}
            new["conditions"] = list(new.get("conditions") or []) + [
                c for c in initial_conditions() if c["type"] not in have]
        try:
            self._reconcile(key, obj, new)
        except CheckFailed as exc:
            ctl.stop_loop(key, obj)
            new["conditions"] = set_triple(new["conditions"], READY, ready_check_failed(exc.message, exc.error))
            new["conditions"] = set_condition(new["conditions"], ACTIVE, "Unknown", "UnknownState", "")
            if not (obj.get("spec") or {}).get("fallback"):
                new["conditions"] = set_triple(new["conditions"], FALLBACK, FALLBACK_FALSE)
            ctl.recorder.event(obj, "Warning", "ScaledObjectCheckFailed", str(exc))
            log.warning("ScaledObject check failed", **fields(scaledobject=key, error=str(exc)))
        self.write_status(obj, status, new)

    # -- metadata -----------------------------------------------------------------------------------
    def ensure_metadata(self, obj: dict) -> dict:
        """Our finalizer and the `scaledobject.keda.sh/name` label, in one metadata patch when missing."""
        meta = obj["metadata"]
        finalizers = list(meta.get("finalizers") or [])
        labels = meta.get("labels") or {}
        patch: dict = {}
        if FINALIZER not in finalizers:
            patch["finalizers"] = finalizers + [FINALIZER]
        if labels.get(SCALED_OBJECT_NAME_LABEL) != meta["name"]:
            patch["labels"] = {SCALED_OBJECT_NAME_LABEL: meta["name"]}
        if not patch:
            return obj
        patch["resourceVersion"] = meta.get("resourceVersion")
        try:
            return self.ctl.client.patch(SCALEDOBJECTS, meta["name"], {"metadata": patch}, meta["namespace"])
        except ApiError as exc:
            raise Retry(f"adding the finalizer and label to {meta['namespace']}/{meta['name']}: {exc}") from exc

    def finalize(self, key: str, obj: dict) -> None:
        """Stop the loop, restore the original replica count if asked, drop our finalizer (§2.11)."""
        ctl = self.ctl
        ctl.stop_loop(key, obj)
        meta = obj["metadata"]
        finalizers = list(meta.get("finalizers") or [])
        if FINALIZER not in finalizers:
            ctl.forget(key)
            return
        spec = obj.get("spec") or {}
        original = (obj.get("status") or {}).get("originalReplicaCount")
        if (spec.get("advanced") or {}).get("restoreToOriginalReplicaCount") is True and original is not None:
            ref = spec.get("scaleTargetRef") or {}
            res = target_resource(ref.get("apiVersion") or "apps/v1", ref.get("kind") or "Deployment")
            try:
                ctl.set_scale(res, meta["namespace"], ref.get("name", ""), int(original))
            except ApiError as exc:
                if exc.status != 404:
                    raise Retry(f"restoring {ref.get('name')} to {original} replicas: {exc}") from exc
        patch = {"metadata": {"finalizers": [f for f in finalizers if f != FINALIZER],
                              "resourceVersion": meta.get("resourceVersion")}}
        try:
            ctl.client.patch(SCALEDOBJECTS, meta["name"], patch, meta["namespace"])
        except ApiError as exc:
            if exc.status != 404:
                raise Retry(f"removing the finalizer of {key}: {exc}") from exc
        ctl.recorder.event(obj, "Normal", "ScaledObjectDeleted", "ScaledObject was deleted")
        sync_auth_status(ctl, obj)
        ctl.forget(key)

    # -- the checks and the HPA ---------------------------------------------------------------------
    def _reconcile(self, key: str, obj: dict, new: dict) -> None:
        ctl = self.ctl
        try:
            so = parse_scaled_object(obj)
        except KedaSpecError as exc:
            raise CheckFailed("ScaledObject doesn't have correct specification", str(exc)) from None
        try:
            pause = pause_state(so.annotations)
        except KedaSpecError as exc:
            raise CheckFailed("ScaledObject doesn't have correct pause annotations", str(exc)) from None
        self._conflicts(obj, so)
        res = target_resource(so.target.api_version, so.target.kind)
        scale = self._scale_of(res, so)
        group, _, version = so.target.api_version.rpartition("/")
        new["scaleTargetKind"] = f"{so.target.api_version}.{so.target.kind}"
        new["scaleTargetGVKR"] = {"group": group, "version": version, "kind": so.target.kind, "resource": res.plural}
        if new.get("originalReplicaCount") is None:
            new["originalReplicaCount"] = int((scale.get("spec") or {}).get("replicas") or 0)
        conditions = new["conditions"]
        was_paused = (get_condition(conditions, PAUSED) or {}).get("status") == "True"
        if pause.stops_loop:
            self._pause(key, obj, so, pause, res, new, was_paused)
            return
        if was_paused and not pause.any:
            conditions = set_triple(conditions, PAUSED, PAUSED_FALSE)
            new.pop("pausedReplicaCount", None)
            ctl.recorder.event(obj, "Normal", "ScaledObjectUnpaused", "ScaledObject unpaused")
        elif pause.any:
            conditions = set_triple(conditions, PAUSED, PAUSED_TRUE)
            if not was_paused:
                ctl.recorder.event(obj, "Normal", "ScaledObjectPaused", "ScaledObject paused")
        new["conditions"] = conditions
        built = build_triggers(so, ctl.auth_sources(so))
        for b in built:
            if b.error:
                ctl.recorder.event(obj, "Warning", "KEDAScalerFailed", b.error)
        new["triggersTypes"] = so.triggers_types
        if so.authentications_types:
            new["authenticationsTypes"] = so.authentications_types
        else:
            new.pop("authenticationsTypes", None)
        names = [t.metric_name for t in so.external_triggers]
        new["externalMetricNames"] = names
        resource_names = [t.metric_name for t in so.triggers if t.is_resource]
        if resource_names:
            new["resourceMetricNames"] = resource_names
        if so.using_modifiers:
            new["compositeScalerName"] = COMPOSITE_METRIC
        keep = set(names) | ({COMPOSITE_METRIC} if so.using_modifiers else set())
        if new.get("health"):
            new["health"] = {k: v for k, v in new["health"].items() if k in keep}
        self._ensure_hpa(obj, so, pause, scale, new)
        new["hpaName"] = so.hpa_name
        was_ready = (get_condition(new["conditions"], READY) or {}).get("status") == "True"
        new["conditions"] = with_hpa(set_triple(new["conditions"], READY, READY_OK),
                                     ctl.hpas.store.get(f"{so.namespace}/{so.hpa_name}"), so.namespace, so.hpa_name)
        if not was_ready and (get_condition(new["conditions"], READY) or {}).get("status") == "True":
            ctl.recorder.event(obj, "Normal", "ScaledObjectReady",
                               "ScaledObject is ready for scaling", dedupe=False)
        ctl.start_loop(key, obj, so, pause, res, new, built)
        sync_auth_status(ctl, obj)

    def _conflicts(self, obj: dict, so: Any) -> None:
        """KEDA's webhook refuses a second ScaledObject or a foreign HPA on one target; an object that
        got in anyway (no webhook, or created before the other) gets a condition and an event here. Of
        two ScaledObjects on one target the older keeps it."""
        ctl = self.ctl
        meta = obj["metadata"]
        mine = (meta.get("creationTimestamp") or "", meta["name"])
        target = f"{so.namespace}/{so.target.kind}/{so.target.name}"   # controller.target_key
        older = [o for o in ctl.scaledobjects.store.by_index("target", target)
                 if o["metadata"]["name"] != so.name and not o["metadata"].get("deletionTimestamp")
                 and ((o["metadata"].get("creationTimestamp") or ""), o["metadata"]["name"]) < mine]
        hpas = ctl.hpas.store.by_index("target", target)
        try:
            errors, _warnings = validate_scaled_object(obj, older, hpas)
        except NotImplementedError:  # until the core's webhook rules land: the two ownership rules
            errors = _ownership_errors(so, older, hpas)
        if errors:
            raise CheckFailed("ScaledObject doesn't have correct specification", "; ".join(errors))

    def _scale_of(self, res: Resource, so: Any) -> dict:
        """The target's Scale: from the informer cache for Deployments and StatefulSets (no request: at
        10,000 ScaledObjects a GET each is minutes of the client's rate limit), else GET /scale."""
        inf = self.ctl.workloads.get(res.kind) if res in CACHED_TARGETS.values() else None
        if inf is not None:
            obj = inf.store.get(f"{so.namespace}/{so.target.name}")
            if obj is None:
                raise CheckFailed("ScaledObject doesn't have correct scaleTargetRef specification",
                                  f"{so.target.kind} {so.namespace}/{so.target.name} not found")
            return {"apiVersion": "autoscaling/v1", "kind": "Scale",
                    "metadata": {"name": so.target.name, "namespace": so.namespace},
                    "spec": {"replicas": int(obj["spec"].get("replicas", 1) or 0)}}
        try:
            return self.ctl.client.get(res, so.target.name, so.namespace, subresource="scale")
        except ApiError as exc:
            if exc.status in (404, 405):
                raise CheckFailed("ScaledObject doesn't have correct scaleTargetRef specification",
                                  f"{so.target.kind} {so.namespace}/{so.target.name} ({so.target.api_version}) has "
                                  f"no /scale subresource or does not exist: {exc}") from None
            raise Retry(f"reading the /scale of {so.target.kind} {so.namespace}/{so.target.name}: {exc}") from exc

    def _pause(self, key: str, obj: dict, so: Any, pause: Any, res: Resource, new: dict, was_paused: bool) -> None:
        """paused / paused-replicas: Paused=True first, stop the loop, delete the HPA, set the replicas."""
        ctl = self.ctl
        new["conditions"] = set_triple(new["conditions"], PAUSED, PAUSED_TRUE)
        if not was_paused:
            ctl.recorder.event(obj, "Normal", "ScaledObjectPaused", "ScaledObject paused")
        ctl.stop_loop(key, obj)
        ctl.drop_state(key)
        existing = ctl.hpas.store.get(f"{so.namespace}/{so.hpa_name}")
        if existing is not None and owned_by(existing, so.uid):
            try:
                ctl.client.delete(HPAS, so.hpa_name, so.namespace)
            except ApiError as exc:
                if exc.status != 404:
                    raise Retry(f"deleting HPA {so.hpa_name} of paused {key}: {exc}") from exc
        if pause.paused_replicas is not None:
            try:
                ctl.set_scale(res, so.namespace, so.target.name, pause.paused_replicas)
            except ApiError as exc:
                raise Retry(f"scaling paused {key} to {pause.paused_replicas}: {exc}") from exc
            new["pausedReplicaCount"] = pause.paused_replicas
        else:
            new.pop("pausedReplicaCount", None)

    def _ensure_hpa(self, obj: dict, so: Any, pause: Any, scale: dict, new: dict) -> None:
        """Create the HPA, or update it when it differs; a foreign HPA of that name is a check failure."""
        ctl = self.ctl
        old_name = new.get("hpaName")
        if old_name and old_name != so.hpa_name:
            old = ctl.hpas.store.get(f"{so.namespace}/{old_name}")
            if old is not None and owned_by(old, so.uid):
                try:
                    ctl.client.delete(HPAS, old_name, so.namespace)
                except ApiError as exc:
                    if exc.status != 404:
                        raise Retry(f"deleting the renamed HPA {old_name}: {exc}") from exc
        try:
            desired = build_hpa(obj, so, pause, scale)
        except (HpaBuildError, KedaSpecError, ValueError) as exc:
            raise CheckFailed("ScaledObject doesn't have correct triggers specification", str(exc)) from None
        existing = ctl.hpas.store.get(f"{so.namespace}/{so.hpa_name}")
        try:
            if existing is None:
                ctl.client.create(HPAS, desired, so.namespace)
                log.info("HPA created", **fields(scaledobject=f"{so.namespace}/{so.name}", hpa=so.hpa_name))
                return
            if not owned_by(existing, so.uid) and \
                    str(so.annotations.get(TRANSFER_HPA_OWNERSHIP, "")).lower() != "true":
                raise CheckFailed("Failed to ensure HPA is correctly created for ScaledObject",
                                  f"the HPA {so.namespace}/{so.hpa_name} exists and is not owned by this "
                                  f"ScaledObject; delete it, or adopt it with the annotation "
                                  f"{TRANSFER_HPA_OWNERSHIP}: \"true\"")
            if hpa_differs(existing, desired) or not owned_by(existing, so.uid):
                body = dict(desired)
                meta = dict(desired["metadata"])
                meta["resourceVersion"] = existing["metadata"].get("resourceVersion")
                meta["labels"] = {**(existing["metadata"].get("labels") or {}), **(meta.get("labels") or {})}
                meta["annotations"] = {**(existing["metadata"].get("annotations") or {}),
                                       **(meta.get("annotations") or {})}
                body["metadata"] = meta
                ctl.client.update(HPAS, body, so.namespace)
                log.info("HPA updated", **fields(scaledobject=f"{so.namespace}/{so.name}", hpa=so.hpa_name))
        except CheckFailed:
            raise
        except ApiError as exc:
            if exc.status == 409:
                raise Retry(f"HPA {so.hpa_name} changed meanwhile: {exc}") from exc
            if exc.status in (400, 422):
                raise CheckFailed("Failed to ensure HPA is correctly created for ScaledObject", str(exc)) from None
            raise Retry(f"writing HPA {so.hpa_name}: {exc}") from exc

    # -- status -------------------------------------------------------------------------------------
    def write_status(self, obj: dict, old: dict, new: dict) -> None:
        """A reconcile's status, written before it returns (a failure requeues it), after and instead of
        any scale-loop status still waiting in the writer for this object."""
        meta = obj["metadata"]
        key = f"{meta['namespace']}/{meta['name']}"
        try:
            self.ctl.status_writer.write_now(key, meta["namespace"], meta["name"], old, new)
        except ApiError as exc:
            if exc.status == 404:
                return
            raise Retry(f"status of {key}: {exc}") from exc
