"""The verbs' semantics over plain dicts: create, get, list, update, patch, delete, scale.

Everything here runs under the store lock and raises ApiError for the client-visible errors."""

from __future__ import annotations

import base64
from operator import itemgetter
import copy
import json
import random
import string
import threading
import uuid
from dataclasses import dataclass

from promop.sandbox import apply as applying
from promop.sandbox import builtin_schema, fields, kinds, structural
from promop.sandbox import patch as patching
from promop.sandbox.admission import Webhooks
from promop.sandbox.conversion import Conversion
from promop.sandbox.discovery import Registry
from promop.sandbox.webhook_call import ServiceAddresses
from promop.sandbox.errors import (ApiError, already_exists, bad_request, conflict, expired,
                                   invalid, not_found, success_status)
from promop.sandbox.background import Background
from promop.sandbox.gc import NAMESPACE_FINALIZER, NAMESPACES, POLICIES, Collector, now

NAME_LABEL = "kubernetes.io/metadata.name"  # the namespace controller's label, always set
from promop.sandbox.resources import ResourceType, crd_types
from promop.sandbox.scale import selector_text
from promop.sandbox.selectors import Predicate
from promop.sandbox.store import Store
from promop.sandbox.crd_validation import check_crd
from promop.sandbox.validation import check_metadata, check_statefulset_update

CRDS = ("apiextensions.k8s.io", "customresourcedefinitions")
CONFIGMAPS = ("", "configmaps")
SERVICES = ("", "services")
# kube-apiserver's 410 for an expired continue token, word for word (v1.28)
EXPIRED_CONTINUE = ("The provided continue parameter is too old to display a consistent list result. You can "
                    "start a new list without the continue parameter, or use the continue token in this "
                    "response to retrieve the remainder of the results. Continuing with the provided token "
                    "results in an inconsistent list - objects that were created, modified, or deleted between "
                    "the time the first chunk was returned and now may show up in the list.")
STATEFULSETS = ("apps", "statefulsets")
SECRETS = ("", "secrets")
# metadata the server owns: kept from the stored object on every update
SERVER_METADATA = ("uid", "creationTimestamp", "deletionTimestamp",
                   "deletionGracePeriodSeconds", "generation")


@dataclass
class ListResult:
    raws: list[bytes]
    objects: list[dict]
    resource_version: int
    continue_token: str
    remaining: int | None


def _spec_part(rt: ResourceType, obj: dict) -> dict:
    skip = {"metadata", "apiVersion", "kind"} | ({"status"} if rt.status_subresource else set())
    return {k: v for k, v in obj.items() if k not in skip}


def _without_rv(obj: dict) -> dict:
    meta = {k: v for k, v in obj["metadata"].items() if k not in ("resourceVersion",
                                                                   "managedFields")}
    return dict(obj, metadata=meta)


def _path_get(obj: dict, path: str):
    current = obj
    for part in path.lstrip(".").split("."):
        current = current.get(part) if isinstance(current, dict) else None
    return current


def _path_set(obj: dict, path: str, value) -> None:
    parts = path.lstrip(".").split(".")
    current = obj
    for part in parts[:-1]:
        current = current.setdefault(part, {})
    current[parts[-1]] = value


def _ownable(rt: ResourceType, owned: dict, subresource: str) -> dict:
    """For kinds with a status subresource, status belongs to /status writes alone (what the
    server or the main resource sets there is no writer's)."""
    if not rt.status_subresource:
        return owned
    if subresource == "status":
        return {k: v for k, v in owned.items() if k == "f:status"}
    return {k: v for k, v in owned.items() if k != "f:status"}


_first, _second = itemgetter(0), itemgetter(1)


def _page(entries: list, after: tuple | None, predicate: Predicate | None,
          limit: int) -> tuple[list, bool, int | None]:
    """Store.page over an explicit (snapshot) entry list."""
    if after is not None:
        entries = [e for e in entries
                   if (e[0]["metadata"].get("namespace", ""), e[0]["metadata"]["name"]) > after]
    if predicate is not None:
        entries = [e for e in entries if predicate(e[0])]
    if limit and len(entries) > limit:
        rest = len(entries) - limit
        return entries[:limit], True, rest if predicate is None else None
    return entries, False, None


