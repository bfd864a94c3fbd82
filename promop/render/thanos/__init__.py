"""Thanos: the sidecar next to Prometheus (spec.thanos) and the ThanosRuler workload, as upstream 0.93."""
