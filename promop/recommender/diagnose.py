"""Why `recommender explain` found no history: the queries it sent, and what Prometheus holds instead.

The usual cause is labels: upstream's defaults expect `job="kubernetes-cadvisor"` and cAdvisor's
old `pod_name`/`name` labels, while today's kubelets (and kube-prometheus, and promop's demos)
label `pod`/`container` under another job. Reading the series Prometheus has for the two metrics
names the flags that would match them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from promop.recommender.history import HistoryConfig

METRICS = ("container_cpu_usage_seconds_total", "container_memory_working_set_bytes")
# the label each setting names, the flag that sets it, and the labels today's cAdvisor uses instead
_LABELS = (("ctr_namespace_label", "--container-namespace-label", ("namespace",)),
           ("ctr_pod_name_label", "--container-pod-name-label", ("pod", "pod_name")),
           ("ctr_name_label", "--container-name-label", ("container", "name")))


def series_matchers() -> list[str]:
    """The series selectors whose answer `why_no_samples` reads (every job, every namespace)."""
    return [f'{{__name__="{m}"}}' for m in METRICS]


def _jobs(found: Iterable[Mapping[str, str]]) -> str:
    counts = Counter(s.get("job", "") for s in found)
    return ", ".join(f'job="{job}" ({n} series)' for job, n in counts.most_common(5))


def _label_hints(cfg: HistoryConfig, found: list[Mapping[str, str]]) -> list[str]:
    hints = []
    for attr, flag, usual in _LABELS:
        label = getattr(cfg, attr)
        if any(label in s for s in found):
            continue
        instead = next((u for u in usual if u != label and all(u in s for s in found)), "")
        hint = f"pass {flag} {instead}" if instead else f"pass {flag} with the label they have"
        hints.append(f"the series have no {label!r} label: {hint}")
    return hints


def why_no_samples(cfg: HistoryConfig, found: list[Mapping[str, str]]) -> list[str]:
    """Lines saying why the history queries matched nothing, given every series of METRICS
    Prometheus holds over the history window (`found`, label sets)."""
    lines = [f"no samples: the CPU query was {cfg.cpu_query()}",
             f"  and the memory query {cfg.memory_query()} (over {cfg.history_length}, "
             f"step {cfg.history_resolution})"]
    if not found:
        lines.append(f"  Prometheus has no {' or '.join(METRICS)} series at all in that window: does it scrape "
                     "cAdvisor (the kubelet's /metrics/cadvisor)?")
        return lines
    job = cfg.cadvisor_job_name
    ours = [s for s in found if not job or s.get("job") == job]
    if not ours:
        others = sorted({s.get("job", "") for s in found})
        hint = f"--prometheus-cadvisor-job-name {others[0]}" if len(others) == 1 else "--prometheus-cadvisor-job-name"
        lines.append(f'  Prometheus has none with job="{job}", but has {_jobs(found)}: pass {hint}')
        ours = [s for s in found if s.get("job") == others[0]] if len(others) == 1 else found
    for hint in _label_hints(cfg, ours):
        lines.append(f"  {hint}")
    if cfg.namespace and not any(s.get(cfg.ctr_namespace_label) == cfg.namespace for s in ours):
        spaces = sorted({s[cfg.ctr_namespace_label] for s in ours if cfg.ctr_namespace_label in s})
        lines.append(f"  no series in namespace {cfg.namespace!r} (found: {', '.join(spaces[:10]) or 'none'})")
    if len(lines) == 2:
        lines.append(f"  Prometheus has {len(ours)} matching series ({_jobs(ours)}), but no samples at the "
                     "query's instants: is the history older or newer than the window?")
    return lines
