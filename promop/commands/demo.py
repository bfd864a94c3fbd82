"""`promop demo`: the operator end to end on this machine, no cluster needed.

Starts the API sandbox, installs the CRDs, applies the examples (a Prometheus plus the
kube-prometheus ServiceMonitors and PrometheusRules), runs the operator until it has synced,
prints what it selected, rejected and created and where the decoded prometheus.yaml is, then
keeps running (logging one line per sync, keeping the decoded file current) so you can
`kubectl apply` more. The CRDs and examples ship inside the package (promop.packaged).
"""

from __future__ import annotations

import argparse
from pathlib import Path


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "demo", help="run the operator against an embedded API sandbox with the kube-prometheus examples",
        description="Start the API sandbox, install the CRDs, apply the examples, run the operator, print a "
                    "summary and keep running until Ctrl-C (or exit after the first sync with --once). The "
                    "sandbox simulates kubelet: StatefulSet pods are reported ready although no container runs "
                    "(--no-simulate-kubelet turns that off).")
    parser.add_argument("what", nargs="?", default="operator", choices=("operator", "autoscaling"),
                        help="operator (default), or autoscaling: MemHpa scaling a Deployment on its memory")
    parser.add_argument("--speed", type=float, default=30.0, help="autoscaling: how much faster time runs")
    parser.add_argument("--once", action="store_true", help="exit 0 after the first full sync")
    parser.add_argument("--kubeconfig", help="run against this cluster instead of the sandbox")
    parser.add_argument("--context", help="kubeconfig context (with --kubeconfig)")
    parser.add_argument("--examples", type=Path, default=None,
                        help="directory of objects to apply (default: the examples shipped with promop)")
    parser.add_argument("--crds", type=Path, default=None,
                        help="directory of CRDs to install (default: the CRDs shipped with promop)")
    parser.add_argument("--output-dir", type=Path, help="where to write the decoded prometheus.yaml "
                        "(default: a new temporary directory)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for the first sync")
    parser.add_argument("--no-simulate-kubelet", dest="simulate_kubelet", action="store_false",
                        help="do not report the sandbox's StatefulSet pods as ready (the Prometheus status then "
                             "says Available=False: no pod runs)")
    parser.add_argument("--web.listen-address", dest="listen_address", default="127.0.0.1:0",
                        help="address of the operator's /metrics (default: a free port on 127.0.0.1)")
    parser.add_argument("--log-level", default="info", choices=("debug", "info", "warn", "error"),
                        help="info (default): one line per sync, saying what triggered it and what was written")
    parser.set_defaults(func=run)


def _check_args(args: argparse.Namespace) -> None:
    from promop import packaged
    from promop.errors import UserError

    args.crds = args.crds or packaged.crds_dir()
    args.examples = args.examples or packaged.examples_dir()
    for flag, path in (("--crds", args.crds), ("--examples", args.examples)):
        if not path.is_dir():
            raise UserError(f"{flag} {path}: not a directory; pass a directory of YAML files "
                            f"(or omit {flag} to use the ones shipped with promop)")
    if args.output_dir is not None and args.output_dir.exists() and not args.output_dir.is_dir():
        raise UserError(f"--output-dir {args.output_dir}: is a file; pass a directory (it is created if missing)")
    if not args.timeout > 0:
        raise UserError(f"--timeout {args.timeout:g}: must be above 0 seconds")
    if args.context and not args.kubeconfig:
        raise UserError("--context needs --kubeconfig (without it the demo uses its own sandbox)")
    from promop.operator.options import parse_listen_address

    parse_listen_address(args.listen_address)


def run(args: argparse.Namespace) -> int:
    if not 0 < args.speed < float("inf"):
        from promop.errors import UserError

        raise UserError(f"--speed {args.speed:g}: must be above 0 (how many times faster than real time; e.g. 30)")
    if args.what == "autoscaling":
        from promop.demos.autoscaling import run_demo

        return run_demo(args)
    import threading

    from promop.host import logs
    from promop.host.kubeconfig import check_kubeconfig
    from promop.host.signals import install_signal_handlers

    _check_args(args)
    if args.kubeconfig:
        check_kubeconfig(args.kubeconfig, args.context)
    logs.setup(args.log_level, "logfmt")
    out_dir = _output_dir(args)
    client, kubeconfig, sandbox = _cluster(args, out_dir)
    stop = threading.Event()
    install_signal_handlers(stop)
    thread = None
    try:
        _install(client, args)
        operator, thread = _start_operator(client, args, stop)
        return _report_and_follow(operator, client, args, out_dir, kubeconfig, stop)
    finally:
        stop.set()
        if thread is not None:
            thread.join(15)
        if sandbox is not None:
            sandbox.stop()


