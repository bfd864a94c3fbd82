"""The controller host: what every long-running promop command shares.

Logging (logfmt or JSON, one format for every component), the common flags,
kubeconfig checking, connect-with-backoff, the web server (/metrics, /healthz,
/readyz), leader election wiring, signal handling and graceful shutdown. The
controllers (operator, adapter, autoscaler, recommender) build on this package
and never on each other (docs/architecture.md).
"""
