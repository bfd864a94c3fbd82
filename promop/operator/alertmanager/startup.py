"""What `promop run` starts besides the Prometheus controller: CRDs (--manage-crds), the Alertmanager
controller, the kubelet endpoints sync. Each returned controller has Controller's lifecycle interface."""

from __future__ import annotations

import logging
from typing import Any

from prometheus_client import CollectorRegistry

from promop.kube.client import KubeClient
from promop.host.logs import fields
from promop.operator.metrics import OperatorMetrics

log = logging.getLogger("promop.operator")


def prepare(client: KubeClient, options: Any, registry: CollectorRegistry,
            controller_kwargs: dict | None = None) -> tuple[OperatorMetrics, list]:
    """(the shared controller metrics, the extra controllers to run next to the Prometheus one)."""
    from promop.operator.alertmanager.flags import AMOptions

    am: AMOptions = getattr(options, "alertmanager", None) or AMOptions()
    if am.manage_crds:
        from promop.operator.install import install_crds
        from promop.packaged import crds_dir

        names = install_crds(client, crds_dir(), timeout=600.0)
        log.info("CRDs created or updated and established", **fields(crds=",".join(names)))
    metrics = OperatorMetrics(registry)
    extra: list = []
    informer_kwargs = (controller_kwargs or {}).get("informer_kwargs")
    if am.enabled:
        from promop.operator.alertmanager.controller import start_if_served

        ctl = start_if_served(client, options, registry, metrics, informer_kwargs=informer_kwargs)
        if ctl is not None:
            extra.append(ctl)
    if am.kubelet_service:
        from promop.operator.kubelet import KubeletSync

        extra.append(KubeletSync(client, am, options, registry, informer_kwargs=informer_kwargs))
    return metrics, extra