def _output_dir(args: argparse.Namespace) -> Path:
    """--output-dir (created), or a new temporary directory."""
    import tempfile

    from promop.errors import UserError

    out_dir = args.output_dir or Path(tempfile.mkdtemp(prefix="promop-demo-"))
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"--output-dir {out_dir}: cannot be created ({exc.strerror}); pass a writable directory") \
            from None
    return out_dir


def _cluster(args: argparse.Namespace, out_dir: Path):
    """(client, kubeconfig path, sandbox or None): the --kubeconfig cluster, else a new sandbox."""
    from promop.kube.client import KubeClient

    if args.kubeconfig:
        client = KubeClient.from_config(args.kubeconfig, args.context)
        print(f"cluster: {client.host} (kubeconfig {args.kubeconfig})")
        return client, args.kubeconfig, None
    from promop.sandbox import Sandbox

    sandbox = Sandbox(port=0, simulate_statefulsets=args.simulate_kubelet).start()
    kubeconfig = sandbox.write_kubeconfig(out_dir / "kubeconfig")
    print(f"sandbox: Kubernetes API at {sandbox.url}")
    if args.simulate_kubelet:
        print("sandbox: kubelet is simulated: StatefulSet pods are reported ready, no container runs "
              "(--no-simulate-kubelet turns this off)")
    else:
        print("sandbox: kubelet is not simulated: no pod becomes ready, so the Prometheus status says "
              "Available=False")
    return KubeClient(sandbox.api_client()), kubeconfig, sandbox


def _install(client, args: argparse.Namespace) -> None:
    """The CRDs and the example objects; what cannot be applied is one UserError line."""
    import yaml

    from promop.errors import UserError
    from promop.kube.errors import ApiError
    from promop.operator.demo import apply_examples
    from promop.operator.install import install_crds

    try:
        crds = install_crds(client, args.crds)
        if not crds:
            raise UserError(f"--crds {args.crds}: no CustomResourceDefinition in it; pass the crds/ folder")
        print(f"installed {len(crds)} CRDs from {args.crds}")
        applied = apply_examples(client, args.examples)
        print(f"applied {len(applied)} objects from {args.examples}")
    except (ValueError, yaml.YAMLError) as exc:  # a document we cannot apply, a file that is not YAML
        raise UserError(f"{' '.join(str(exc).split())}; fix or remove that file in --crds/--examples") from None
    except ApiError as exc:
        where = f"the cluster at {client.host}" if args.kubeconfig else "the sandbox"
        raise UserError(f"{where} refused or did not answer: {exc}; check --kubeconfig/--context and that the "
                        "apiserver is up" if args.kubeconfig else f"{where}: {exc}") from None


def _start_operator(client, args: argparse.Namespace, stop):
    """The operator running in a thread: (operator, thread). Its web address is bound here, so that a
    busy address is a one-line error."""
    import threading

    from promop.operator.app import Operator
    from promop.operator.options import Options

    options = Options(kubeconfig=args.kubeconfig, context=args.context, listen_address=args.listen_address,
                      log_level=args.log_level, workers=2, gc_freeze=True)
    operator = Operator(options, client=client)
    operator.start_web()
    thread = threading.Thread(target=operator.run, args=(stop,), name="promop-operator", daemon=True)
    thread.start()
    return operator, thread


def _report_and_follow(operator, client, args: argparse.Namespace, out_dir: Path, kubeconfig, stop) -> int:
    """After the first sync: the summary and the decoded configs; then (without --once) rewrite the
    configs as they change until Ctrl-C."""
    from promop.operator.demo import ConfigFiles, summary, wait_for_first_sync

    if not wait_for_first_sync(operator, args.timeout, stop):
        if stop.is_set():
            return 130
        print(f"error: the operator did not finish its first sync within {args.timeout:.0f}s")
        return 1
    configs = ConfigFiles(client, operator, out_dir)
    print(summary(operator, configs.refresh()))
    if operator.web is not None:
        print(f"operator metrics: {operator.web.url}/metrics")
    if args.once:
        return 0
    print(f"\nkubeconfig: {kubeconfig}")
    print(f"  kubectl --kubeconfig {kubeconfig} -n monitoring get servicemonitors,prometheusrules,secrets")
    print(f"  kubectl --kubeconfig {kubeconfig} apply -f my-servicemonitor.yaml   # watch the operator react")
    print("the decoded prometheus.yaml files above are rewritten on every config change")
    print("running until Ctrl-C", flush=True)
    while not stop.wait(0.5):
        for key, path in configs.refresh(changed_only=True).items():
            print(f"config of Prometheus {key} changed: rewrote {path}", flush=True)
    return 0