class Api:
    def __init__(self, store: Store, registry: Registry, simulate_statefulsets: bool = False,
                 background: Background | None = None, gc_delay: float = 0.05,
                 controller_delay: float = 0.05):
        self.store = store
        self.registry = registry
        self.simulate_statefulsets = simulate_statefulsets
        self.background = background or Background()
        self.controller_delay = controller_delay  # before the StatefulSet controller reacts
        self.collector = Collector(store, self._removed, self.background, gc_delay)
        self.cluster_ips = kinds.ClusterIPs()
        self._request = threading.local()  # per HTTP request: fieldValidation and warnings
        self.webhook_services = ServiceAddresses()  # Service -> address, for webhooks by `service`
        self.webhooks = Webhooks(store, self.webhook_services)
        self.conversion = Conversion(store, self.webhook_services)

    # -- per-request options -------------------------------------------------------------------
    def begin_request(self, field_validation: str = "Warn") -> None:
        self._request.field_validation = field_validation
        self._request.warnings = []
        self._request.created = False

    def took_create(self) -> bool:
        """Whether this request's apply created the object (answered 201)."""
        return getattr(self._request, "created", False)

    def take_warnings(self) -> list[str]:
        warnings = getattr(self._request, "warnings", [])
        self._request.warnings = []
        return warnings

    def _pruned(self, rt: ResourceType, paths: list[str]) -> None:
        """Unknown fields of a built-in kind were dropped: warn, or under Strict refuse."""
        if not paths:
            return
        if not hasattr(self._request, "warnings"):
            self.begin_request()
        mode = getattr(self._request, "field_validation", "Warn")
        if mode == "Strict":
            listed = ", ".join(f'unknown field "{p}"' for p in paths)
            raise bad_request(f'{rt.kind} in version "{rt.version}" cannot be handled as a '
                              f"{rt.kind}: strict decoding error: {listed}")
        if mode == "Warn":
            self._request.warnings += [f'unknown field "{p}"' for p in paths]

    def _admit_custom(self, rt: ResourceType, obj: dict, old: dict | None = None) -> None:
        """Custom resources: prune, default and validate against the served version's schema
        (with `old`, the stored object, for CEL transition rules on update)."""
        if rt.builtin:
            return
        if not hasattr(self._request, "warnings"):
            self.begin_request()
        structural.admit(rt.kind, rt.group, obj, rt.extra.get("schema"),
                         getattr(self._request, "field_validation", "Warn"),
                         self._request.warnings, old)

    def _webhooks(self, rt: ResourceType, operation: str, obj: dict, old: dict | None,
                  dry_run: bool, mutating: bool) -> dict:
        """Admission webhooks (promop.sandbox.admission): the mutating ones before schema and
        kind validation, the validating ones after, as in the apiserver's chain."""
        if not hasattr(self._request, "warnings"):
            self.begin_request()
        if mutating:
            return self.webhooks.mutate(rt, operation, obj, old, dry_run, self._request.warnings)
        self.webhooks.validate(rt, operation, obj, old, dry_run, self._request.warnings)
        return obj

    # -- helpers -------------------------------------------------------------------------------
    def _existing(self, rt: ResourceType, namespace: str, name: str) -> dict:
        obj = self.store.get(rt.key, namespace if rt.namespaced else "", name)
        if obj is None:
            raise not_found(rt.plural, rt.group, name)
        return obj

    def _check_body(self, rt: ResourceType, body, namespace: str) -> dict:
        if not isinstance(body, dict):
            raise bad_request(f"the body of a {rt.kind} write must be a JSON object")
        if body.get("kind") and body["kind"] != rt.kind:
            raise bad_request(f'the object kind "{body["kind"]}" does not match the resource '
                              f'{rt.qualified} (kind "{rt.kind}")')
        given_group = str(body.get("apiVersion") or rt.api_version).rpartition("/")[0]
        if given_group != rt.group:
            raise bad_request(f'the apiVersion "{body["apiVersion"]}" does not match the '
                              f"resource {rt.qualified} ({rt.api_version})")
        obj = copy.deepcopy(body)
        if rt.builtin:
            model = builtin_schema.model_for(rt.key, rt.kind, rt.version)
            if model is not None:
                self._pruned(rt, builtin_schema.prune(obj, model))
        meta = obj.get("metadata")
        if meta is None:
            meta = obj["metadata"] = {}
        if not isinstance(meta, dict):
            raise bad_request("metadata must be an object")
        if rt.namespaced:
            if meta.get("namespace") and meta["namespace"] != namespace:
                raise bad_request("the namespace of the provided object does not match the "
                                  "namespace sent on the request")
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        obj["apiVersion"], obj["kind"] = rt.api_version, rt.kind
        meta.pop("managedFields", None)
        if rt.key == SECRETS:
            kinds.decode_base64_fields(rt.kind, obj, "data")
        elif rt.key == CONFIGMAPS:
            kinds.decode_base64_fields(rt.kind, obj, "binaryData")
        return obj

    def _track(self, rt: ResourceType, old: dict | None, new: dict, manager: str | None,
               config: dict | None, subresource: str) -> None:
        """Set new's managedFields for a write by `manager` (None: an in-process write, which
        keeps the entries as they were); `config` is the body of an apply, else None."""
        entries = (old or {}).get("metadata", {}).get("managedFields")
        if manager is not None:
            changed = _ownable(rt, fields.update_set(old, new), subresource)
            if old is not None:
                entries = fields.disown(entries, fields.removed_set(old, new))
            if config is None:
                entries = fields.record(entries, manager, fields.UPDATE, rt.api_version,
                                        changed, subresource, changed)
            else:
                entries = fields.record(entries, manager, fields.APPLY, rt.api_version,
                                        _ownable(rt, fields.apply_set(config), subresource),
                                        subresource, changed)
        if entries:
            new["metadata"]["managedFields"] = entries
        else:
            new["metadata"].pop("managedFields", None)

    def _normalise(self, rt: ResourceType, obj: dict, old: dict | None = None) -> None:
        """Per-kind defaulting the real apiserver does on every write (kinds.RULES)."""
        found = kinds.rules(rt.key)
        if found is not None and found.default is not None:
            found.default(obj, old)
        if rt.key == SERVICES:
            kinds.default_service(obj, old, self.cluster_ips)

    def _simulate(self, rt: ResourceType, obj: dict) -> None:
        """With simulate_statefulsets, the StatefulSet controller (and kubelet) report every
        replica ready shortly after a write, through /status, as on a cluster: the
        resourceVersion a create or update returned is then stale."""
        if rt.key != STATEFULSETS or not self.simulate_statefulsets:
            return
        where = (obj["metadata"].get("namespace", ""), obj["metadata"]["name"])

        def report() -> None:
            with self.store.lock:
                current = self.store.get(STATEFULSETS, *where)
                if current is None or current["metadata"].get("deletionTimestamp"):
                    return
                spec = current.get("spec") or {}
                replicas = spec.get("replicas", 1)
                template = json.dumps(spec.get("template") or {}, sort_keys=True)
                revision = f"{where[1]}-{uuid.uuid5(uuid.NAMESPACE_OID, template).hex[:10]}"
                status = dict(current.get("status") or {})
                status.update(replicas=replicas, readyReplicas=replicas,
                              availableReplicas=replicas, updatedReplicas=replicas,
                              currentReplicas=replicas, currentRevision=revision,
                              updateRevision=revision, collisionCount=0,
                              observedGeneration=current["metadata"].get("generation", 1))
                self._write(rt, current, dict(current, status=status), "status",
                            manager="kube-controller-manager")

        self.background.after(self.controller_delay, report)

    def _validate(self, rt: ResourceType, obj: dict, old: dict | None) -> None:
        """The kind's own validation (422 with upstream's causes), after defaulting."""
        found = kinds.rules(rt.key)
        if found is None:
            return
        causes = list(found.validate(obj)) if found.validate else []
        if old is not None and found.validate_update is not None:
            causes += found.validate_update(old, obj)
        if causes:
            raise invalid(rt.kind, rt.group, obj["metadata"].get("name", ""), causes)

    def _ensure_namespace(self, rt: ResourceType, namespace: str, name: str = "") -> None:
        if not rt.namespaced:
            return
        ns = self.store.get(NAMESPACES, "", namespace)
        if ns is None:
            raise not_found("namespaces", "", namespace)
        if ns["metadata"].get("deletionTimestamp"):
            message = (f"unable to create new content in namespace {namespace} because it is "
                       "being terminated")
            raise ApiError(403, f'{rt.qualified} "{name}" is forbidden: {message}',
                           reason="Forbidden", details={
                               "name": name, "kind": rt.plural, **(
                                   {"group": rt.group} if rt.group else {}),
                               "causes": [{"reason": "NamespaceTerminating",
                                           "message": f"namespace {namespace} is being "
                                                      "terminated",
                                           "field": "metadata.namespace"}]})

    # -- create --------------------------------------------------------------------------------
    def create(self, rt: ResourceType, namespace: str, body, dry_run: bool = False,
               manager: str | None = None, applied: bool = False) -> dict:
        """`manager` (None: untracked) owns the new object's fields; with `applied` as an
        Apply of `body`, else as an Update."""
        obj = self._check_body(rt, body, namespace)
        meta = obj["metadata"]
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + "".join(
                random.choices(string.ascii_lowercase + string.digits, k=5))
        check_metadata(rt, obj)
        if meta.get("resourceVersion") and not applied:
            # etcd3 storage refuses it; the apiserver answers 500 with no reason
            raise ApiError(500, "resourceVersion should not be set on objects to be created",
                           reason="")
        with self.store.lock:
            self._ensure_namespace(rt, namespace, meta.get("name", ""))
            if self.store.get(rt.key, meta.get("namespace", ""), meta["name"]) is not None:
                raise already_exists(rt.plural, rt.group, meta["name"])
            for field in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds"):
                meta.pop(field, None)
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = now()
            if rt.generation:
                meta["generation"] = 1
            else:
                meta.pop("generation", None)
            if rt.status_subresource:
                obj.pop("status", None)
            if rt.key == NAMESPACES:
                obj["status"] = {"phase": "Active"}
                obj["spec"] = {"finalizers": [NAMESPACE_FINALIZER]}
                meta.setdefault("labels", {})[NAME_LABEL] = meta["name"]
            elif rt.key == ("", "pods"):
                obj["status"] = {"phase": "Pending"}
            elif rt.key == CRDS:
                check_crd(obj)
                if not dry_run:
                    self._serve_crd(obj)
            obj = self._webhooks(rt, "CREATE", obj, None, dry_run, mutating=True)
            self._admit_custom(rt, obj)
            self._normalise(rt, obj)
            self._validate(rt, obj, None)
            self._webhooks(rt, "CREATE", obj, None, dry_run, mutating=False)
            if rt.key == SERVICES and not dry_run:
                causes = kinds.allocate_service_ip(obj, self.cluster_ips)
                if causes:
                    raise invalid(rt.kind, rt.group, meta["name"], causes)
            self._track(rt, None, obj, manager, body if applied else None, "")
            if dry_run:
                return obj
            stored = self.store.put(rt.key, self.conversion.to_storage(rt, obj), None)
            self.collector.written(rt.key, stored, None)
            self._simulate(rt, stored)
            return stored

    def _serve_crd(self, crd: dict) -> None:
        """Serve the CRD's versions now and report it Established (transition times kept, so
        re-applying an unchanged CRD stays a no-op)."""
        names = crd["spec"]["names"]
        previous = {c.get("type"): c for c in (crd.get("status") or {}).get("conditions") or []}
        stored = list((crd.get("status") or {}).get("storedVersions") or [])
        for version in crd["spec"]["versions"]:
            if version.get("storage") and version["name"] not in stored:
                stored.append(version["name"])
        crd["status"] = {
            "acceptedNames": dict(names),
            "storedVersions": stored,
            "conditions": [
                {"type": t, "status": "True", "reason": r, "message": m,
                 "lastTransitionTime": previous.get(t, {}).get("lastTransitionTime") or now()}
                for t, r, m in (("NamesAccepted", "NoConflicts", "no conflicts found"),
                                ("Established", "InitialNamesAccepted",
                                 "the initial names have been accepted"))],
        }
        self.registry.remove_crd(crd["metadata"]["name"])
        for rt in crd_types(crd):
            self.registry.add(rt)

    def _removed(self, key: tuple[str, str], gone: dict) -> None:
        if key == SERVICES:
            self.cluster_ips.release((gone.get("spec") or {}).get("clusterIP"))
        if key == CRDS:
            served = self.registry.remove_crd(gone["metadata"]["name"])
            for rt in served[:1]:
                for obj, _raw in self.store.items(rt.key, None):
                    self.store.remove(rt.key, obj)
                self.store.drop_resource(rt.key)

    # -- reads ---------------------------------------------------------------------------------
    def get(self, rt: ResourceType, namespace: str, name: str) -> dict:
        return self._existing(rt, namespace, name)

    def list(self, rt: ResourceType, namespace: str | None, predicate: Predicate | None,
             limit: int = 0, continue_token: str = "", resource_version: str = "",
             match: str = "") -> ListResult:
        """One page: the objects after the continue token's key, in (namespace, name) order.
        A continue token is a snapshot: later pages show the list as of the first page's
        resourceVersion (410 once compaction dropped it); `resourceVersionMatch=Exact` lists
        as of `resource_version`. Like the apiserver, remainingItemCount is given only when no
        selector filters. resourceVersion "0" without a continue token is what the apiserver's
        watch cache serves: the current state, all of it, whatever `limit` says."""
        start, at = None, None
        if resource_version == "0" and not continue_token:
            limit = 0
        if continue_token:
            try:
                decoded = json.loads(base64.urlsafe_b64decode(continue_token))
                start, at = tuple(decoded["start"]), int(decoded["rv"])
            except (ValueError, KeyError, TypeError):
                start = None
            if start is None or len(start) != 2 or not all(isinstance(s, str) for s in start):
                raise bad_request(f'invalid continue token "{continue_token}"')
        elif match:
            if match not in ("Exact", "NotOlderThan"):
                raise bad_request(f'resourceVersionMatch: Unsupported value: "{match}": '
                                  'supported values: "Exact", "NotOlderThan"')
            if not resource_version:
                raise ApiError(422, "resourceVersionMatch is forbidden unless resourceVersion "
                                    "is provided", reason="Invalid")
        if resource_version and resource_version != "0":
            try:
                wanted = int(resource_version)
            except ValueError:
                raise bad_request(f'invalid resourceVersion "{resource_version}"') from None
            if wanted > self.store.rv:
                raise ApiError(504, f"Timeout: Too large resource version: {wanted}, current: "
                                    f"{self.store.rv}", reason="Timeout", details={
                                        "causes": [{"reason": "ResourceVersionTooLarge",
                                                    "message": "Too large resource version"}],
                                        "retryAfterSeconds": 1})
            if match == "Exact" and not continue_token:
                at = wanted
        scope = namespace if rt.namespaced else None
        with self.store.lock:
            rv = self.store.rv
            if at is not None and at < self.store.compacted_rv:
                if continue_token:
                    raise expired(EXPIRED_CONTINUE)
                # kube-apiserver's words for a LIST (a WATCH says "too old resource version: ...")
                raise expired("The resourceVersion for the provided list is too old.")
            if at is not None and at < rv and self.store.changed_since(rt.key, at):
                entries, more, remaining = _page(self.store.snapshot(rt.key, scope, at), start,
                                                 predicate, limit)
                rv = at
            else:
                entries, more, remaining = self.store.page(rt.key, scope, start, predicate,
                                                           limit)
                if at is not None:
                    rv = at
        token = ""
        if more:
            last = entries[-1][0]["metadata"]
            token = base64.urlsafe_b64encode(json.dumps(
                {"rv": rv, "start": [last.get("namespace", ""), last["name"]]}).encode()).decode()
        return ListResult(list(map(_second, entries)), list(map(_first, entries)), rv, token, remaining)

    # -- update / patch --------------------------------------------------------------------------
    def update(self, rt: ResourceType, namespace: str, name: str, body,
               subresource: str = "", dry_run: bool = False,
               manager: str | None = None) -> dict:
        obj = self._check_body(rt, body, namespace if rt.namespaced else "")
        if obj["metadata"].get("name", name) != name:
            raise bad_request(f'the name of the object ({obj["metadata"].get("name")}) does not '
                              f"match the name on the URL ({name})")
        obj["metadata"]["name"] = name
        with self.store.lock:
            old = self._existing(rt, namespace, name)
            wanted = obj["metadata"].get("resourceVersion")
            if not wanted and not rt.builtin:  # custom resources forbid unconditional updates
                raise invalid(rt.kind, rt.group, name, [(
                    "metadata.resourceVersion",
                    "Invalid value: 0x0: must be specified for an update")])
            if wanted and wanted != old["metadata"]["resourceVersion"]:
                raise conflict(rt.plural, rt.group, name)
            return self._write(rt, old, obj, subresource, dry_run, manager)

    def patch(self, rt: ResourceType, namespace: str, name: str, content_type: str, body,
              subresource: str = "", dry_run: bool = False,
              manager: str | None = None, force: bool = False) -> dict:
        applying = content_type.startswith(patching.APPLY_PATCH)
        if force and not applying:
            raise ApiError(422, f'PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may '
                                "not be specified for non-apply patch", reason="Invalid")
        if applying:
            if not isinstance(body, dict):
                raise bad_request("apply patch body must be an object")
            if not body.get("apiVersion") or not body.get("kind"):
                missing = "apiVersion" if not body.get("apiVersion") else "kind"
                raise bad_request(f"error decoding YAML: Object '{missing[0].upper()}"
                                  f"{missing[1:]}' is missing in an apply patch: apply bodies "
                                  "must set apiVersion and kind")
        with self.store.lock:
            try:
                old = self.conversion.to_served(rt, self._existing(rt, namespace, name))
            except ApiError:
                if applying and not subresource:  # apply creates: 201
                    created = self.create(rt, namespace, body, dry_run, manager, applied=True)
                    self._request.created = True
                    return created
                raise
            if applying and manager is not None:
                patched = self._apply(rt, old, body, manager, force, subresource)
            else:
                patched = patching.apply_patch(content_type, _without_rv(old) if not isinstance(
                    body, list) else old, body, rt.builtin)
            wanted = (patched.get("metadata") or {}).get("resourceVersion")
            if wanted and wanted != old["metadata"]["resourceVersion"]:
                raise conflict(rt.plural, rt.group, name)
            obj = self._check_body(rt, patched, namespace if rt.namespaced else "")
            if obj["metadata"].get("name") != name:
                raise bad_request("a patch may not change metadata.name")
            return self._write(rt, old, obj, subresource, dry_run, manager,
                               body if applying else None)

    def _apply(self, rt: ResourceType, old: dict, config: dict, manager: str, force: bool,
               subresource: str) -> dict:
        """Server-side apply of `config` by `manager` onto `old`: 409 on conflicts with other
        managers unless forced; fields this manager applied before and no longer applies go,
        unless another manager owns them."""
        entries = old["metadata"].get("managedFields")
        applied = _ownable(rt, fields.apply_set(config), subresource)
        found = applying.conflicts(entries, manager, old, config, applied)
        if found and not force:
            raise applying.conflict_error(found)
        base = _without_rv(old)
        if rt.builtin:
            merged = patching.strategic_merge(base, config)
        else:
            merged = applying.schema_merge(base, config, rt.extra.get("schema"))
        applying.drop_unapplied(merged, entries, manager, applied)
        return merged

    def _write(self, rt: ResourceType, old: dict, new: dict, subresource: str,
               dry_run: bool = False, manager: str | None = None,
               config: dict | None = None, tracked_as: str | None = None) -> dict:
        """The common end of update and patch: the status/main split, server-owned metadata,
        generation, immutability, field managers, no-op detection and finalizer release.
        `tracked_as` names the subresource in managedFields when it is not `subresource`."""
        stored_old, old = old, self.conversion.to_served(rt, old)
        uid = (new.get("metadata") or {}).get("uid")
        if uid and uid != old["metadata"]["uid"]:
            raise ApiError(409, f"Precondition failed: UID in precondition: {uid}, UID in "
                                f"object meta: {old['metadata']['uid']}", reason="Conflict",
                           details={"name": old["metadata"]["name"], "kind": rt.plural,
                                    **({"group": rt.group} if rt.group else {})})
        if subresource == "status":
            status = new.get("status")
            new = copy.deepcopy(old)
            if status is None:
                new.pop("status", None)
            else:
                new["status"] = status
            self._admit_custom(rt, new, old)
        elif subresource == "finalize" and rt.key == NAMESPACES:
            finalizers = (new.get("spec") or {}).get("finalizers")
            new = copy.deepcopy(old)
            new["spec"] = dict(new.get("spec") or {}, finalizers=finalizers or [])
            if not finalizers:
                del new["spec"]["finalizers"]
        elif subresource:
            raise not_found(f"{rt.plural}/{subresource}", rt.group, old["metadata"]["name"])
        else:
            if rt.status_subresource:
                if "status" in old:
                    new["status"] = copy.deepcopy(old["status"])
                else:
                    new.pop("status", None)
            new = self._webhooks(rt, "UPDATE", new, old, dry_run, mutating=True)
            self._admit_custom(rt, new, old)
            meta = new["metadata"]
            for field in SERVER_METADATA:
                if field in old["metadata"]:
                    meta[field] = old["metadata"][field]
                else:
                    meta.pop(field, None)
            check_metadata(rt, new)
            if old["metadata"].get("deletionTimestamp"):
                added = set(meta.get("finalizers") or []) - set(
                    old["metadata"].get("finalizers") or [])
                if added:
                    raise ApiError(422, f'{rt.kind} "{meta["name"]}" is invalid: '
                                        "metadata.finalizers: Forbidden: no new finalizers can "
                                        "be added if the object is being deleted")
            if rt.key == CRDS:
                check_crd(new, old)
                if not dry_run:
                    self._serve_crd(new)
            self._normalise(rt, new, old)
            if rt.key == STATEFULSETS:
                check_statefulset_update(old, new)
            self._validate(rt, new, old)
            self._webhooks(rt, "UPDATE", new, old, dry_run, mutating=False)
            if rt.generation and _spec_part(rt, new) != _spec_part(rt, old):
                meta["generation"] = old["metadata"].get("generation", 1) + 1
            if rt.key == NAMESPACES:  # spec.finalizers change only through /finalize
                meta.setdefault("labels", {})[NAME_LABEL] = meta["name"]
                if "spec" in old:
                    new["spec"] = copy.deepcopy(old["spec"])
                else:
                    new.pop("spec", None)
        new["metadata"].pop("resourceVersion", None)
        self._track(rt, old, new, manager, config,
                    subresource if tracked_as is None else tracked_as)
        if _without_rv(new) == _without_rv(old) and fields.same_ignoring_times(
                new["metadata"].get("managedFields"), old["metadata"].get("managedFields")):
            return old  # a no-op write: same resourceVersion, no watch event
        if dry_run:
            new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
            return new
        stored = self.store.put(rt.key, self.conversion.to_storage(rt, new), stored_old)
        if self.collector.finish_if_released(rt.key, stored):  # finalizers gone: now it goes
            return stored
        self.collector.written(rt.key, stored, stored_old)
        if not subresource:
            self._simulate(rt, stored)
        return stored

    # -- delete --------------------------------------------------------------------------------
    def delete(self, rt: ResourceType, namespace: str, name: str, options: dict,
               dry_run: bool = False) -> dict:
        policy = options.get("propagationPolicy")
        if policy is None and options.get("orphanDependents") is not None:
            policy = "Orphan" if options["orphanDependents"] else "Background"
        policy = policy or "Background"
        if policy not in POLICIES:
            raise bad_request(f'propagationPolicy "{policy}" is not one of '
                              f'{", ".join(POLICIES)}')
        with self.store.lock:
            obj = self._existing(rt, namespace, name)
            pre = options.get("preconditions") or {}
            if pre.get("uid") and pre["uid"] != obj["metadata"]["uid"]:
                raise ApiError(409, f"Precondition failed: UID in precondition: {pre['uid']}, "
                                    f"UID in object meta: {obj['metadata']['uid']}",
                               reason="Conflict")
            if pre.get("resourceVersion") and \
                    pre["resourceVersion"] != obj["metadata"]["resourceVersion"]:
                raise conflict(rt.plural, rt.group, name)
            if dry_run:
                return obj
            result, gone = self.collector.delete(rt.key, obj, policy)
        if gone and not rt.delete_returns_object:
            return success_status(rt.plural, name, rt.group, obj["metadata"]["uid"])
        return result

    def delete_collection(self, rt: ResourceType, namespace: str | None,
                          predicate: Predicate | None, options: dict) -> dict:
        with self.store.lock:
            listed = self.list(rt, namespace, predicate)
            for obj in listed.objects:
                meta = obj["metadata"]
                self.delete(rt, meta.get("namespace", ""), meta["name"], options)
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}

    # -- scale ---------------------------------------------------------------------------------
    def get_scale(self, rt: ResourceType, namespace: str, name: str) -> dict:
        obj = self._existing(rt, namespace, name)
        paths = rt.scale or {}
        meta = obj["metadata"]
        scale = {"kind": "Scale", "apiVersion": "autoscaling/v1",
                 "metadata": {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion",
                                                   "creationTimestamp") if k in meta},
                 "spec": {"replicas": _path_get(obj, paths.get("specReplicasPath", "")) or 0},
                 "status": {"replicas": _path_get(obj, paths.get("statusReplicasPath", "")) or 0}}
        selector = _path_get(obj, paths.get("labelSelectorPath") or ".status.selector")
        if isinstance(selector, dict):  # built-in workloads: spec.selector, served as a string
            selector = selector_text(selector)
        if selector:
            scale["status"]["selector"] = selector
        return scale

    def set_scale(self, rt: ResourceType, namespace: str, name: str, body: dict,
                  manager: str | None = None) -> dict:
        with self.store.lock:
            old = self._existing(rt, namespace, name)
            wanted = (body.get("metadata") or {}).get("resourceVersion")
            if wanted and wanted != old["metadata"]["resourceVersion"]:
                raise conflict(rt.plural, rt.group, name)
            replicas = (body.get("spec") or {}).get("replicas")
            if not isinstance(replicas, int) or replicas < 0:
                raise ApiError(422, f'Scale "{name}" is invalid: spec.replicas: must be a '
                                    "non-negative integer")
            new = copy.deepcopy(old)
            _path_set(new, rt.scale["specReplicasPath"], replicas)
            self._write(rt, old, new, "", manager=manager, tracked_as="scale")
            return self.get_scale(rt, namespace, name)
