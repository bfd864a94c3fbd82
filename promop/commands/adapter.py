"""`promop adapter`: the custom, external and resource metrics APIs served from Prometheus.

    promop adapter --config FILE --prometheus-url URL [upstream's flags]   serve
    promop adapter default-config [--rate-interval 5m] [--label-prefix P]  print the legacy default config
    promop adapter explain --config FILE (--prometheus-url URL | --series FILE) [METRIC | API PATH]
"""

from __future__ import annotations

import argparse
import sys


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "adapter",
        help="serve custom.metrics.k8s.io, external.metrics.k8s.io and metrics.k8s.io from Prometheus",
        description="A drop-in for prometheus-adapter: same config file and flags; config reload, "
                    "`explain`, and 404s that say which rule would have to match.",
    )
    from promop.adapter.flags import add_serve_flags

    add_serve_flags(p)
    p.set_defaults(func=run_serve)
    cmds = p.add_subparsers(dest="adapter_command", metavar="SUBCOMMAND")

    d = cmds.add_parser("default-config", help="print prometheus-adapter's legacy default config",
                        description="The config prometheus-adapter's config-gen writes (container_* series as pod "
                                    "metrics, *_total as rates, resourceRules from cAdvisor).")
    d.add_argument("--rate-interval", default="5m", help="the rate() window (Prometheus duration, default 5m)")
    d.add_argument("--label-prefix", default="", help="prefix of the namespace/resource labels (default none)")
    d.set_defaults(func=run_default_config)

    e = cmds.add_parser("explain", help="show which rules match which series, and the PromQL an API path runs",
                        description="Offline with --series FILE (a JSON list of label sets, as /api/v1/series "
                                    "returns, or the whole answer); otherwise asks --prometheus-url.")
    e.add_argument("--config", required=True, help="adapter config file")
    e.add_argument("--prometheus-url", help="Prometheus to ask for series")
    e.add_argument("--series", help="JSON file of label sets, instead of a Prometheus")
    e.add_argument("--metrics-max-age", default="10m", help="series seen within this long (default 10m)")
    e.add_argument("--output", choices=("text", "json"), default="text")
    e.add_argument("target", nargs="?", default="",
                   help="a metric name (API or series name), or an API path such as "
                        "/apis/custom.metrics.k8s.io/v1beta2/namespaces/ns/pods/*/http_requests")
    e.set_defaults(func=run_explain)

    c = cmds.add_parser("check", help="check a config file and print every problem with its path")
    c.add_argument("--config", required=True)
    c.set_defaults(func=run_check)


def _fail(message: str) -> int:
    print(f"promop adapter: {message}", file=sys.stderr)
    return 2


def run_default_config(args: argparse.Namespace) -> int:
    from promop.adapter.default_config import default_config_yaml
    from promop.duration import DurationError

    try:
        sys.stdout.write(default_config_yaml(args.rate_interval, args.label_prefix))
    except DurationError as exc:
        return _fail(f"--rate-interval: {exc}")
    return 0


def run_check(args: argparse.Namespace) -> int:
    from promop.adapter.config import ConfigError, load_config

    try:
        cfg = load_config(args.config)
    except ConfigError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    for w in cfg.warnings:
        print(f"warning: {w}", file=sys.stderr)
    print(f"{args.config}: ok ({len(cfg.rules)} rules, {len(cfg.external_rules)} externalRules, "
          f"resourceRules {'set' if cfg.resource_rules else 'not set'})")
    return 0


def run_explain(args: argparse.Namespace) -> int:
    from promop.adapter.explain import main as explain_main

    return explain_main(args)


def run_serve(args: argparse.Namespace) -> int:
    from promop.adapter.main import serve

    if not args.config:
        return _fail("--config is required (a prometheus-adapter config file; "
                     "`promop adapter default-config` prints the legacy default)")
    return serve(args)
