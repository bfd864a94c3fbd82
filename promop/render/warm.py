"""Warm the renderer before the first sync: load what its first use would (the CRD schemas and their
compiled validators, the emitter, the relabel checks) while the informers are still listing.

At start-up the operator waits on the network for its LISTs (seconds at 10,000 objects), then
renders every monitor; the first render also parsed the CRD files, about 0.4 s on these
machines. Rendering one small Prometheus with one ServiceMonitor in a background thread during
the LISTs moves that work off the first sync's path. Nothing is kept but the module-level caches
the render fills anyway.
"""

from __future__ import annotations

from promop.render.model import RenderInputs
from promop.render.pipeline import render

_PROMETHEUS = {
    "apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus",
    "metadata": {"name": "warm-up", "namespace": "warm-up"},
    "spec": {"serviceMonitorSelector": {}, "podMonitorSelector": {}, "ruleSelector": {}},
}
_SERVICE_MONITOR = {
    "apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
    "metadata": {"name": "warm-up", "namespace": "warm-up", "labels": {"app": "warm-up"}},
    "spec": {"selector": {"matchLabels": {"app": "warm-up"}},
             "endpoints": [{"port": "web", "relabelings": [{"sourceLabels": ["__name__"], "regex": "(.*)",
                                                            "targetLabel": "x", "action": "replace"}]}]},
}


def warm() -> None:
    """One small render, its result dropped."""
    render(RenderInputs(prometheus=_PROMETHEUS, service_monitors=[_SERVICE_MONITOR]))
