"""`promop recommender`: VPA-compatible resource recommendations from Prometheus history.

`promop recommender [flags]` runs the controller; `simulate -f SAMPLES.yaml` runs the
model on samples from a file; `explain NAMESPACE/NAME` prints the breakdown for a live VPA.
"""

from __future__ import annotations

import argparse
import json
import sys

EXIT_INPUT = 2


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "recommender", help="recommend CPU and memory requests for VerticalPodAutoscalers (upstream's model)",
        description="Run the VPA recommender (upstream's model, exactly) with history from Prometheus, "
                    "or simulate/explain a recommendation.")
    sub = parser.add_subparsers(dest="recommender_command", metavar="SUBCOMMAND")
    sim = sub.add_parser("simulate", help="recommend from samples in a file, explaining every step",
                         description="Feed CPU/memory/OOM samples from a YAML file through upstream's model and "
                                     "print target, lowerBound, upperBound and uncappedTarget with one line per "
                                     "intermediate value. Example inputs: the recommender-*.yaml files of promop's "
                                     "scenarios/ folder (python -c 'from promop import packaged; "
                                     "print(packaged.scenarios_dir())').")
    sim.add_argument("-f", "--file", required=True, help="samples file (YAML or JSON; - for stdin)")
    sim.add_argument("-o", "--output", choices=("text", "json"), default="text")
    sim.set_defaults(func=run_simulate)
    from promop.recommender import cli as controller_cli

    controller_cli.register(parser, sub)


def _fail(msg: str) -> int:
    print(f"promop recommender: {msg}", file=sys.stderr)
    return EXIT_INPUT


def run_simulate(args: argparse.Namespace) -> int:
    import yaml

    from promop.vpa.explain import format_result
    from promop.vpa.simulate import parse_samples, simulate

    try:
        text = sys.stdin.read() if args.file == "-" else open(args.file, encoding="utf-8").read()
    except OSError as exc:
        return _fail(f"{args.file}: {exc.strerror or exc}")
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark else ""
        return _fail(f"{args.file}{where}: not YAML: {getattr(exc, 'problem', None) or exc}")
    try:
        samples = parse_samples(doc)
    except ValueError as exc:
        return _fail(f"{args.file}: {exc}")
    result = simulate(samples)
    if args.output == "json":
        json.dump(result.as_dict(), sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    sys.stdout.write(format_result(samples.container_name, result.recommendation, result.lines))
    return 0
