"""The operator: informers feed a queue, workers sync each Prometheus, only differences are written."""
