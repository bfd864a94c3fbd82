"""`promop recommender [flags]` (the controller) and `promop recommender explain NAMESPACE/NAME`."""

from __future__ import annotations

import argparse
import sys
import threading

from promop.recommender.options import OptionsError, add_flags, from_args

EXIT_INPUT = 2


def register(parser: argparse.ArgumentParser, sub) -> None:
    add_flags(parser)
    parser.set_defaults(func=run)
    ex = sub.add_parser("explain", help="print the recommendation breakdown for a live VPA",
                        description="Rebuild one VPA's model from Prometheus (or its checkpoints when Prometheus "
                                    "cannot answer) and print the same breakdown as `simulate`, next to the "
                                    "recommendation currently written in its status.")
    ex.add_argument("name", metavar="NAMESPACE/NAME")
    ex.add_argument("--now", help="evaluate the history as of this time (RFC 3339; default: now)")
    add_flags(ex)
    ex.set_defaults(func=run_explain)


def _fail(msg: str) -> int:
    print(f"promop recommender: {msg}", file=sys.stderr)
    return EXIT_INPUT


def run(args: argparse.Namespace) -> int:
    """The controller: a flag or kubeconfig mistake is one line and exit 2; an unreachable apiserver is retried."""
    from promop.host import logs
    from promop.host.kubeconfig import check_kubeconfig
    from promop.host.signals import install_signal_handlers
    from promop.recommender.app import App

    try:
        options = from_args(args)
        options.listen_host_port()
    except OptionsError as exc:
        return _fail(str(exc))
    check_kubeconfig(options.kubeconfig, options.context)  # UserError: one line, exit 2 (promop.cli)
    logs.setup(options.log_level, options.log_format)
    app = App(options)
    app.start_web()  # a busy --web.listen-address is a one-line error, before anything else
    stop = threading.Event()
    install_signal_handlers(stop)
    return app.run(stop)


def run_explain(args: argparse.Namespace) -> int:
    from promop.host.kubeconfig import load_client
    from promop.kube.errors import ApiError, NotFound
    from promop.prom.client import PrometheusClient, PromError
    from promop.recommender.controller import CHECKPOINTS, VPAS, policies_of
    from promop.recommender.history import load_history
    from promop.recommender.targets import TargetError, resolve_target
    from promop.vpa.cluster import ClusterState
    from promop.vpa.explain import explain_lines, format_result
    from promop.vpa.recommend import container_policy, recommend
    from promop.vpa.state import AggregateContainerState
    import dataclasses
    import time

    ns, _, name = args.name.rpartition("/")
    ns = ns or "default"
    if not name:
        return _fail(f"{args.name!r}: want NAMESPACE/NAME")
    args.vpa_object_namespace = ns
    try:
        options = from_args(args)
    except OptionsError as exc:
        return _fail(str(exc))
    client = load_client(options.kubeconfig, options.context)  # UserError: one line, exit 2 (promop.cli)
    try:
        vpa = client.get(VPAS, name, ns)
    except NotFound:
        return _fail(f"VerticalPodAutoscaler {ns}/{name} not found")
    except ApiError as exc:
        return _fail(f"cannot read VerticalPodAutoscaler {ns}/{name}: {exc}")
    try:
        selector = resolve_target(client, ns, (vpa.get("spec") or {}).get("targetRef") or {})
        policies = policies_of(vpa)
    except (TargetError, ValueError) as exc:
        return _fail(f"{ns}/{name}: {exc}")
    now = time.time()
    if args.now:
        from promop.vpa.timeutil import parse_time

        try:
            now = parse_time(args.now)
        except ValueError as exc:
            return _fail(f"--now: {exc}")
    model = ClusterState(options.model)
    key = f"{ns}/{name}"
    model.set_vpa(key, ns, selector.matches)
    from promop.kube.resources import PODS

    try:
        pods = client.list(PODS, ns).get("items") or []
    except ApiError as exc:
        print(f"promop recommender: warning: cannot list pods in {ns} (their labels decide which history "
              f"belongs to the VPA): {exc}", file=sys.stderr)
        pods = []
    live = {(ns, p["metadata"]["name"]): p["metadata"].get("labels") or {} for p in pods}
    source = f"Prometheus {options.history.prometheus_address}"
    prom = PrometheusClient(options.history.prometheus_address, timeout=options.prometheus_timeout, retries=1)
    states: dict[str, AggregateContainerState]
    why: list[str] = []
    try:
        history = dataclasses.replace(options.history, namespace=ns)
        stats = load_history(prom, history, model, now, live)
        source += f" ({stats.samples} samples of {stats.containers} containers in {ns})"
        states = model.vpa_aggregates(key)
        if not stats.samples:
            why = _why_no_samples(prom, history, now)
        elif not states:
            why = [f"none of the {stats.pods} pods with samples in {ns} is matched by the selector {selector} "
                   "(their labels come from the live pods, else from --metric-for-pod-labels)"]
    except PromError as exc:
        source = f"checkpoints (Prometheus: {exc})"
        states = {}
        try:
            for cp in client.list(CHECKPOINTS, ns).get("items") or []:
                if (cp.get("spec") or {}).get("vpaObjectName") == name:
                    states[cp["spec"].get("containerName", "")] = AggregateContainerState.from_checkpoint(
                        cp.get("status") or {}, options.model)
        except (ApiError, ValueError) as exc2:
            return _fail(f"no history: Prometheus failed ({exc}) and checkpoints failed ({exc2})")
    recs = recommend(states, policies, options.model)
    out = [f"VerticalPodAutoscaler {ns}/{name}: target {vpa['spec'].get('targetRef', {}).get('kind')}/"
           f"{vpa['spec'].get('targetRef', {}).get('name')}, selector {selector}, history from {source}"]
    written = {c.get("containerName"): c for c in
               ((vpa.get("status") or {}).get("recommendation") or {}).get("containerRecommendations") or []}
    out += why
    if not recs:
        out.append("no recommendation: no container with CPU samples (or every container's mode is Off)")
    sys.stdout.write("\n".join(out) + "\n")
    for cname in sorted(recs):
        rec = recs[cname]
        from promop.vpa.recommend import estimate, min_resources, apply_policy

        traced = estimate(states[cname], options.model, min_resources(options.model, len(recs)), cname, trace=True)
        apply_policy(traced, container_policy(cname, policies), options.model)
        lines = explain_lines(traced, states[cname], options.model, len(recs))
        if cname in written:
            lines.append(f"status now: target {written[cname].get('target')}")
        sys.stdout.write(format_result(cname, rec, lines))
    return 0


def _why_no_samples(prom, history, now: float) -> list[str]:
    """What Prometheus holds of the two metrics over the history window, read against the queries."""
    from promop.prom.client import PromError
    from promop.recommender.diagnose import series_matchers, why_no_samples
    from promop.recommender.history import history_steps

    start, end, _ = history_steps(history, now)
    try:
        found = prom.series(series_matchers(), start, end)
    except PromError as exc:
        return why_no_samples(history, [])[:2] + [f"  (cannot list the series Prometheus has: {exc})"]
    return why_no_samples(history, found)
