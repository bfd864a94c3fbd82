"""Informer metrics, labelled by resource, as prometheus-operator exports them."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter

from promop.kube.client_metrics import per_registry


class InformerMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        def counter(name: str, doc: str) -> Counter:
            return Counter(name, doc, ["resource"], registry=registry)

        self.list_total = counter("prometheus_operator_list_operations", "LIST operations made by informers.")
        self.list_failed = counter("prometheus_operator_list_operations_failed", "Informer LIST operations that failed.")
        self.watch_total = counter("prometheus_operator_watch_operations", "WATCH operations started by informers.")
        self.watch_failed = counter(
            "prometheus_operator_watch_operations_failed", "Informer WATCH operations that failed (a watch the server ends at its timeout is not a failure)."
        )
        self.handler_errors = counter(
            "prometheus_operator_informer_handler_errors", "Exceptions raised by informer event handlers."
        )


def informer_metrics(registry: CollectorRegistry | None = None) -> InformerMetrics:
    return per_registry(registry, "informer", InformerMetrics)
