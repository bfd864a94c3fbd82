"""Cluster-wide model state (upstream's model/cluster.go, reduced): pods, their containers, and the
aggregate states those containers feed, keyed like upstream by (namespace, container name, pod labels).

A VPA's aggregate for a container is the merge of every aggregate whose labels its selector matches,
plus any state restored from a checkpoint. Pure: the controller feeds it, time is an argument.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from promop.vpa.config import DEFAULT, Config
from promop.vpa.state import AggregateContainerState, ContainerState

LabelsKey = tuple[tuple[str, str], ...]
AggKey = tuple[str, str, LabelsKey]   # namespace, container name, sorted pod labels


def labels_key(labels: dict[str, str] | None) -> LabelsKey:
    return tuple(sorted((labels or {}).items()))


@dataclass
class PodState:
    namespace: str
    name: str
    labels: dict[str, str]
    containers: dict[str, ContainerState] = field(default_factory=dict)
    phase: str = "Unknown"


class ClusterState:
    def __init__(self, config: Config = DEFAULT):
        self.config = config
        self.pods: dict[tuple[str, str], PodState] = {}
        self.aggregates: dict[AggKey, AggregateContainerState] = {}
        self._by_namespace: dict[str, dict[AggKey, AggregateContainerState]] = {}
        self._labels: dict[AggKey, dict[str, str]] = {}
        # VPA id -> (namespace, matcher, the aggregate keys it matches), kept as aggregates come and go
        # (upstream's Vpa.UseAggregationIfMatching), so a round does not test every selector on every aggregate.
        self._vpas: dict[object, tuple[str, Callable[[dict[str, str]], bool], dict[AggKey, None]]] = {}
        self._vpas_by_namespace: dict[str, dict[object, None]] = {}

    def _aggregate(self, namespace: str, container: str, labels: dict[str, str], now: float
                   ) -> AggregateContainerState:
        key = (namespace, container, labels_key(labels))
        a = self.aggregates.get(key)
        if a is None:
            a = self.aggregates[key] = AggregateContainerState(self.config, creation_time=now)
            self._by_namespace.setdefault(namespace, {})[key] = a
            self._labels[key] = dict(labels)
            for vpa_id in self._vpas_by_namespace.get(namespace, ()):
                _, match, keys = self._vpas[vpa_id]
                if match(self._labels[key]):
                    keys[key] = None
        return a

    def add_or_update_pod(self, namespace: str, name: str, labels: dict[str, str] | None, now: float,
                          phase: str = "Unknown") -> PodState:
        """A pod whose labels change moves its containers to the aggregates of the new labels."""
        labels = dict(labels or {})
        pod = self.pods.get((namespace, name))
        if pod is None:
            pod = self.pods[(namespace, name)] = PodState(namespace, name, labels, phase=phase)
        elif pod.labels != labels:
            pod.labels = labels
            for cname, c in pod.containers.items():
                c.aggregate = self._aggregate(namespace, cname, labels, now)
        pod.phase = phase
        return pod

    def delete_pod(self, namespace: str, name: str) -> None:
        self.pods.pop((namespace, name), None)

    def container(self, namespace: str, pod: str, container: str, now: float) -> ContainerState:
        p = self.pods.get((namespace, pod))
        if p is None:
            p = self.add_or_update_pod(namespace, pod, {}, now)
        c = p.containers.get(container)
        if c is None:
            c = p.containers[container] = ContainerState(self._aggregate(namespace, container, p.labels, now),
                                                         self.config)
        return c

    def aggregates_for(self, namespace: str, matches: Callable[[dict[str, str]], bool]
                       ) -> dict[str, AggregateContainerState]:
        """Per container name, a fresh merge of every aggregate in the namespace whose labels match."""
        out: dict[str, AggregateContainerState] = {}
        labels = self._labels
        for key, a in self._by_namespace.get(namespace, {}).items():
            if not matches(labels[key]):
                continue
            m = out.get(key[1])
            if m is None:
                # Merging into a fresh state gives exactly a copy (0.0 + x == x); copying is cheaper.
                out[key[1]] = a.copy()
            else:
                m.merge(a)
        return out

    def set_vpa(self, vpa_id: object, namespace: str, matches: Callable[[dict[str, str]], bool]) -> None:
        """Register (or re-register after a selector change) a VPA's selector."""
        keys = {k: None for k in self._by_namespace.get(namespace, {}) if matches(self._labels[k])}
        self.delete_vpa(vpa_id)
        self._vpas[vpa_id] = (namespace, matches, keys)
        self._vpas_by_namespace.setdefault(namespace, {})[vpa_id] = None

    def delete_vpa(self, vpa_id: object) -> None:
        entry = self._vpas.pop(vpa_id, None)
        if entry is not None:
            ids = self._vpas_by_namespace.get(entry[0], {})
            ids.pop(vpa_id, None)
            if not ids:
                self._vpas_by_namespace.pop(entry[0], None)

    def vpa_aggregates(self, vpa_id: object, shared: bool = False) -> dict[str, AggregateContainerState]:
        """aggregates_for through the registration cache: per container name, a merged copy.

        With `shared`, a container fed by a single aggregate gets that live aggregate itself (no copy):
        for readers that neither change it nor let go of the model's lock while reading.
        """
        entry = self._vpas.get(vpa_id)
        if entry is None:
            return {}
        out: dict[str, AggregateContainerState] = {}
        owned: dict[str, bool] = {}
        aggs = self.aggregates
        for key in entry[2]:
            a = aggs.get(key)
            if a is None:
                continue
            name = key[1]
            m = out.get(name)
            if m is None:
                out[name] = a if shared else a.copy()
                owned[name] = not shared
            else:
                if not owned[name]:
                    m = out[name] = m.copy()
                    owned[name] = True
                m.merge(a)
        return out

    def matching_pods(self, namespace: str, matches: Callable[[dict[str, str]], bool]) -> list[PodState]:
        return [p for (ns, _), p in self.pods.items() if ns == namespace and matches(p.labels)]

    def garbage_collect(self, now: float) -> int:
        """Drop aggregates without a CPU sample for a whole memory window (8 days) and not fed by a live pod."""
        live = set()
        for p in self.pods.values():
            for c in p.containers.values():
                live.add(id(c.aggregate))
        gone = [k for k, a in self.aggregates.items() if a.is_expired(now, self.config) and id(a) not in live]
        for k in gone:
            del self.aggregates[k]
            for _, _, keys in self._vpas.values():
                keys.pop(k, None)
            self._labels.pop(k, None)
            ns = self._by_namespace.get(k[0])
            if ns is not None:
                ns.pop(k, None)
                if not ns:
                    del self._by_namespace[k[0]]
        return len(gone)
