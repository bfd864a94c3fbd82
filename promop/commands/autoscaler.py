"""`promop autoscaler`: the MemHpa controller (scale workloads on their pods' memory, from Prometheus)."""

from __future__ import annotations

import argparse
import sys


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "autoscaler", help="run the MemHpa controller (memory-based autoscaling from Prometheus)",
        description="Reconcile MemHpa objects (autoscaling.promop.dev/v1alpha1): read the target's pods' memory "
                    "from Prometheus, decide with the HPA algorithm and write the target's /scale. SIGTERM stops; "
                    "losing leadership exits 1.")
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: in-cluster config, else $KUBECONFIG)")
    parser.add_argument("--context", help="kubeconfig context")
    parser.add_argument("--prometheus-url", default="http://prometheus-operated.monitoring.svc:9090",
                        help="Prometheus to query (default http://prometheus-operated.monitoring.svc:9090)")
    parser.add_argument("--prometheus-timeout", type=float, default=10.0, help="seconds per query (default 10)")
    parser.add_argument("--sync-period", type=float, default=15.0,
                        help="seconds between passes over each MemHpa (default 15)")
    parser.add_argument("--workers", type=int, default=2, help="concurrent passes (default 2)")
    parser.add_argument("--web.listen-address", dest="listen_address", default=":8080",
                        help="address of /metrics, /healthz and /readyz (default :8080)")
    parser.add_argument("--log-level", choices=("debug", "info", "warn", "error"), default="info")
    parser.add_argument("--log-format", choices=("logfmt", "json"), default="logfmt")
    le = parser.add_argument_group("leader election")
    le.add_argument("--leader-elect", action="store_true", help="run only while holding a Lease")
    le.add_argument("--leader-election-lease-name", dest="lease_name", default="promop-autoscaler")
    le.add_argument("--leader-election-namespace", dest="lease_namespace", default=None)
    le.add_argument("--leader-election-identity", dest="identity", default="")
    le.add_argument("--leader-election-lease-duration", dest="lease_duration", type=float, default=15.0)
    le.add_argument("--leader-election-renew-deadline", dest="renew_deadline", type=float, default=10.0)
    le.add_argument("--leader-election-retry-period", dest="retry_period", type=float, default=2.0)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import logging
    import threading

    from promop.autoscaler.app import Autoscaler, Options
    from promop.commands.run import install_signal_handlers
    from promop.operator import logs
    from promop.operator.options import OptionsError, default_lease_namespace, parse_listen_address

    try:
        parse_listen_address(args.listen_address)
    except OptionsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.sync_period <= 0 or args.workers < 1:
        print("error: --sync-period must be > 0 and --workers >= 1", file=sys.stderr)
        return 2
    logs.setup(args.log_level, args.log_format)
    options = Options(kubeconfig=args.kubeconfig, context=args.context, prometheus_url=args.prometheus_url,
                      prometheus_timeout=args.prometheus_timeout, sync_period=args.sync_period,
                      workers=args.workers, listen_address=args.listen_address, leader_elect=args.leader_elect,
                      lease_name=args.lease_name, lease_namespace=args.lease_namespace or default_lease_namespace(),
                      identity=args.identity, lease_duration=args.lease_duration,
                      renew_deadline=args.renew_deadline, retry_period=args.retry_period)
    stop = threading.Event()
    install_signal_handlers(stop)
    logging.getLogger("promop.autoscaler").info("starting", extra={"kv": {"prometheus": args.prometheus_url}})
    return Autoscaler(options).run(stop)
