"""History from Prometheus, as upstream's Prometheus history provider reads it (input/history/).

Two range queries over --history-length at --history-resolution steps: CPU as
`rate(container_cpu_usage_seconds_total{...}[resolution])`, memory as
`container_memory_working_set_bytes{...}`; pod labels from the last sample of
--metric-for-pod-labels. Samples are sorted per container and fed to the model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import chain
from operator import itemgetter
from typing import Sequence

from promop.prom.client import PromError
from promop.vpa.cluster import ClusterState


@dataclass(frozen=True)
class HistoryConfig:
    """Upstream's flags and defaults (today's cAdvisor labels are pod/namespace/container: set them by flag)."""

    prometheus_address: str = "http://prometheus.monitoring.svc"
    cadvisor_job_name: str = "kubernetes-cadvisor"
    history_length: str = "8d"
    history_resolution: str = "1h"
    query_timeout: str = "5m"
    pod_label_prefix: str = "pod_label_"
    metric_for_pod_labels: str = 'up{job="kubernetes-pods"}'
    pod_namespace_label: str = "kubernetes_namespace"
    pod_name_label: str = "kubernetes_pod_name"
    ctr_namespace_label: str = "namespace"
    ctr_pod_name_label: str = "pod_name"
    ctr_name_label: str = "name"
    namespace: str = ""   # --vpa-object-namespace: only this namespace

    def pod_selector(self) -> str:
        sel = f'job="{self.cadvisor_job_name}", ' if self.cadvisor_job_name else ""
        sel += f'{self.ctr_pod_name_label}=~".+", {self.ctr_name_label}!="POD", {self.ctr_name_label}!=""'
        if self.namespace:
            sel += f', {self.ctr_namespace_label}="{self.namespace}"'
        return sel

    def cpu_query(self) -> str:
        return f"rate(container_cpu_usage_seconds_total{{{self.pod_selector()}}}[{self.history_resolution}])"

    def memory_query(self) -> str:
        return f"container_memory_working_set_bytes{{{self.pod_selector()}}}"

    def labels_query(self) -> str:
        return f"{self.metric_for_pod_labels}[{self.history_length}]"


@dataclass
class LoadStats:
    pods: int = 0
    containers: int = 0
    samples: int = 0
    queries: int = 0


def history_steps(cfg: HistoryConfig, now: float) -> tuple[float, float, float]:
    from promop.vpa.timeutil import parse_prom_duration

    length = parse_prom_duration(cfg.history_length)
    step = parse_prom_duration(cfg.history_resolution)
    if step <= 0 or length <= 0:
        raise ValueError("--history-length and --history-resolution must be positive")
    return now - length, now, step


def read_pod_labels(client, cfg: HistoryConfig, now: float, timeout: float) -> dict[tuple[str, str], dict]:
    """Each pod's labels from the last sample of --metric-for-pod-labels (prefix stripped)."""
    out: dict[tuple[str, str], tuple[float, dict]] = {}
    if not cfg.metric_for_pod_labels:
        return {}
    result = client.query(cfg.labels_query(), now, timeout=timeout)
    if not isinstance(result, list):
        return {}
    p = cfg.pod_label_prefix
    for series in result:
        points = getattr(series, "points", None)
        if not points:
            continue
        labels = series.labels
        key = (labels.get(cfg.pod_namespace_label, ""), labels.get(cfg.pod_name_label, ""))
        t = points[-1][0]
        if key[0] and key[1] and (key not in out or t >= out[key][0]):
            out[key] = (t, {k[len(p):]: v for k, v in labels.items() if k.startswith(p)})
    return {k: v for k, (_, v) in out.items()}


