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
    from promop.host.flags import add_cluster_flags, add_leader_election_flags, add_log_flags, add_web_flag

    add_cluster_flags(parser)
    parser.add_argument("--prometheus-url", default="http://prometheus-operated.monitoring.svc:9090",
                        help="Prometheus to query (default http://prometheus-operated.monitoring.svc:9090)")
    parser.add_argument("--prometheus-timeout", type=float, default=10.0, help="seconds per query (default 10)")
    parser.add_argument("--sync-period", type=float, default=15.0,
                        help="seconds between passes over each MemHpa (default 15)")
    parser.add_argument("--workers", type=int, default=2, help="concurrent passes (default 2)")
    keda = parser.add_argument_group("KEDA ScaledObjects (keda.sh/v1alpha1)")
    keda.add_argument("--keda", default="auto", choices=("auto", "true", "false"),
                      help="run the ScaledObject controller: auto (default) when the keda.sh CRDs are installed, "
                           "true (wait for them), false (MemHpa only)")
    keda.add_argument("--keda-metrics-address", default=":9666",
                      help="where the ScaledObject metrics are served to `promop adapter --keda-metrics-url` "
                           "(default :9666, like KEDA's operator; empty: not served)")
    keda.add_argument("--keda-loop-workers", type=int, default=8,
                      help="threads running the ScaledObjects' scale loops (default 8; the loops share them)")
    parser.add_argument("--kube-api-qps", type=float, default=50.0,
                        help="requests per second to the apiserver (default 50; KEDA's flag of the same name)")
    parser.add_argument("--kube-api-burst", type=int, default=100,
                        help="burst of requests to the apiserver (default 100)")
    add_web_flag(parser)
    add_log_flags(parser)
    add_leader_election_flags(parser, "promop-autoscaler")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """The controller: a flag or kubeconfig mistake is one line and exit 2; an unreachable apiserver is retried."""
    import logging
    import threading

    from promop.autoscaler.app import Autoscaler, Options
    from promop.host import logs
    from promop.host.flags import OptionsError, check_leader_election, default_lease_namespace, parse_listen_address
    from promop.host.kubeconfig import check_kubeconfig
    from promop.host.signals import install_signal_handlers

    try:
        parse_listen_address(args.listen_address)
        check_leader_election(args)
    except OptionsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.keda_metrics_address:
        try:
            parse_listen_address(args.keda_metrics_address)
        except OptionsError as exc:
            print(f"error: {str(exc).replace('--web.listen-address', '--keda-metrics-address')}", file=sys.stderr)
            return 2
    if args.kube_api_qps <= 0 or args.kube_api_burst < 1:
        print("error: --kube-api-qps must be > 0 and --kube-api-burst >= 1", file=sys.stderr)
        return 2
    if args.sync_period <= 0 or args.workers < 1 or args.keda_loop_workers < 1:
        print("error: --sync-period must be > 0, --workers and --keda-loop-workers >= 1", file=sys.stderr)
        return 2
    check_kubeconfig(args.kubeconfig, args.context)  # UserError: one line, exit 2 (promop.cli)
    logs.setup(args.log_level, args.log_format)
    options = Options(kubeconfig=args.kubeconfig, context=args.context, prometheus_url=args.prometheus_url,
                      prometheus_timeout=args.prometheus_timeout, sync_period=args.sync_period,
                      workers=args.workers, listen_address=args.listen_address, keda=args.keda,
                      keda_metrics_address=args.keda_metrics_address, keda_loop_workers=args.keda_loop_workers,
                      kube_api_qps=args.kube_api_qps, kube_api_burst=args.kube_api_burst, leader_elect=args.leader_elect,
                      lease_name=args.lease_name, lease_namespace=args.lease_namespace or default_lease_namespace(),
                      identity=args.identity, lease_duration=args.lease_duration,
                      renew_deadline=args.renew_deadline, retry_period=args.retry_period)
    autoscaler = Autoscaler(options)
    autoscaler.start_web()  # a busy --web.listen-address is a one-line error, before anything else
    stop = threading.Event()
    install_signal_handlers(stop)
    logging.getLogger("promop.autoscaler").info("starting", **logs.fields(prometheus=args.prometheus_url))
    return autoscaler.run(stop)
