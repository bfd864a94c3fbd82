"""Informer benchmarks: initial sync (raw dicts vs the kubernetes client's models) and event throughput."""
