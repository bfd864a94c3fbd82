"""`promop run`: the operator. Watches Prometheus, ServiceMonitor, PodMonitor and PrometheusRule
objects and writes the config Secret, rule ConfigMaps, Service and StatefulSets they describe."""

from __future__ import annotations

import argparse


def register(subparsers) -> None:
    from promop.operator.options import add_flags

    parser = subparsers.add_parser(
        "run", help="run the operator against a cluster (in-cluster config or --kubeconfig)",
        description="Run the operator. SIGTERM stops within 10 s whatever the backlog (queued work is dropped "
                    "for the next leader, in-flight syncs get a few seconds), releases the lease and exits 0; "
                    "losing leadership exits 1. An unreachable apiserver is retried with backoff; a missing or "
                    "broken kubeconfig exits 2 at once.")
    add_flags(parser)
    parser.set_defaults(func=run)


# The operator stops within app.STOP_SECONDS; if anything still hangs, the process ends here anyway.
HARD_STOP_SECONDS = 9.5


def run(args: argparse.Namespace) -> int:
    import logging
    import threading

    from promop.host import logs
    from promop.host.kubeconfig import check_kubeconfig
    from promop.host.signals import install_signal_handlers
    from promop.operator.app import Operator
    from promop.operator.options import from_args

    options = from_args(args)  # UserError: one line, exit 2 (promop.cli)
    check_kubeconfig(options.kubeconfig, options.context)
    logs.setup(options.log_level, options.log_format)
    if options.web_enable_http2:  # upstream's flag, accepted so its command lines run; we cannot honour it
        logging.getLogger("promop.operator").warning(
            "--web.enable-http2: promop's web server speaks HTTP/1.1 only; serving HTTP/1.1")
    operator = Operator(options)
    operator.start_web()  # a busy --web.listen-address is a one-line error, before anything else
    stop = threading.Event()
    install_signal_handlers(stop, hard_stop=HARD_STOP_SECONDS)
    logging.getLogger("promop.operator").info("starting", **logs.fields(
        namespaces=",".join(options.namespaces) or "all", workers=options.workers,
        leader_elect=options.leader_elect))
    return operator.run(stop)
