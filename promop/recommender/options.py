"""The recommender's flags (upstream's names and defaults where upstream has them), parsed into a dataclass."""

from __future__ import annotations

import argparse
import os
import socket
from dataclasses import dataclass, field
from typing import Callable

from promop.host.flags import HostOptions, OptionsError, add_cluster_flags, add_log_flags, add_web_flag
from promop.recommender.history import HistoryConfig
from promop.vpa.config import DEFAULT, Config
from promop.vpa.timeutil import parse_duration, parse_prom_duration


__all__ = ["Options", "OptionsError", "add_flags", "from_args"]


@dataclass(frozen=True)
class Options(HostOptions):
    lease_name: str = "vpa-recommender-lease"
    lease_namespace: str = "kube-system"
    recommender_name: str = "default"
    vpa_object_namespace: str = ""
    interval: float = 60.0
    checkpoints_timeout: float = 60.0
    checkpoints_gc_interval: float = 600.0
    min_checkpoints: int = 10
    metrics_source: str = "prometheus"       # or metrics-api
    live_cpu_rate_window: str = "5m"
    workers: int = 2
    history: HistoryConfig = field(default_factory=HistoryConfig)
    model: Config = DEFAULT
    prometheus_timeout: float = 30.0
    history_chunk_steps: int = 24
    log_level: str = "info"
    log_format: str = "logfmt"


def add_flags(p: argparse.ArgumentParser) -> None:
    h = HistoryConfig()
    add_cluster_flags(p)
    add_web_flag(p)
    add_log_flags(p)
    p.add_argument("--leader-elect", action="store_true", help="run as one of several replicas, one leading")
    p.add_argument("--leader-elect-resource-name", dest="lease_name", default="vpa-recommender-lease")
    p.add_argument("--leader-elect-resource-namespace", dest="lease_namespace", default="kube-system")
    p.add_argument("--recommender-name", default="default",
                   help="handle VPAs whose spec.recommenders names this (or none) (default default)")
    p.add_argument("--vpa-object-namespace", default="", help="only VPAs (and history) of this namespace")
    p.add_argument("--recommender-interval", default="1m", help="how often to recommend (default 1m)")
    p.add_argument("--checkpoints-timeout", default="1m", help="time budget for writing checkpoints per round")
    p.add_argument("--checkpoints-gc-interval", default="10m", help="how often stale checkpoints are deleted")
    p.add_argument("--min-checkpoints", type=int, default=10,
                   help="checkpoints written per round even past the timeout (default 10)")
    p.add_argument("--metrics-source", choices=("prometheus", "metrics-api"), default="prometheus",
                   help="where fresh samples come from every interval (default prometheus)")
    p.add_argument("--prometheus-address", default=h.prometheus_address)
    p.add_argument("--prometheus-cadvisor-job-name", default=h.cadvisor_job_name)
    p.add_argument("--history-length", default=h.history_length)
    p.add_argument("--history-resolution", default=h.history_resolution)
    p.add_argument("--prometheus-query-timeout", default=h.query_timeout)
    p.add_argument("--pod-label-prefix", default=h.pod_label_prefix)
    p.add_argument("--metric-for-pod-labels", default=h.metric_for_pod_labels)
    p.add_argument("--pod-namespace-label", default=h.pod_namespace_label)
    p.add_argument("--pod-name-label", default=h.pod_name_label)
    p.add_argument("--container-namespace-label", default=h.ctr_namespace_label)
    p.add_argument("--container-pod-name-label", default=h.ctr_pod_name_label)
    p.add_argument("--container-name-label", default=h.ctr_name_label)
    # The model (upstream's flag names).
    p.add_argument("--recommendation-margin-fraction", type=float, default=DEFAULT.safety_margin)
    p.add_argument("--pod-recommendation-min-cpu-millicores", type=float, default=DEFAULT.pod_min_cpu_millicores)
    p.add_argument("--pod-recommendation-min-memory-mb", type=float, default=DEFAULT.pod_min_memory_mb)
    p.add_argument("--target-cpu-percentile", type=float, default=DEFAULT.target_percentile_cpu)
    p.add_argument("--target-memory-percentile", type=float, default=DEFAULT.target_percentile_memory)
    p.add_argument("--recommendation-lower-bound-cpu-percentile", type=float,
                   default=DEFAULT.lower_bound_percentile_cpu)
    p.add_argument("--recommendation-lower-bound-memory-percentile", type=float,
                   default=DEFAULT.lower_bound_percentile_memory)
    p.add_argument("--recommendation-upper-bound-cpu-percentile", type=float,
                   default=DEFAULT.upper_bound_percentile_cpu)
    p.add_argument("--recommendation-upper-bound-memory-percentile", type=float,
                   default=DEFAULT.upper_bound_percentile_memory)
    p.add_argument("--cpu-histogram-decay-half-life", default="24h")
    p.add_argument("--memory-histogram-decay-half-life", default="24h")
    p.add_argument("--memory-aggregation-interval", default="24h")
    p.add_argument("--memory-aggregation-interval-count", type=int, default=8)
    p.add_argument("--oom-bump-up-ratio", type=float, default=DEFAULT.oom_bump_up_ratio)
    p.add_argument("--oom-min-bump-up-bytes", type=float, default=DEFAULT.oom_min_bump_up_bytes)
    p.add_argument("--container-recommendation-max-allowed-cpu", default="",
                   help="cap every CPU recommendation (a quantity, e.g. 4)")
    p.add_argument("--container-recommendation-max-allowed-memory", default="",
                   help="cap every memory recommendation (a quantity, e.g. 16Gi)")


