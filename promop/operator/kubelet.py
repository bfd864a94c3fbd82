"""Kubelet endpoints sync (`--kubelet-service=<ns>/<name>`): a Service, its Endpoints and (optionally)
EndpointSlices listing every node's kubelet, for the kube-prometheus `kubelet` ServiceMonitor.

As upstream's `pkg/kubelet` (reference §10), but driven by a Node informer as
well as the period, so a node added or removed shows up at once. Desired
objects are computed by pure functions; each write happens only when the
object differs. Not a workqueue controller: one thread, errors logged and
retried on the next trigger.
"""

from __future__ import annotations

import ipaddress
import logging
import threading
import time
from typing import Any, Mapping, Sequence

from prometheus_client import CollectorRegistry, Counter, Gauge

from promop.kube.client import KubeClient
from promop.kube.client_metrics import per_registry
from promop.kube.errors import ApiError, NotFound
from promop.kube.informer import Informer
from promop.kube.resources import ENDPOINTS, SERVICES, Resource
from promop.operator.apply import Applier
from promop.operator.diff import for_update, metadata_equal
from promop.host.logs import fields

log = logging.getLogger("promop.operator.kubelet")

NODES = Resource("", "v1", "nodes", namespaced=False, kind="Node")
ENDPOINTSLICES = Resource("discovery.k8s.io", "v1", "endpointslices", kind="EndpointSlice")
MAX_SLICE_ENDPOINTS = 512
MANAGED_BY = {"app.kubernetes.io/managed-by": "prometheus-operator"}


def ports(http_metrics: bool = True) -> list[dict]:
    out = [{"name": "https-metrics", "port": 10250, "protocol": "TCP"}]
    if http_metrics:
        out.append({"name": "http-metrics", "port": 10255, "protocol": "TCP"})
    out.append({"name": "cadvisor", "port": 4194, "protocol": "TCP"})
    return out


