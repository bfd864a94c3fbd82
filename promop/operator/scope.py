"""Where a workload controller's informers look: --namespaces/--deny-namespaces, or an instance allow-list.

Upstream's `--prometheus-instance-namespaces` (shared by Prometheus and PrometheusAgent) and
`--thanos-ruler-instance-namespaces`: the workload objects and what the operator creates for them
(StatefulSets, Secrets, ConfigMaps) are watched in those namespaces, which win over
--namespaces/--deny-namespaces; the selected objects (monitors, rules, ScrapeConfigs) keep
following --namespaces/--deny-namespaces. One builder for every controller, so they cannot drift.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Sequence

from promop.host.logs import fields
from promop.kube.client import KubeClient
from promop.kube.errors import ApiError, NotFound
from promop.kube.informer import Informer
from promop.kube.resources import NAMESPACES, Resource
from promop.kube.shared_informers import SharedInformers

log = logging.getLogger("promop.operator.controller")


def join_selectors(*parts: str) -> str | None:
    """Comma-joined non-empty selectors, or None when there are none."""
    joined = ",".join(p for p in parts if p)
    return joined or None


def informer_factory(client: Any, options: Any, instance_namespaces: Sequence[str],
                     informer_kwargs: dict, shared: SharedInformers | None = None) -> Callable[..., Informer]:
    """`informer(res, instance=False, **extra)`: an Informer of `res` scoped as above. `instance=True`
    for workload objects and what is created for them; `extra` passes on (label_selector,
    metadata_only, resync_period, field_selector, which is joined with the deny-list). With `shared`,
    controllers asking for the same watch get one informer (promop.kube.shared_informers)."""
    deny = options.namespace_field_selector()
    scope: dict[str, Any] = {"namespaces": list(options.namespaces)} if options.namespaces else {}
    instances = list(instance_namespaces or ())

    def informer(res: Resource, instance: bool = False, **extra: Any) -> Informer:
        if instance and instances:
            sel, where = join_selectors(extra.pop("field_selector", "")), {"namespaces": instances}
        else:
            sel, where = join_selectors(extra.pop("field_selector", ""), deny), scope
        if shared is not None:
            return shared.informer(res, field_selector=sel, **where, **{**informer_kwargs, **extra})
        return Informer(client, res, field_selector=sel, **where, **{**informer_kwargs, **extra})

    return informer


def namespaces_informer(client: Any, informer_kwargs: dict, shared: SharedInformers | None = None) -> Informer:
    """Every Namespace (their labels: namespace selectors), shared between controllers when `shared`."""
    if shared is not None:
        return shared.informer(NAMESPACES, **informer_kwargs)
    return Informer(client, NAMESPACES, **informer_kwargs)


def referenced_namespaces(options: Any) -> tuple[str, ...]:
    """Where Secrets and ConfigMaps are watched with --watch-referenced-objects-in-all-namespaces, as an
    instance allow-list for informer_factory: the Prometheus namespaces plus the --namespaces ones;
    () (every namespace, less --deny-namespaces) when either of them is every namespace. Without
    --prometheus-instance-namespaces that is what they follow anyway: the flag then changes nothing."""
    if not options.prometheus_instance_namespaces or not options.namespaces:
        return ()
    return tuple(dict.fromkeys((*options.prometheus_instance_namespaces, *options.namespaces)))


def crd_served(client: KubeClient, res: Any) -> bool:
    """False (with a warning) when the apiserver does not serve `res`: its CRD is not installed.

    Any other answer (the apiserver unreachable for now, a 5xx) counts as served: the informer
    retries until it syncs, as for every other kind.
    """
    try:
        client.list(res, limit=1)
    except NotFound:
        log.warning("CRD not installed; these objects are not watched (install crds/ or run with --manage-crds, "
                    "then restart the operator)", **fields(resource=f"{res.plural}.{res.group}"))
        return False
    except ApiError:
        return True
    return True
