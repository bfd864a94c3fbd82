"""The recommender's own metrics: upstream's names (vpa_recommender_*) where upstream has them."""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram


@dataclass
class Metrics:
    execution_latency: Histogram
    vpa_objects: Gauge
    aggregate_states: Gauge
    recommendation_latency: Histogram
    status_updates: Counter
    checkpoints_written: Counter
    checkpoints_deleted: Counter
    samples: Counter
    ooms: Counter
    source_errors: Counter


def make_metrics(registry: CollectorRegistry) -> Metrics:
    return Metrics(
        execution_latency=Histogram("vpa_recommender_execution_latency_seconds",
                                    "Time spent in the recommender's main loop, per step.", ["step"],
                                    registry=registry,
                                    buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)),
        vpa_objects=Gauge("vpa_recommender_vpa_objects_count", "Number of VPA objects present in the cluster.",
                          ["has_recommendation", "matches_pods", "unsupported_config"], registry=registry),
        aggregate_states=Gauge("vpa_recommender_aggregate_container_states_count",
                               "Number of aggregate container states being tracked by the recommender.",
                               registry=registry),
        recommendation_latency=Histogram("vpa_recommender_recommendation_latency_seconds",
                                         "Time from a VPA's creation to its first recommendation.",
                                         registry=registry,
                                         buckets=(1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600)),
        status_updates=Counter("promop_recommender_status_updates_total",
                               "VPA status writes (only differences are written).", ["result"], registry=registry),
        checkpoints_written=Counter("promop_recommender_checkpoints_written_total",
                                    "VerticalPodAutoscalerCheckpoint writes.", ["result"], registry=registry),
        checkpoints_deleted=Counter("promop_recommender_checkpoints_deleted_total",
                                    "Checkpoints deleted because their VPA is gone.", registry=registry),
        samples=Counter("promop_recommender_samples_total", "Usage samples fed to the model.", ["source"],
                        registry=registry),
        ooms=Counter("promop_recommender_oom_events_total", "OOM kills recorded (container lastState).",
                     registry=registry),
        source_errors=Counter("promop_recommender_source_errors_total",
                              "Failed reads of Prometheus or metrics.k8s.io.", ["source"], registry=registry),
    )
