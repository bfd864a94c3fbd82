"""Flags of the Alertmanager controller, the kubelet endpoints sync and CRD management (upstream's names)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from promop.labelselector import SelectorError, parse_selector  # noqa: F401 (parse_selector: callers of this module)
from promop.labelselector import parse as parse_labels
from promop.render.alertmanager.common import DEFAULT_ALERTMANAGER_BASE_IMAGE


class FlagError(ValueError):
    """A flag value that cannot be used; the message names the flag."""


@dataclass(frozen=True)
class AMOptions:
    enabled: bool = True  # run the Alertmanager controller (when its CRDs are installed)
    manage_crds: bool = False  # create/update the CRDs in crds/ at start and wait until Established
    default_base_image: str = DEFAULT_ALERTMANAGER_BASE_IMAGE
    cluster_domain: str = ""
    kubelet_service: str = ""  # namespace/name; empty: no kubelet endpoints sync
    kubelet_selector: str = ""
    kubelet_node_address_priority: str = "internal"
    kubelet_endpoints: bool = True
    kubelet_endpointslice: bool = False
    kubelet_sync_period: float = 180.0
    kubelet_http_metrics: bool = True
    # upstream's --alertmanager-instance-namespaces / --alertmanager-config-namespaces: when set, they replace
    # --namespaces/--deny-namespaces for the Alertmanager (and StatefulSet) / AlertmanagerConfig informers
    instance_namespaces: tuple[str, ...] = ()
    config_namespaces: tuple[str, ...] = ()
    instance_selector: str = ""  # upstream's --alertmanager-instance-selector: the Alertmanager informer's

    def kubelet_object(self) -> tuple[str, str]:
        ns, _, name = self.kubelet_service.partition("/")
        return ns, name


def _bool(text: str) -> bool:
    low = str(text).lower()
    if low in ("true", "1", "yes"):
        return True
    if low in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"{text!r} is not true or false")


def add_flags(parser: argparse.ArgumentParser) -> None:
    am = parser.add_argument_group("alertmanager, kubelet, CRDs")
    am.add_argument("--alertmanager-controller", type=_bool, default=True, metavar="BOOL",
                    help="run the Alertmanager controller when its CRDs are installed (default true)")
    am.add_argument("--alertmanager-default-base-image", default=DEFAULT_ALERTMANAGER_BASE_IMAGE,
                    help="Alertmanager image (without tag) when spec.image is not set")
    am.add_argument("--cluster-domain", default="",
                    help="cluster domain for fully qualified Alertmanager peer addresses (default: short names)")
    am.add_argument("--alertmanager-instance-namespaces", default="", metavar="NS[,NS]",
                    help="namespaces whose Alertmanager objects (and StatefulSets) are watched; "
                    "takes precedence over --namespaces/--deny-namespaces for them (default: as --namespaces)")
    am.add_argument("--alertmanager-instance-selector", default="", metavar="SELECTOR",
                    help="label selector of the Alertmanager objects to watch, e.g. team=infra")
    am.add_argument("--alertmanager-config-namespaces", default="", metavar="NS[,NS]",
                    help="namespaces whose AlertmanagerConfig objects are watched; "
                    "takes precedence over --namespaces/--deny-namespaces for them (default: as --namespaces)")
    am.add_argument("--manage-crds", action="store_true",
                    help="create or update the CRDs at start and wait until they are established")
    am.add_argument("--kubelet-service", default="", metavar="NAMESPACE/NAME",
                    help="keep this Service and its Endpoints listing every node's kubelet (e.g. kube-system/kubelet)")
    am.add_argument("--kubelet-selector", default="", help="label selector of the nodes to list")
    am.add_argument("--kubelet-node-address-priority", default="internal", metavar="internal|external",
                    help="node address priority used by kubelet: 'internal' (default) or 'external'")
    am.add_argument("--kubelet-endpoints", nargs="?", const=True, default=True, metavar="BOOL",
                    help="manage the kubelet Endpoints object (default true)")
    am.add_argument("--kubelet-endpointslice", nargs="?", const=True, default=False, metavar="BOOL",
                    help="manage kubelet EndpointSlices too (default false)")
    am.add_argument("--kubelet-sync-period", default="3m", metavar="DURATION",
                    help="how often the kubelet Endpoints/EndpointSlices are reconciled: a Go duration (10s, 2m, "
                         "1h30m) or seconds (default 3m)")
    am.add_argument("--kubelet-http-metrics", nargs="?", const=True, default=True, metavar="BOOL",
                    help="include the http-metrics port 10255 (default true)")


def _go_bool(args: argparse.Namespace, flag: str) -> bool:
    from promop.host.flags import OptionsError, go_bool

    try:
        return go_bool(flag, getattr(args, flag[2:].replace("-", "_")))
    except OptionsError as exc:
        raise FlagError(str(exc)) from None


def from_args(args: argparse.Namespace) -> AMOptions:
    for flag in ("--kubelet-endpoints", "--kubelet-endpointslice", "--kubelet-http-metrics"):
        setattr(args, flag[2:].replace("-", "_"), _go_bool(args, flag))  # "false" -> False, one line if bad
    service = args.kubelet_service or ""
    if service and (service.count("/") != 1 or not all(service.split("/"))):
        raise FlagError(f"--kubelet-service: {service!r} is not namespace/name, e.g. kube-system/kubelet")
    for flag, text in (("--kubelet-selector", args.kubelet_selector),
                       ("--alertmanager-instance-selector", getattr(args, "alertmanager_instance_selector", ""))):
        try:
            parse_labels(text or "")  # apimachinery's labels.Parse: what the informer sends as labelSelector
        except SelectorError as exc:
            raise FlagError(f"{flag}: {exc}; pass e.g. {flag}=kubernetes.io/os=linux") from None
    if args.kubelet_node_address_priority not in ("internal", "external"):
        raise FlagError(f"--kubelet-node-address-priority: invalid value {args.kubelet_node_address_priority!r}; "
                        "pass internal or external")
    if service and not (args.kubelet_endpoints or args.kubelet_endpointslice):
        raise FlagError("--kubelet-endpoints=false needs --kubelet-endpointslice: at least one must be managed")
    period = go_duration_seconds(str(args.kubelet_sync_period))
    if period is None or period <= 0:
        raise FlagError(f"--kubelet-sync-period: {args.kubelet_sync_period!r} is not a positive duration; "
                        "pass e.g. 3m, 30s or 1h30m")
    return AMOptions(
        instance_selector=getattr(args, "alertmanager_instance_selector", "") or "",
        instance_namespaces=_namespaces(getattr(args, "alertmanager_instance_namespaces", "")),
        config_namespaces=_namespaces(getattr(args, "alertmanager_config_namespaces", "")),
        enabled=args.alertmanager_controller, manage_crds=args.manage_crds,
        default_base_image=args.alertmanager_default_base_image, cluster_domain=args.cluster_domain,
        kubelet_service=service, kubelet_selector=args.kubelet_selector,
        kubelet_node_address_priority=args.kubelet_node_address_priority, kubelet_endpoints=args.kubelet_endpoints,
        kubelet_endpointslice=args.kubelet_endpointslice, kubelet_sync_period=period,
        kubelet_http_metrics=args.kubelet_http_metrics)


def go_duration_seconds(text: str) -> float | None:
    """Go's time.ParseDuration (`1h30m`, `10s`, `1.5h`, `300ms`) in seconds, or a plain number of
    seconds (promop's earlier form); None when neither."""
    import re

    text = text.strip()
    try:
        return float(text)
    except ValueError:
        pass
    units = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
    parts = re.findall(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    return sum(float(n) * units[u] for n, u in parts)


def _namespaces(text: str) -> tuple[str, ...]:
    """`a, b,a` -> ("a", "b"): blanks and duplicates dropped, order kept."""
    return tuple(dict.fromkeys(p.strip() for p in (text or "").split(",") if p.strip()))


def _selector_spec(text: str) -> dict:
    """`a=b,c!=d,e in (x,y),!f,g` -> a metav1.LabelSelector dict."""
    import re

    exprs, labels = [], {}
    for part in re.findall(r"[^,(]+(?:\([^)]*\))?", text):
        part = part.strip()
        if not part:
            continue
        m = re.match(r"^([\w./-]+)\s+(in|notin)\s+\(([^)]*)\)$", part)
        if m:
            values = [v.strip() for v in m.group(3).split(",") if v.strip()]
            exprs.append({"key": m.group(1), "operator": "In" if m.group(2) == "in" else "NotIn", "values": values})
        elif "!=" in part:
            k, v = part.split("!=", 1)
            exprs.append({"key": k.strip(), "operator": "NotIn", "values": [v.strip()]})
        elif "=" in part:
            k, v = part.split("==" if "==" in part else "=", 1)
            labels[k.strip()] = v.strip()
        elif part.startswith("!"):
            exprs.append({"key": part[1:].strip(), "operator": "DoesNotExist"})
        else:
            exprs.append({"key": part, "operator": "Exists"})
    out: dict = {}
    if labels:
        out["matchLabels"] = labels
    if exprs:
        out["matchExpressions"] = exprs
    return out


selector_spec = _selector_spec
