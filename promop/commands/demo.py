"""`promop demo`: the operator end to end on this machine, no cluster needed.

Starts the API sandbox, installs crds/, applies examples/ (a Prometheus plus the
kube-prometheus ServiceMonitors and PrometheusRules), runs the operator until it
has synced, prints what it selected, rejected and created and where the decoded
prometheus.yaml is, then keeps running so you can `kubectl apply` more.
"""

from __future__ import annotations

import argparse
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "demo", help="run the operator against an embedded API sandbox with the kube-prometheus examples",
        description="Start the API sandbox, install crds/, apply examples/, run the operator, print a summary "
                    "and keep running until Ctrl-C (or exit after the first sync with --once).")
    parser.add_argument("what", nargs="?", default="operator", choices=("operator", "autoscaling"),
                        help="operator (default), or autoscaling: MemHpa scaling a Deployment on its memory")
    parser.add_argument("--speed", type=float, default=30.0, help="autoscaling: how much faster time runs")
    parser.add_argument("--once", action="store_true", help="exit 0 after the first full sync")
    parser.add_argument("--kubeconfig", help="run against this cluster instead of the sandbox")
    parser.add_argument("--context", help="kubeconfig context (with --kubeconfig)")
    parser.add_argument("--examples", type=Path, default=ROOT / "examples", help="directory of objects to apply")
    parser.add_argument("--crds", type=Path, default=ROOT / "crds", help="directory of CRDs to install")
    parser.add_argument("--output-dir", type=Path, help="where to write the decoded prometheus.yaml "
                        "(default: a new temporary directory)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for the first sync")
    parser.add_argument("--web.listen-address", dest="listen_address", default="127.0.0.1:0",
                        help="address of the operator's /metrics (default: a free port on 127.0.0.1)")
    parser.add_argument("--log-level", default="warn", choices=("debug", "info", "warn", "error"))
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.what == "autoscaling":
        from promop.autoscaler.demo import run_demo

        return run_demo(args)
    import tempfile
    import threading

    from promop.commands.run import install_signal_handlers
    from promop.kube.client import KubeClient
    from promop.operator import logs
    from promop.operator.app import Operator
    from promop.operator.demo import apply_examples, summary, wait_for_first_sync, write_configs
    from promop.operator.install import install_crds
    from promop.operator.options import Options

    for what, path in (("--crds", args.crds), ("--examples", args.examples)):
        if not path.is_dir():
            print(f"promop demo: {path} is not a directory; run from a checkout of promop or pass {what} DIR")
            return 2
    logs.setup(args.log_level, "logfmt")
    out_dir = args.output_dir or Path(tempfile.mkdtemp(prefix="promop-demo-"))
    out_dir.mkdir(parents=True, exist_ok=True)
    sandbox = None
    if args.kubeconfig:
        kubeconfig = args.kubeconfig
        client = KubeClient.from_config(args.kubeconfig, args.context)
        print(f"cluster: {client.host} (kubeconfig {kubeconfig})")
    else:
        from promop.sandbox import Sandbox

        sandbox = Sandbox(port=0, simulate_statefulsets=True).start()
        kubeconfig = sandbox.write_kubeconfig(out_dir / "kubeconfig")
        client = KubeClient(sandbox.api_client())
        print(f"sandbox: Kubernetes API at {sandbox.url}")
    stop = threading.Event()
    install_signal_handlers(stop)
    operator = None
    thread = None
    try:
        crds = install_crds(client, args.crds)
        print(f"installed {len(crds)} CRDs from {args.crds}")
        applied = apply_examples(client, args.examples)
        print(f"applied {len(applied)} objects from {args.examples}")
        options = Options(kubeconfig=args.kubeconfig, context=args.context, listen_address=args.listen_address,
                          log_level=args.log_level, workers=2)
        operator = Operator(options, client=client)
        result: dict = {}
        thread = threading.Thread(target=lambda: result.setdefault("code", operator.run(stop)),
                                  name="promop-operator", daemon=True)
        thread.start()
        if not wait_for_first_sync(operator, args.timeout, stop):
            print(f"error: the operator did not finish its first sync within {args.timeout:.0f}s")
            return 1
        written = write_configs(client, operator, out_dir)
        print(summary(operator, written))
        if operator.web is not None:
            print(f"operator metrics: {operator.web.url}/metrics")
        if args.once:
            return 0
        print(f"\nkubeconfig: {kubeconfig}")
        print(f"  kubectl --kubeconfig {kubeconfig} -n monitoring get servicemonitors,prometheusrules,secrets")
        print(f"  kubectl --kubeconfig {kubeconfig} apply -f my-servicemonitor.yaml   # watch the operator react")
        print("running until Ctrl-C", flush=True)
        while not stop.wait(0.5):
            pass
        return 0
    finally:
        stop.set()
        if thread is not None:
            thread.join(60)
        if sandbox is not None:
            sandbox.stop()
