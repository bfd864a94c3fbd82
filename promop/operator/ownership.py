"""Which workload objects this operator manages when several operators share a cluster.

Upstream's `--controller-id` (`pkg/operator/resource_reconciler.go`): an object
carries the annotation `operator.prometheus.io/controller-id`; an operator
started with an ID manages only the objects whose annotation has that value, an
operator without one only the objects without the annotation (or with an empty
value). An object that is not ours is neither reconciled nor has its status
written: its events are dropped and a queued key is skipped.

One rule for every workload controller (Prometheus, Alertmanager,
PrometheusAgent, ThanosRuler): call `manages(obj, options.controller_id)`, or
the two helpers below around a controller's queue.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

CONTROLLER_ID_ANNOTATION = "operator.prometheus.io/controller-id"


def controller_id_of(obj: Mapping[str, Any] | None) -> str:
    """The object's controller ID ("" without the annotation)."""
    md = (obj or {}).get("metadata") or {}
    return str((md.get("annotations") or {}).get(CONTROLLER_ID_ANNOTATION) or "")


def manages(obj: Mapping[str, Any] | None, controller_id: str) -> bool:
    """Is `obj` (a Prometheus, Alertmanager, PrometheusAgent or ThanosRuler) this operator's?"""
    return controller_id_of(obj) == (controller_id or "")


def key_managed(store: Any, key: str, controller_id: str) -> bool:
    """May a queued `key` be synced? False when the cached object is another operator's. A key
    whose object is gone is ours to clean up (deletions of other operators' objects are dropped
    at the event, see `managed_keys`)."""
    obj = store.get(key)
    return obj is None or manages(obj, controller_id)


def managed_keys(keys: Iterable[str], store: Any, controller_id: str) -> list[str]:
    """`keys` without those whose cached object is another operator's."""
    return [k for k in keys if key_managed(store, k, controller_id)]


# ---- the flags (upstream's names, cmd/operator/main.go) ------------------------------------------

REPAIR_POLICIES = ("none", "evict", "delete")


def add_flags(parser: Any) -> None:
    """`--controller-id`, the Prometheus/ThanosRuler instance scopes and `--repair-policy-for-statefulsets`
    (the Alertmanager ones are in promop/operator/alertmanager/flags.py)."""
    g = parser.add_argument_group("running beside other operators")
    g.add_argument("--controller-id", default="",
                   help=f"manage only Prometheus, PrometheusAgent, Alertmanager and ThanosRuler objects whose "
                        f"{CONTROLLER_ID_ANNOTATION} annotation has this value (default: only those without it)")
    g.add_argument("--prometheus-instance-namespaces", default="", metavar="NS[,NS]",
                   help="namespaces whose Prometheus and PrometheusAgent objects (and their Secrets, ConfigMaps and "
                        "StatefulSets) are watched; takes precedence over --namespaces/--deny-namespaces for them")
    g.add_argument("--prometheus-instance-selector", default="", metavar="SELECTOR",
                   help="label selector of the Prometheus and PrometheusAgent objects to watch, e.g. team=infra")
    g.add_argument("--thanos-ruler-instance-namespaces", default="", metavar="NS[,NS]",
                   help="namespaces whose ThanosRuler objects (and StatefulSets) are watched; takes precedence over "
                        "--namespaces/--deny-namespaces for them")
    g.add_argument("--thanos-ruler-instance-selector", default="", metavar="SELECTOR",
                   help="label selector of the ThanosRuler objects to watch")
    g.add_argument("--repair-policy-for-statefulsets", default="none", metavar="POLICY",
                   help="when a StatefulSet rollout is stuck on a broken revision: 'none' (default), 'evict' or "
                        "'delete' its failing pod (one per sync, highest ordinal first)")


def check_selector(flag: str, text: str) -> str:
    """`text` if it parses as a Kubernetes label selector (string form), else OptionsError naming `flag`."""
    from promop.host.flags import OptionsError
    from promop.labelselector import SelectorError, parse

    try:
        parse(text)
    except SelectorError as exc:
        raise OptionsError(f"{flag}: {exc}; pass e.g. {flag}=team=infra,env in (prod,staging)") from None
    return text


def from_args(args: Any) -> dict[str, Any]:
    """Options fields from the parsed flags; OptionsError (one line) for a refused value."""
    from promop.host.flags import OptionsError, parse_list

    policy = args.repair_policy_for_statefulsets
    if policy not in REPAIR_POLICIES:
        raise OptionsError(f"--repair-policy-for-statefulsets: invalid value {policy!r}; pass none, evict or delete")
    return {
        "controller_id": args.controller_id,
        "prometheus_instance_namespaces": parse_list(args.prometheus_instance_namespaces),
        "prometheus_instance_selector": check_selector("--prometheus-instance-selector",
                                                       args.prometheus_instance_selector),
        "thanos_ruler_instance_namespaces": parse_list(args.thanos_ruler_instance_namespaces),
        "thanos_ruler_instance_selector": check_selector("--thanos-ruler-instance-selector",
                                                         args.thanos_ruler_instance_selector),
        "repair_policy": policy,
    }
