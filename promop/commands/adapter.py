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
    _serve_flags(p)
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


def _serve_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("prometheus-adapter flags")
    g.add_argument("--config", help="adapter config file (required to serve)")
    g.add_argument("--prometheus-url", default="https://localhost", help="Prometheus URL (default https://localhost)")
    g.add_argument("--prometheus-verb", default="GET", choices=("GET", "POST"), type=str.upper)
    g.add_argument("--prometheus-auth-config", help="kubeconfig-format file with the credentials for Prometheus")
    g.add_argument("--prometheus-token-file", help="bearer token file for Prometheus")
    g.add_argument("--prometheus-ca-file", help="CA to verify Prometheus")
    g.add_argument("--prometheus-client-tls-cert-file", help="client certificate for Prometheus")
    g.add_argument("--prometheus-client-tls-key-file", help="client key for Prometheus")
    g.add_argument("--prometheus-header", action="append", default=[], help="extra header, NAME=VALUE (repeatable)")
    g.add_argument("--prometheus-insecure-skip-verify", action="store_true")
    g.add_argument("--prometheus-basic-auth-file", help="file holding user:password for Prometheus")
    g.add_argument("--metrics-relist-interval", default="10m", help="series discovery period (default 10m)")
    g.add_argument("--metrics-max-age", default="", help="series seen within this long count (default: the relist "
                                                         "interval; must be >= it)")
    g.add_argument("--secure-port", type=int, default=6443, help="HTTPS port (default 6443; 0 disables)")
    g.add_argument("--bind-address", default="0.0.0.0")
    g.add_argument("--cert-dir", default="apiserver.local.config/certificates",
                   help="where self-signed serving certificates go when --tls-cert-file is not given")
    g.add_argument("--tls-cert-file")
    g.add_argument("--tls-private-key-file")
    g.add_argument("--kubeconfig", help="kubeconfig (default: in-cluster, else $KUBECONFIG)")
    g.add_argument("--requestheader-client-ca-file",
                   help="CA of the front proxy (default: from kube-system/extension-apiserver-authentication)")
    g.add_argument("--client-ca-file",
                   help="CA whose client certificates are users: CN the name, O the groups (default: client-ca-file "
                        "from kube-system/extension-apiserver-authentication)")
    g.add_argument("--requestheader-allowed-names", default="", help="allowed front-proxy CNs, comma-separated")
    g.add_argument("--authorization-always-allow", action="store_true",
                   help="skip SubjectAccessReviews: every authenticated request is allowed")
    g.add_argument("--authentication-skip-lookup", action="store_true",
                   help="do not read the extension-apiserver-authentication ConfigMap")
    g.add_argument("--requestheader-refresh-interval", default="30s",
                   help="how often the ConfigMap is read again for a new front-proxy CA (default 30s)")
    o = p.add_argument_group("promop flags")
    o.add_argument("--insecure-port", type=int, default=0,
                   help="also serve plain HTTP without authentication on this port (local testing only; 0 = off)")
    o.add_argument("--no-kube", action="store_true",
                   help="run without an API server: no object listing (`*` requests, metrics.k8s.io lists)")
    o.add_argument("--prometheus-timeout", default="30s", help="per-query timeout (default 30s)")
    o.add_argument("--log-level", default="info", choices=("debug", "info", "warn", "error"))
    o.add_argument("--log-format", default="logfmt", choices=("logfmt", "json"))


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
