"""`promop sandbox`: run the Kubernetes API sandbox in the foreground until Ctrl-C/SIGTERM."""

from __future__ import annotations

import argparse


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "sandbox", help="run the in-process Kubernetes API sandbox (kubectl can talk to it)",
        description="Serve a Kubernetes API on 127.0.0.1 with no cluster, write a kubeconfig "
                    "for it and run until interrupted.")
    # plain strings, checked in run(): a mistake is one line on stderr and exit 2
    parser.add_argument("--port", default="0",
                        help="port to listen on, 0-65535 (default: 0, a free one)")
    parser.add_argument("--kubeconfig", metavar="PATH",
                        help="where to write the kubeconfig (default: a file in a temp dir)")
    parser.add_argument("--bookmark-interval", metavar="SECONDS", default="60",
                        help="seconds between watch bookmarks while objects change "
                             "(default: 60, as a real apiserver)")
    parser.add_argument("--authorization", choices=("none", "rbac"), default="none",
                        help="rbac: check bearer tokens (401) and Roles/ClusterRoles and their "
                             "bindings (403); the printed kubeconfig's token is a cluster admin, "
                             "`kubectl create token <serviceaccount>` gives others "
                             "(default: none, everything allowed)")
    parser.set_defaults(func=run)


class UsageError(Exception):
    """A mistake in the command line: one line on stderr, exit 2."""


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise UsageError(f'--port "{text}" is not a number; give 0-65535 '
                         "(0 picks a free port)") from None
    if not 0 <= port <= 65535:
        raise UsageError(f"--port {port} is out of range; give 0-65535 (0 picks a free port)")
    return port


def _seconds(flag: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise UsageError(f'{flag} "{text}" must be a positive number of seconds')
    return value


def _kubeconfig_path(path: str | None) -> str:
    import os
    import tempfile

    if path is None:
        return os.path.join(tempfile.mkdtemp(prefix="promop-sandbox-"), "kubeconfig")
    if os.path.isdir(path):
        raise UsageError(f"--kubeconfig {path} is a directory; give a file path, e.g. "
                         f"{os.path.join(path, 'kubeconfig')}")
    return path


def run(args: argparse.Namespace) -> int:
    import signal
    import sys
    import threading

    from promop.sandbox import Sandbox

    try:
        port = _port(args.port)
        interval = _seconds("--bookmark-interval", args.bookmark_interval)
        path = _kubeconfig_path(args.kubeconfig)
    except UsageError as exc:
        print(f"promop sandbox: {exc}", file=sys.stderr)
        return 2
    stop = threading.Event()

    def on_signal(signum, frame) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        sandbox = Sandbox(port=port, bookmark_interval=interval,
                          authorization=args.authorization).start()
    except OSError as exc:
        print(f"promop sandbox: {exc.strerror}", file=sys.stderr)
        return 2
    try:
        try:
            sandbox.write_kubeconfig(path)
        except OSError as exc:
            print(f"promop sandbox: cannot write the kubeconfig to {path}: "
                  f"{exc.strerror or exc}; give a writable --kubeconfig path", file=sys.stderr)
            return 2
        print(f"promop sandbox serving {sandbox.url}; kubeconfig: {path}", flush=True)
        print(f"try: kubectl --kubeconfig {path} get ns", flush=True)
        if args.authorization == "rbac":
            print("rbac: every request needs a bearer token (the kubeconfig's is a cluster "
                  "admin); kubectl sends none over plain HTTP, so use a client that does "
                  "(the Python kubernetes client)", flush=True)
        while not stop.wait(0.5):
            pass
    finally:
        sandbox.stop()
    return 0
