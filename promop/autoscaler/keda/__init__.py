"""KEDA's ScaledObject controller (keda.sh/v1alpha1), run by `promop autoscaler` next to MemHpa.

Every decision is promop.keda's (the pure core); this package does the I/O: informers, the
per-ScaledObject scale loops on one shared scheduler, the shared Prometheus result cache, the
owned HPA, status, Events and the internal metrics endpoint the adapter forwards to.
"""
