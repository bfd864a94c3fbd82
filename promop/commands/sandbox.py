"""`promop sandbox`: run the Kubernetes API sandbox in the foreground until Ctrl-C/SIGTERM."""

from __future__ import annotations

import argparse


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "sandbox", help="run the in-process Kubernetes API sandbox (kubectl can talk to it)",
        description="Serve a Kubernetes API on 127.0.0.1 with no cluster, write a kubeconfig "
                    "for it and run until interrupted.")
    parser.add_argument("--port", type=int, default=0,
                        help="port to listen on (default: a free one)")
    parser.add_argument("--kubeconfig", metavar="PATH",
                        help="where to write the kubeconfig (default: a file in a temp dir)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import os
    import signal
    import sys
    import tempfile
    import threading

    from promop.sandbox import Sandbox

    stop = threading.Event()

    def on_signal(signum, frame) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        sandbox = Sandbox(port=args.port).start()
    except OSError as exc:
        print(f"promop sandbox: {exc.strerror}", file=sys.stderr)
        return 1
    path = args.kubeconfig or os.path.join(tempfile.mkdtemp(prefix="promop-sandbox-"),
                                           "kubeconfig")
    sandbox.write_kubeconfig(path)
    print(f"promop sandbox serving {sandbox.url}; kubeconfig: {path}", flush=True)
    print(f"try: kubectl --kubeconfig {path} get ns", flush=True)
    try:
        while not stop.wait(0.5):
            pass
    finally:
        sandbox.stop()
    return 0