def load_history(client, cfg: HistoryConfig, cluster: ClusterState, now: float,
                 live_labels: dict[tuple[str, str], dict[str, str]] | None = None,
                 chunk_steps: int = 24) -> LoadStats:
    """Upstream's two range queries, evaluated at the same instants (start + k*resolution), read in
    chunks of `chunk_steps` instants so that only one chunk is decoded at a time; each chunk's samples
    are sorted per container (as upstream sorts) and fed to the model in time order.

    Pod labels: the informer's for live pods, else the labels metric's. Raises the client's PromError.
    """
    from promop.vpa.timeutil import parse_duration

    start, end, step = history_steps(cfg, now)
    timeout = parse_duration(cfg.query_timeout)
    stats = LoadStats()
    try:
        metric_labels = read_pod_labels(client, cfg, now, timeout)
    except PromError:  # optional: live pods' labels come from the informer anyway
        metric_labels = {}
    labels = {**metric_labels, **(live_labels or {})}
    seen_pods: set = set()
    containers: set = set()
    n_steps = int((end - start) // step)
    chunk = max(1, chunk_steps)
    k = 0
    while k <= n_steps:
        c_start = start + k * step
        c_end = start + min(k + chunk - 1, n_steps) * step
        for query, kind in ((cfg.cpu_query(), "cpu"), (cfg.memory_query(), "memory")):
            # Columns (two float arrays per series): nothing kept per point before the model.
            per: dict[tuple[str, str, str], tuple] = {}
            for series in client.query_range_columns(query, c_start, c_end, step, timeout=timeout):
                key = container_key(cfg, series.labels)
                if key is None:
                    continue
                if key in per:  # several series for one container (e.g. cAdvisor ids): one sorted list
                    merged = sorted(chain(zip(*per[key]), zip(series.times, series.values)), key=itemgetter(0))
                    per[key] = ([p[0] for p in merged], [p[1] for p in merged])
                else:
                    per[key] = (series.times, series.values)
            stats.queries += 1
            for (ns, pod, cname), (times, values) in per.items():
                if (ns, pod) not in seen_pods:
                    seen_pods.add((ns, pod))
                    cluster.add_or_update_pod(ns, pod, labels.get((ns, pod), {}), now)
                containers.add((ns, pod, cname))
                c = cluster.container(ns, pod, cname, now)
                if kind == "cpu":  # raw cores, converted on intake as upstream's CPUAmountFromCores
                    stats.samples += c.add_cpu_usage(times, values)
                else:
                    stats.samples += c.add_memory_usage(*memory_amounts(times, values))
            del per
        k += chunk
    stats.pods, stats.containers = len(seen_pods), len(containers)
    return stats


def container_key(cfg: HistoryConfig, labels: dict[str, str]) -> tuple[str, str, str] | None:
    ns = labels.get(cfg.ctr_namespace_label, "")
    pod = labels.get(cfg.ctr_pod_name_label, "")
    container = labels.get(cfg.ctr_name_label, "")
    if not (ns and pod and container):
        return None  # upstream logs "no ... label" for that series; the others go on
    return ns, pod, container


def to_amounts(points, kind: str) -> list[tuple[float, int]]:
    """(time, value) -> (time, int64 amount): CPUAmountFromCores / MemoryAmountFromBytes (truncated, clamped
    to [0, 1e14]); NaN points are dropped (upstream's sample would be invalid)."""
    scale = 1000.0 if kind == "cpu" else 1.0
    out = [(t, int(x) if 0.0 <= (x := v * scale) <= 1e14 else _clamp(x)) for t, v in points]
    if None in map(itemgetter(1), out):
        out = [p for p in out if p[1] is not None]
    return out


def memory_amounts(times: Sequence[float], values: Sequence[float]) -> tuple[Sequence[float], list[int]]:
    """to_amounts for columns, as columns: one pass of int() when every value is a number in [0, 1e14]
    (the usual history), else point by point with clamping and NaN points dropped."""
    if not values or (not any(map(math.isnan, values)) and min(values) >= 0.0 and max(values) <= 1e14):
        return times, list(map(int, values))
    points = to_amounts(zip(times, values), "memory")
    return [p[0] for p in points], [p[1] for p in points]


def _clamp(x: float) -> int | None:
    if x < 0.0:
        return 0
    if x > 1e14:
        return 100_000_000_000_000
    return None  # NaN
