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


def install_signal_handlers(stop, hard_stop: float | None = None) -> None:
    """SIGTERM/SIGINT set `stop` (a second SIGINT still interrupts via KeyboardInterrupt). With
    `hard_stop`, the process exits that many seconds after the first signal whatever it is doing."""
    import signal

    def on_signal(signum, frame) -> None:
        if stop.is_set() and signum == signal.SIGINT:
            raise KeyboardInterrupt
        if not stop.is_set() and hard_stop is not None:
            import threading

            timer = threading.Timer(hard_stop, _exit_now, args=(hard_stop,))
            timer.daemon = True
            timer.start()
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)


def _exit_now(after: float) -> None:
    import logging
    import os

    logging.getLogger("promop.operator").error("shutdown did not finish in time; exiting now",
                                               extra={"kv": {"after_s": after}})
    logging.shutdown()
    os._exit(0)


def run(args: argparse.Namespace) -> int:
    import logging
    import threading

    from promop.operator import logs
    from promop.operator.app import Operator, check_kubeconfig
    from promop.operator.options import from_args

    options = from_args(args)  # UserError: one line, exit 2 (promop.cli)
    check_kubeconfig(options.kubeconfig, options.context)
    logs.setup(options.log_level, options.log_format)
    operator = Operator(options)
    operator.start_web()  # a busy --web.listen-address is a one-line error, before anything else
    stop = threading.Event()
    install_signal_handlers(stop, hard_stop=HARD_STOP_SECONDS)
    logging.getLogger("promop.operator").info("starting", **logs.fields(
        namespaces=",".join(options.namespaces) or "all", workers=options.workers,
        leader_elect=options.leader_elect))
    return operator.run(stop)
