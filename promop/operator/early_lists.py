"""`promop run`'s first LISTs of the monitor kinds, sent before the controllers are built.

Why: the LIST of every ServiceMonitor is the longest wait of a start at scale (the apiserver encodes
each of them), and the operator used to send it only after half a second of imports and set-up. Sent
from a thread at the top of `promop run`, it is answered meanwhile; the informer then takes the
answer instead of asking (promop.kube.prefetch says why that changes nothing but the time).

Only the monitor kinds, the objects that grow with the number of teams: the other informers' LISTs are
small, and many of them carry label selectors decided while the controllers are built.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

log = logging.getLogger("promop.operator")


def start(options: Any) -> threading.Thread:
    """Prefetch the monitors' first LISTs as the informers will send them (--namespaces, --deny-namespaces)."""
    thread = threading.Thread(target=_prefetch, args=(options,), name="operator-early-lists", daemon=True)
    thread.start()
    return thread


MAX_REQUESTS = 20   # kinds x --namespaces; past that, a long allow-list's LISTs are small: none are sent early


def _prefetch(options: Any) -> None:
    from promop.kube import prefetch
    from promop.kube.client import KubeClient
    from promop.kube.resources import PODMONITORS, PROBES, PROMETHEUSRULES, SCRAPECONFIGS, SERVICEMONITORS

    kinds = (SERVICEMONITORS, PODMONITORS, PROMETHEUSRULES, PROBES, SCRAPECONFIGS)
    namespaces = options.namespaces or (None,)
    if len(kinds) * len(namespaces) > MAX_REQUESTS:
        return
    try:
        # one connection per request, all at once: a pool smaller than that discards some, with a warning each
        client = KubeClient.from_config(options.kubeconfig, options.context, qps=options.kube_api_qps,
                                        burst=options.kube_api_burst, component="operator",
                                        pool_size=len(kinds) * len(namespaces))
    except Exception as exc:  # the operator's own connect reports it, with its backoff
        log.debug("no early LISTs", extra={"kv": {"err": str(exc)}})
        return
    selector = options.namespace_field_selector() or None
    threads = [t for namespace in namespaces
               for t in prefetch.first_lists(client, kinds, namespace, field_selector=selector)]
    for t in threads:
        t.join()
    client.close()  # the answers are kept as bytes; its connections are not needed any more
