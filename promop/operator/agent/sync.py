"""sync(key): one PrometheusAgent from the caches to the API, writing only what differs.

Render (render_agent) from the informer caches plus direct GETs of the referenced Secrets and
ConfigMaps; write each object through the Applier (which compares before it writes); delete the
StatefulSets/DaemonSet of a mode or shard no longer wanted; then the agent's status, an Event for
each problem, and status.bindings on the ServiceMonitors/PodMonitors/Probes/ScrapeConfigs it selects or rejects.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from promop.host.logs import fields
from promop.kube.client import KubeClient
from promop.kube.errors import ApiError, Conflict, Forbidden, NotFound
from promop.kube.resources import (EVENTS, PODMONITORS, PROBES, SCRAPECONFIGS, SECRETS, SERVICEMONITORS,
                                   SERVICES, STATEFULSETS)
from promop.operator import feedback
from promop.operator.agent import DAEMONSETS, PROMETHEUSAGENTS
from promop.operator.agent.status import agent_status
from promop.operator.apply import Applier, RetryLater
from promop.operator.status import now_rfc3339, status_changed
from promop.operator.workload.sync import ns_name, owned_by
from promop.operator.writer import BY_KIND
from promop.render.agent import InvalidAgent, render_agent
from promop.render.agent.modes import is_daemonset
from promop.render.model import ObjectRef, RenderInputs, RenderOptions
from promop.render.pipeline import references as render_references

log = logging.getLogger("promop.operator.agent")

WRITE_RESOURCES = {"Secret": SECRETS, "Service": SERVICES, "StatefulSet": STATEFULSETS, "DaemonSet": DAEMONSETS}
MONITORS = {"ServiceMonitor": SERVICEMONITORS, "PodMonitor": PODMONITORS, "Probe": PROBES,
            "ScrapeConfig": SCRAPECONFIGS}
KIND = "PrometheusAgent"
API_VERSION = "monitoring.coreos.com/v1alpha1"
V1ALPHA1_KINDS = (KIND, "ScrapeConfig")  # the others selected (ServiceMonitor, PodMonitor, Probe) are monitoring v1


class AgentStores:
    """The informer caches the agent sync reads."""

    def __init__(self, agents: Any, servicemonitors: Any, podmonitors: Any, namespaces: Any,
                 statefulsets: Any, daemonsets: Any | None, scrapeconfigs: Any = None, probes: Any = None) -> None:
        self.agents = agents
        self.monitors = {"ServiceMonitor": servicemonitors, "PodMonitor": podmonitors}
        if probes is not None:  # Probes (CRD served): rendered, their status.bindings written, like monitors
            self.monitors["Probe"] = probes
        if scrapeconfigs is not None:  # ScrapeConfigs: rendered, their status.bindings written, like monitors
            self.monitors["ScrapeConfig"] = scrapeconfigs
        self.namespaces = namespaces
        self.statefulsets = statefulsets
        self.daemonsets = daemonsets


class AgentSyncer:
    """Reconciles one PrometheusAgent per call; safe for concurrent calls on different keys."""

    def __init__(self, client: KubeClient, stores: AgentStores, options: RenderOptions,
                 namespace_allowed: Callable[[str], bool] = lambda ns: True,
                 now: Callable[[], str] = now_rfc3339) -> None:
        self.client = client
        self.stores = stores
        self.options = options
        self.namespace_allowed = namespace_allowed
        self.now = now
        self.applier = Applier(client)
        self.events = feedback.EventDeduper()
        self._lock = threading.Lock()
        self.references: dict[str, set[tuple[str, str, str]]] = {}
        self.last_result: dict[str, Any] = {}
        self.last_error: dict[str, str | None] = {}

    def sync(self, key: str) -> None:
        agent = self.stores.agents.get(key)
        if agent is None:
            with self._lock:
                self.references.pop(key, None)
                self.last_result.pop(key, None)
                self.last_error.pop(key, None)
            ns, _, name = key.partition("/")
            self._bindings({"kind": KIND, "metadata": {"namespace": ns, "name": name}}, {})  # drop ours
            return
        if (agent.get("metadata") or {}).get("deletionTimestamp"):
            return
        agent = {**agent, "kind": KIND}
        if (agent.get("spec") or {}).get("paused"):
            log.info("paused: no action taken", **fields(key=key))
            return
        result, error = None, None
        try:
            result = self._render(key, agent)
            self._write(agent, result)
        except RetryLater:
            raise
        except InvalidAgent as exc:
            error = str(exc)
            self._event(agent, KIND, feedback.INVALID, error)
        except Exception as exc:  # noqa: BLE001 - reported in status, then retried by the caller
            error = str(exc)
            self._status(agent, result, error)
            raise
        with self._lock:
            self.last_error[key] = error
        self._status(agent, result, error)
        if result is not None:
            self._feedback(agent, result)
        log.info("synced", **fields(key=key, kind=KIND, error=error or "",
                                    jobs=len((result.config or {}).get("scrape_configs") or ()) if result else 0))

    # ---- render -------------------------------------------------------------------------

    def _listed(self, kind: str) -> list[dict]:
        """The cached objects of an optional kind (none when its CRD is not served)."""
        store = self.stores.monitors.get(kind)
        return store.list() if store is not None else []

    def _render(self, key: str, agent: dict):
        inputs = RenderInputs(
            prometheus=agent,
            service_monitors=self.stores.monitors["ServiceMonitor"].list(),
            pod_monitors=self.stores.monitors["PodMonitor"].list(),
            probes=self._listed("Probe"),
            scrape_configs=self._listed("ScrapeConfig"),
            namespaces=[n for n in self.stores.namespaces.list() if self.namespace_allowed(ns_name(n)[1])],
            options=self.options,
        )
        refs: set[ObjectRef] = render_references(inputs)
        for ref in refs:
            target = inputs.secrets if ref.kind == "Secret" else inputs.configmaps
            try:
                target[(ref.namespace, ref.name)] = self.client.get(BY_KIND[ref.kind], ref.name, ref.namespace)
            except NotFound:
                pass
            except Forbidden as exc:
                log.warning("cannot read a referenced object; treating it as missing",
                            **fields(key=key, object=str(ref), error=str(exc)))
        with self._lock:
            self.references[key] = {(r.kind, r.namespace, r.name) for r in refs}
        result = render_agent(inputs)
        with self._lock:
            self.last_result[key] = result
        return result

    # ---- write --------------------------------------------------------------------------

    def _write(self, agent: dict, result: Any) -> None:
        for obj in result.objects():
            res = WRITE_RESOURCES[obj["kind"]]
            ns, name = ns_name(obj)
            store = {"StatefulSet": self.stores.statefulsets, "DaemonSet": self.stores.daemonsets}.get(obj["kind"])
            # workloads from the informer cache (a stale cache means a conflict, retried later); the rest by GET
            current = store.get(f"{ns}/{name}") if store is not None else self._get(res, name, ns)
            if obj is result.config_secret and result.config_unmanaged and current is not None:
                continue  # unmanaged: the user's Secret, created once, never overwritten
            if current is not None and not owned_by(current, agent, KIND) and obj["kind"] != "Service":
                raise InvalidAgent(f"{obj['kind']} {ns}/{name} exists and is not owned by this PrometheusAgent; "
                                   "delete or rename it")
            self.applier.apply(res, obj, current, refetch=store is None)
        wanted = {(o["kind"], o["metadata"]["name"]) for o in result.objects()}
        ns = ns_name(agent)[0]
        for kind, store in (("StatefulSet", self.stores.statefulsets), ("DaemonSet", self.stores.daemonsets)):
            for obj in (store.list() if store is not None else ()):
                o_ns, o_name = ns_name(obj)
                if o_ns == ns and owned_by(obj, agent, KIND) and (kind, o_name) not in wanted:
                    self.applier.delete(WRITE_RESOURCES[kind], o_name, ns, propagation_policy="Foreground")

    def _get(self, res: Any, name: str, ns: str) -> dict | None:
        try:
            return self.client.get(res, name, ns)
        except NotFound:
            return None

    # ---- status, Events, bindings ---------------------------------------------------------

    def workloads(self, agent: Mapping[str, Any], result: Any) -> list[tuple[str, dict | None]]:
        ns, _ = ns_name(agent)
        if result is None:
            return []
        desired = result.daemonsets if result.daemonsets else result.statefulsets
        store = self.stores.daemonsets if result.daemonsets else self.stores.statefulsets
        out = []
        for obj in desired:
            name = obj["metadata"]["name"]
            live = store.get(f"{ns}/{name}") if store is not None else None
            out.append((name, live))
        return out

    def refresh_status(self, key: str) -> None:
        """A StatefulSet/DaemonSet status changed: recompute the agent's status from the last render."""
        agent = self.stores.agents.get(key)
        with self._lock:
            result, error = self.last_result.get(key), self.last_error.get(key)
        if agent is not None and result is not None:
            self._status({**agent, "kind": KIND}, result, error)

    def _status(self, agent: dict, result: Any, error: str | None) -> None:
        reason = ""
        if result is not None and not any(d.selected for d in result.selection):
            reason = "NoSelectedResources"
        desired = agent_status(agent, self.workloads(agent, result), is_daemonset(agent), error=error,
                               now=self.now(), reason=reason)
        if not status_changed(agent.get("status"), desired):
            return
        try:
            self.client.update(PROMETHEUSAGENTS, {**agent, "status": desired}, subresource="status")
        except NotFound:
            pass  # gone
        except Conflict:
            # our cached copy is older than the agent (often our own last status write): retried with backoff.
            # Dropping it lost the status for good when no later event came (the workloads already ready, and
            # the agent's own status-only updates queue nothing)
            ns, name = ns_name(agent)
            raise RetryLater(f"status of PrometheusAgent {ns}/{name}: our cached copy is outdated") from None

    def tell(self, agent: Mapping[str, Any], reason: str, note: str) -> None:
        """An Event on the agent (what --repair-policy-for-statefulsets did; Warning, as for a Prometheus)."""
        self._event(agent, KIND, reason, note)

    def _event(self, obj: Mapping[str, Any], kind: str, reason: str, note: str, event_type: str = "Warning") -> None:
        if not self.events.should_emit(obj, reason, note):
            return
        api_version = API_VERSION if kind in V1ALPHA1_KINDS else "monitoring.coreos.com/v1"
        ev = feedback.event_for(obj, api_version, kind, reason, note, event_type, self.now())
        try:
            self.client.create(EVENTS, ev, ns_name(obj)[0])
        except ApiError as exc:
            log.warning("cannot create an Event", **fields(object="/".join(ns_name(obj)), error=str(exc)))

    def _feedback(self, agent: dict, result: Any) -> None:
        for problems, rejected in ((result.rejected, True), (result.warnings, False)):
            for (kind, ns, name), note in feedback.problem_events(problems, rejected):
                obj = agent if kind == KIND else (self.stores.monitors[kind].get(f"{ns}/{name}")
                                                  if kind in self.stores.monitors else None)
                if obj is not None:
                    self._event(obj, kind, feedback.INVALID if rejected else "UnsupportedConfiguration", note)
        self._bindings(agent, feedback.verdicts(result.selection, result.rejected))

    def _bindings(self, agent: Mapping[str, Any], verdicts: Mapping[tuple[str, str, str], Any]) -> None:
        """status.bindings of every monitor made to say what `verdicts` says (absent: not selected).

        A write refused with 409 (our cached monitor is older than the stored one: typically another
        agent's binding just written) raises RetryLater once the others are written. Dropped, the binding
        stayed missing for good: a monitor's status-only change queues no sync.
        """
        stale = []
        for kind, store in self.stores.monitors.items():
            for obj in store.list():
                ns, name = ns_name(obj)
                verdict = verdicts.get((kind, ns, name))
                if feedback.binding_current(obj, agent, verdict):
                    continue
                bindings = feedback.desired_bindings(obj, agent, verdict, self.now())
                body = {**obj, "status": {**(obj.get("status") or {}), "bindings": bindings}}
                try:
                    self.client.update(MONITORS[kind], body, subresource="status")
                except NotFound:
                    pass  # gone
                except Conflict:
                    stale.append(f"{kind} {ns}/{name}")
        if stale:
            ns, name = ns_name(agent)
            raise RetryLater(f"bindings of PrometheusAgent {ns}/{name} on {', '.join(stale[:3])}"
                             f"{' and more' if len(stale) > 3 else ''}: our cached copy is outdated")
