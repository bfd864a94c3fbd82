"""promop: a Prometheus Operator for Kubernetes, compatible with monitoring.coreos.com/v1."""

__version__ = "0.1.0"