def _ready(node: Mapping[str, Any]) -> str:
    for c in (node.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            return c.get("status") or "Unknown"
    return "Unknown"


def node_addresses(nodes: Sequence[Mapping[str, Any]], priority: str = "internal") -> tuple[list[dict], list[str]]:
    """([{ip, node}], [error messages]) for every usable node, sorted by node name.

    A node with Ready Unknown (or no Ready condition) is dropped when a node with a
    known Ready condition has the same IP (a replaced node whose object lingers)."""
    first, second = ("InternalIP", "ExternalIP") if priority == "internal" else ("ExternalIP", "InternalIP")
    found, errors = [], []
    for node in sorted(nodes, key=lambda n: (n.get("metadata") or {}).get("name", "")):
        name = (node.get("metadata") or {}).get("name", "")
        addrs = (node.get("status") or {}).get("addresses") or []
        chosen = [a.get("address") for a in addrs if a.get("type") == first] or \
                 [a.get("address") for a in addrs if a.get("type") == second]
        good = []
        for ip in chosen:
            try:
                ipaddress.ip_address(ip)
                good.append(ip)
            except (TypeError, ValueError):
                errors.append(f"node {name}: address {ip!r} is not an IP")
        if not good:
            errors.append(f"node {name}: no {first} or {second} address; skipped")
            continue
        for ip in good:
            found.append({"ip": ip, "node": node, "ready": _ready(node)})
    known = {f["ip"] for f in found if f["ready"] != "Unknown"}
    out = [f for f in found if not (f["ready"] == "Unknown" and f["ip"] in known)]
    return out, errors


def _target(node: Mapping[str, Any]) -> dict:
    md = node.get("metadata") or {}
    return {"kind": "Node", "name": md.get("name"), "uid": md.get("uid"), "apiVersion": "v1"}


def desired_service(namespace: str, name: str, labels: Mapping[str, str], annotations: Mapping[str, str],
                    http_metrics: bool) -> dict:
    md: dict = {"name": name, "namespace": namespace, "labels": dict(labels)}
    if annotations:
        md["annotations"] = dict(annotations)
    return {"apiVersion": "v1", "kind": "Service", "metadata": md,
            "spec": {"type": "ClusterIP", "clusterIP": "None", "ports": ports(http_metrics)}}


def desired_endpoints(namespace: str, name: str, labels: Mapping[str, str], addresses: list[dict],
                      http_metrics: bool, skip_mirror: bool) -> dict:
    lbls = dict(labels)
    if skip_mirror:
        lbls["endpointslice.kubernetes.io/skip-mirror"] = "true"
    subset: dict = {"addresses": [{"ip": a["ip"], "nodeName": _target(a["node"])["name"], "targetRef": _target(a["node"])}
                                  for a in addresses],
                    "ports": ports(http_metrics)}
    return {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": name, "namespace": namespace, "labels": lbls},
            "subsets": [subset] if addresses else []}


def plan_slices(existing: list[dict], addresses: list[dict]) -> tuple[list[dict], list[dict], list[str]]:
    """(slices to update, new slice bodies (endpoints + addressType), names to delete), upstream's in-place way:
    vanished IPs removed, new IPs appended to a slice of the same family with room, the rest in new slices."""
    wanted = {a["ip"]: a for a in addresses}
    placed: set[str] = set()
    updates, deletes = [], []
    for s in sorted(existing, key=lambda s: s["metadata"]["name"]):
        eps = [e for e in s.get("endpoints") or [] if (e.get("addresses") or [None])[0] in wanted
               and (e.get("addresses") or [None])[0] not in placed]
        placed |= {e["addresses"][0] for e in eps}
        updates.append({**s, "endpoints": eps})
    for s in updates:
        family = s.get("addressType")
        for ip, a in wanted.items():
            if ip in placed or _family(ip) != family or len(s["endpoints"]) >= MAX_SLICE_ENDPOINTS:
                continue
            s["endpoints"].append(_endpoint(a))
            placed.add(ip)
    new: list[dict] = []
    for ip, a in wanted.items():
        if ip in placed:
            continue
        family = _family(ip)
        target = next((n for n in new if n["addressType"] == family and len(n["endpoints"]) < MAX_SLICE_ENDPOINTS), None)
        if target is None:
            target = {"addressType": family, "endpoints": []}
            new.append(target)
        target["endpoints"].append(_endpoint(a))
    keep = []
    for s in updates:
        if s["endpoints"]:
            keep.append(s)
        else:
            deletes.append(s["metadata"]["name"])
    return keep, new, deletes


def _family(ip: str) -> str:
    return "IPv6" if ipaddress.ip_address(ip).version == 6 else "IPv4"


def _endpoint(a: dict) -> dict:
    target = _target(a["node"])
    return {"addresses": [a["ip"]], "conditions": {"ready": True}, "nodeName": target["name"], "targetRef": target}


class _Metrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.lookup_errors = Counter("prometheus_operator_node_address_lookup_errors",
                                     "Number of times a node IP address could not be retrieved.", registry=registry)
        self.syncs = Counter("prometheus_operator_node_syncs", "Number of node endpoints synchronisations.",
                             ["resource"], registry=registry)
        self.failed = Counter("prometheus_operator_node_syncs_failed", "Number of failed node endpoints synchronisations.",
                              ["resource"], registry=registry)
        self.managed = Gauge("prometheus_operator_kubelet_managed_resource",
                             "1 when the kubelet sync manages the resource, 0 otherwise.", ["resource"], registry=registry)


class KubeletSync:
    """The kubelet Service/Endpoints(/EndpointSlices) keeper, with Controller's lifecycle interface."""

    def __init__(self, client: KubeClient, am_options: Any, options: Any, registry: CollectorRegistry,
                 informer_kwargs: dict | None = None, period: float | None = None) -> None:
        self.client = client
        self.opts = am_options
        self.namespace, self.name = am_options.kubelet_object()
        self.labels = {"k8s-app": "kubelet", "app.kubernetes.io/name": "kubelet", **MANAGED_BY,
                       **dict(getattr(options, "labels", {}) or {})}
        self.annotations = dict(getattr(options, "annotations", {}) or {})
        self.period = period if period is not None else am_options.kubelet_sync_period
        self.metrics = per_registry(registry, "kubelet-sync", _Metrics)
        self.metrics.managed.labels("endpoints").set(1 if am_options.kubelet_endpoints else 0)
        self.metrics.managed.labels("endpointslice").set(1 if am_options.kubelet_endpointslice else 0)
        kw = {"resync_period": 0, "registry": registry, **(informer_kwargs or {})}
        self.nodes = Informer(client, NODES, label_selector=am_options.kubelet_selector or None, **kw)
        self.informers = [self.nodes]
        self.applier = Applier(client)
        self._trigger = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.syncs = 0  # completed syncs (tests and logs)
        self.last_error = ""
        self.nodes.add_handler(on_add=lambda o, initial: self._trigger.set(),
                               on_update=lambda old, new: self._trigger.set() if _addresses_changed(old, new) else None,
                               on_delete=lambda o: self._trigger.set())

    # ---- lifecycle ------------------------------------------------------------------------

    def start_informers(self) -> None:
        self.nodes.start()

    def wait_for_sync(self, timeout: float, stop: threading.Event | None = None) -> bool:
        return self.nodes.wait_for_sync(timeout)

    def synced(self) -> bool:
        return self.nodes.has_synced()

    def readiness(self) -> tuple[bool, str]:
        return (True, "") if self.nodes.has_synced() else (False, "caches not synced: nodes")

    def start_workers(self) -> None:
        if self._thread is None:
            self._stop.clear()
            self._trigger.set()
            self._thread = threading.Thread(target=self._run, name="promop-kubelet-sync", daemon=True)
            self._thread.start()

    def stop_taking_work(self) -> None:
        self._stop.set()
        self._trigger.set()

    def stop(self, timeout: float = 30.0) -> None:
        self.stop_taking_work()
        if self._thread is not None:
            self._thread.join(timeout)
        self.nodes.stop()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._trigger.wait(self.period)
            if self._stop.is_set():
                return
            self._trigger.clear()
            time.sleep(0.05)  # let a burst of node events land in one sync
            try:
                self.sync()
                self.last_error = ""
            except Exception as exc:  # noqa: BLE001 - logged, retried on the next trigger or period
                self.last_error = str(exc)
                log.warning("kubelet endpoints sync failed; retrying", **fields(error=str(exc)))
                self._stop.wait(1.0)
                self._trigger.set()

    # ---- sync ---------------------------------------------------------------------------

    def sync(self) -> None:
        addresses, errors = node_addresses(self.nodes.store.list(), self.opts.kubelet_node_address_priority)
        for message in errors:
            self.metrics.lookup_errors.inc()
            log.info("node skipped", **fields(reason=message))
        ns, name = self.namespace, self.name
        service = desired_service(ns, name, self.labels, self.annotations, self.opts.kubelet_http_metrics)
        current = self._get(SERVICES, name, ns)
        if current is not None:  # keep the API-assigned fields of the existing Service
            service["spec"] = {**current.get("spec", {}), **service["spec"]}
        self.applier.apply(SERVICES, service, current)
        if self.opts.kubelet_endpoints:
            self._count("endpoints", lambda: self._apply_endpoints(desired_endpoints(
                ns, name, self.labels, addresses, self.opts.kubelet_http_metrics, self.opts.kubelet_endpointslice)))
        if self.opts.kubelet_endpointslice:
            self._count("endpointslice", lambda: self._sync_slices(addresses, self._get(SERVICES, name, ns)))
        self.syncs += 1

    def _apply_endpoints(self, desired: dict) -> None:
        """Endpoints keep their content in `subsets` (not `spec`): compared here, written only on change."""
        ns, name = self.namespace, self.name
        current = self._get(ENDPOINTS, name, ns)
        if current is None:
            self.client.create(ENDPOINTS, desired, ns)
        elif (current.get("subsets") or []) != desired["subsets"] or not metadata_equal(desired, current):
            self.client.update(ENDPOINTS, for_update(desired, current), ns)

    def _count(self, resource: str, action: Any) -> None:
        self.metrics.syncs.labels(resource).inc()
        try:
            action()
        except Exception:
            self.metrics.failed.labels(resource).inc()
            raise

    def _sync_slices(self, addresses: list[dict], service: dict | None) -> None:
        ns, name = self.namespace, self.name
        existing = self.client.list(ENDPOINTSLICES, ns, label_selector=f"kubernetes.io/service-name={name}")["items"]
        keep, new, deletes = plan_slices(existing, addresses)
        labels = {**self.labels, "kubernetes.io/service-name": name,
                  "endpointslice.kubernetes.io/managed-by": "prometheus-operator"}
        owner = []
        if service is not None:
            owner = [{"apiVersion": "v1", "kind": "Service", "name": name, "uid": service["metadata"].get("uid"),
                      "controller": True, "blockOwnerDeletion": True}]
        before = {s["metadata"]["name"]: s for s in existing}
        for s in keep:
            if s.get("endpoints") != before[s["metadata"]["name"]].get("endpoints"):
                self.client.update(ENDPOINTSLICES, s, ns)
        for body in new:
            self.client.create(ENDPOINTSLICES, {
                "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                "metadata": {"generateName": f"{name}-", "namespace": ns, "labels": labels, "ownerReferences": owner},
                "addressType": body["addressType"], "endpoints": body["endpoints"], "ports": ports(self.opts.kubelet_http_metrics),
            }, ns)
        for slice_name in deletes:
            self.applier.delete(ENDPOINTSLICES, slice_name, ns)

    def _get(self, res: Resource, name: str, ns: str) -> dict | None:
        try:
            return self.client.get(res, name, ns)
        except NotFound:
            return None


def _addresses_changed(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Node status updates are frequent (heartbeats); only addresses, Ready state or labels matter here."""
    def view(n: Mapping[str, Any]) -> tuple:
        st = n.get("status") or {}
        return (repr(st.get("addresses")), _ready(n), repr((n.get("metadata") or {}).get("labels")))
    return view(old) != view(new)


__all__ = ["KubeletSync", "node_addresses", "desired_endpoints", "desired_service", "plan_slices", "ApiError"]
