"""`promop hpa`: the HPA algorithm on a scenario file (`simulate`) or on a live HPA (`explain`)."""

from __future__ import annotations

import argparse
import sys

EXIT_INPUT = 2


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "hpa", help="simulate or explain a HorizontalPodAutoscaler decision (upstream's algorithm, exactly)",
        description="Run upstream's HPA algorithm on a scenario file or on a live HPA and say why it scales.")
    sub = parser.add_subparsers(dest="hpa_command", metavar="COMMAND")
    sim = sub.add_parser("simulate", help="decide on one scenario file and print the decision as YAML",
                         description="Read a scenario (now, hpa or memhpa, scale, pods, metrics, history, options) and "
                                     "print the decision as YAML: desiredReplicas, reason, per-metric proposals, "
                                     "the stabilized and rate-limited values and upstream's conditions. Example "
                                     "scenarios: the hpa-*.yaml and memhpa-*.yaml files of promop's scenarios/ "
                                     "folder (python -c 'from promop import packaged; print(packaged.scenarios_dir())').")
    sim.add_argument("-f", "--filename", required=True, help="scenario YAML file ('-' for stdin)")
    sim.add_argument("--what-if", action="append", default=[], metavar="METRIC=FACTORx",
                     help="scale observed metric values, e.g. cpu=2x or http_requests=0.5x (repeatable)")
    sim.set_defaults(func=run_simulate)
    exp = sub.add_parser("explain", help="explain the decision for a live HPA",
                         description="Build the scenario from a cluster (the HPA, its scale target, pods and "
                                     "metrics) and print the decision with its reasons in words.")
    exp.add_argument("name", metavar="NAMESPACE/NAME")
    exp.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config, in-cluster)")
    exp.add_argument("--prometheus-url", help="read pod metrics straight from Prometheus instead of the "
                                              "metrics APIs")
    exp.add_argument("--what-if", action="append", default=[], metavar="METRIC=FACTORx",
                     help="scale observed metric values, e.g. cpu=2x (repeatable)")
    exp.add_argument("-o", "--output", choices=("text", "yaml"), default="text")
    exp.set_defaults(func=run_explain)
    parser.set_defaults(func=lambda args: (parser.print_help(sys.stderr), EXIT_INPUT)[1])


def _user_error(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return EXIT_INPUT


def run_simulate(args: argparse.Namespace) -> int:
    import yaml

    from promop.autoscale.explain import explain
    from promop.autoscale.scenario import decision_to_dict, parse_scenario
    from promop.autoscale.spec import SpecError
    from promop.autoscale.whatif import WhatIfError, apply_what_if, parse_what_if

    try:
        text = sys.stdin.read() if args.filename == "-" else open(args.filename, encoding="utf-8").read()
    except OSError as exc:
        return _user_error(f"cannot read {args.filename}: {exc.strerror}")
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark else ""
        return _user_error(f"{args.filename}:{where} not valid YAML: {getattr(exc, 'problem', exc)}")
    try:
        scenario = parse_scenario(raw)
        factors = parse_what_if(args.what_if)
    except (SpecError, WhatIfError) as exc:
        return _user_error(f"{args.filename}: {exc}")
    apply_what_if(scenario.metrics, factors)
    decision = scenario.decide()
    out = decision_to_dict(decision, explain(decision, scenario.spec, scenario.superfluous),
                           scenario.corrections)
    yaml.safe_dump(out, sys.stdout, sort_keys=False, default_flow_style=False, width=120)
    return 0


def run_explain(args: argparse.Namespace) -> int:
    from promop.autoscaler.explain_live import LiveError, explain_live

    try:
        return explain_live(args)
    except LiveError as exc:
        return _user_error(str(exc))
