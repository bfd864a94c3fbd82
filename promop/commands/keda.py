"""`promop keda explain NAMESPACE/NAME`: why a KEDA ScaledObject's target is at its replica count."""

from __future__ import annotations

import argparse
import json
import sys


def register(subparsers) -> None:
    parser = subparsers.add_parser("keda", help="KEDA ScaledObjects: explain why one is at its replica count",
                                   description="Tools for keda.sh/v1alpha1 ScaledObjects run by `promop autoscaler`.")
    sub = parser.add_subparsers(dest="keda_command", metavar="COMMAND", required=True)
    ex = sub.add_parser("explain", help="why a ScaledObject's target is at its replica count",
                        description="Each trigger's query, its value now, activation, fallback/health, the HPA's "
                                    "view (conditions, current metrics) and the rule that holds the count.")
    ex.add_argument("name", metavar="NAMESPACE/NAME", help="the ScaledObject; the namespace defaults to 'default'")
    from promop.host.flags import add_cluster_flags

    add_cluster_flags(ex)
    ex.add_argument("--keda-metrics-url", default="",
                    help="the controller's metrics endpoint (promop autoscaler --keda-metrics-address), to show "
                         "the value the HPA is served, fallback included")
    ex.add_argument("--cluster-object-namespace", default="keda",
                    help="where ClusterTriggerAuthentication secrets live (KEDA_CLUSTER_OBJECT_NAMESPACE)")
    ex.add_argument("-o", "--output", choices=("text", "json"), default="text")
    ex.set_defaults(func=run)


def _text(doc: dict) -> str:
    lines = [f"ScaledObject {doc['scaledObject']}"]
    t = doc.get("target")
    if t:
        lines.append(f"  target: {t['kind']} {t['name']} at {t['replicas']} replicas")
    for c in doc.get("conditions") or []:
        lines.append(f"  {c['type']}={c['status']} {c.get('reason') or ''} {c.get('message') or ''}".rstrip())
    for tr in doc.get("triggers") or []:
        lines.append(f"  trigger {tr['metric']} ({tr['type']}{', ' + tr['name'] if tr.get('name') else ''})")
        for key in ("serverAddress", "query", "threshold", "activationThreshold", "value", "active", "queryError",
                    "error", "health", "servedToHpa", "lastGood", "warnings"):
            if tr.get(key) is not None and tr.get(key) != []:
                lines.append(f"    {key}: {tr[key]}")
    hpa = doc.get("hpa") or {}
    if hpa.get("present"):
        lines.append(f"  HPA {hpa['name']}: min {hpa['min']} max {hpa['max']} current {hpa['currentReplicas']} "
                     f"desired {hpa['desiredReplicas']}")
        for m in hpa.get("currentMetrics") or []:
            lines.append(f"    metric {m['metric']}: {m['value']}")
        for c in hpa.get("conditions") or []:
            lines.append(f"    {c['type']}={c['status']} {c.get('reason')}: {c.get('message')}")
    lines.append("  why:")
    lines.extend(f"    - {w}" for w in doc.get("why") or [])
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from promop.autoscaler.keda.explain import explain
    from promop.host.kubeconfig import check_kubeconfig
    from promop.kube.client import KubeClient
    from promop.kube.errors import ApiError

    ns, _, name = args.name.rpartition("/")
    ns = ns or "default"
    if not name:
        print("error: give the ScaledObject as NAMESPACE/NAME", file=sys.stderr)
        return 2
    check_kubeconfig(args.kubeconfig, args.context)
    client = KubeClient.from_config(args.kubeconfig, args.context)
    try:
        doc = explain(client, ns, name, args.keda_metrics_url or None, args.cluster_object_namespace)
    except LookupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except ApiError as exc:
        print(f"error: the apiserver: {exc}", file=sys.stderr)
        return 2
    finally:
        client.close()
    print(json.dumps(doc, indent=2, default=str) if args.output == "json" else _text(doc))
    return 0