def _dur(args: argparse.Namespace, attr: str, flag: str, parse: Callable[[str], float] = parse_duration) -> float:
    """A positive duration flag; Go's grammar unless `parse` says otherwise (--history-* are Prometheus')."""
    try:
        v = parse(getattr(args, attr))
    except ValueError as exc:
        raise OptionsError(f"{flag}: {exc}") from None
    if v <= 0:
        raise OptionsError(f"{flag}: must be positive")
    return v


def from_args(args: argparse.Namespace) -> Options:
    from promop.quantity import int_value, milli_value

    _dur(args, "history_length", "--history-length", parse_prom_duration)
    _dur(args, "history_resolution", "--history-resolution", parse_prom_duration)
    _dur(args, "prometheus_query_timeout", "--prometheus-query-timeout")
    history = HistoryConfig(
        prometheus_address=args.prometheus_address, cadvisor_job_name=args.prometheus_cadvisor_job_name,
        history_length=args.history_length, history_resolution=args.history_resolution,
        query_timeout=args.prometheus_query_timeout, pod_label_prefix=args.pod_label_prefix,
        metric_for_pod_labels=args.metric_for_pod_labels, pod_namespace_label=args.pod_namespace_label,
        pod_name_label=args.pod_name_label, ctr_namespace_label=args.container_namespace_label,
        ctr_pod_name_label=args.container_pod_name_label, ctr_name_label=args.container_name_label,
        namespace=args.vpa_object_namespace)
    for flag, v in (("--target-cpu-percentile", args.target_cpu_percentile),
                    ("--target-memory-percentile", args.target_memory_percentile),
                    ("--recommendation-margin-fraction", args.recommendation_margin_fraction)):
        if not 0 <= v <= 1 and flag != "--recommendation-margin-fraction":
            raise OptionsError(f"{flag}: want a fraction in [0, 1], got {v}")
    try:
        max_cpu = milli_value(args.container_recommendation_max_allowed_cpu) \
            if args.container_recommendation_max_allowed_cpu else 0
        max_mem = int_value(args.container_recommendation_max_allowed_memory) \
            if args.container_recommendation_max_allowed_memory else 0
    except ValueError as exc:
        raise OptionsError(f"--container-recommendation-max-allowed-*: {exc}") from None
    model = Config(
        target_percentile_cpu=args.target_cpu_percentile, target_percentile_memory=args.target_memory_percentile,
        lower_bound_percentile_cpu=args.recommendation_lower_bound_cpu_percentile,
        lower_bound_percentile_memory=args.recommendation_lower_bound_memory_percentile,
        upper_bound_percentile_cpu=args.recommendation_upper_bound_cpu_percentile,
        upper_bound_percentile_memory=args.recommendation_upper_bound_memory_percentile,
        safety_margin=args.recommendation_margin_fraction,
        pod_min_cpu_millicores=args.pod_recommendation_min_cpu_millicores,
        pod_min_memory_mb=args.pod_recommendation_min_memory_mb,
        cpu_half_life=_dur(args, "cpu_histogram_decay_half_life", "--cpu-histogram-decay-half-life"),
        memory_half_life=_dur(args, "memory_histogram_decay_half_life", "--memory-histogram-decay-half-life"),
        memory_aggregation_interval=_dur(args, "memory_aggregation_interval", "--memory-aggregation-interval"),
        memory_aggregation_interval_count=args.memory_aggregation_interval_count,
        oom_bump_up_ratio=args.oom_bump_up_ratio, oom_min_bump_up_bytes=args.oom_min_bump_up_bytes,
        max_allowed_cpu_millicores=max_cpu, max_allowed_memory_bytes=max_mem)
    return Options(
        kubeconfig=args.kubeconfig, context=args.context, listen_address=args.listen_address,
        log_level=args.log_level, log_format=args.log_format,
        leader_elect=args.leader_elect, lease_name=args.lease_name, lease_namespace=args.lease_namespace,
        identity=os.environ.get("POD_NAME") or socket.gethostname(),
        recommender_name=args.recommender_name, vpa_object_namespace=args.vpa_object_namespace,
        interval=_dur(args, "recommender_interval", "--recommender-interval"),
        checkpoints_timeout=_dur(args, "checkpoints_timeout", "--checkpoints-timeout"),
        checkpoints_gc_interval=_dur(args, "checkpoints_gc_interval", "--checkpoints-gc-interval"),
        min_checkpoints=args.min_checkpoints, metrics_source=args.metrics_source, history=history, model=model)


