"""`promop autoscaler` with the Kubernetes client's rate limit set (bench.keda --client-qps).

    python3 -m bench.keda.launch QPS BURST autoscaler ARGS...

`promop autoscaler` has no --kube-api-qps flag: its client keeps KubeClient's default (50/s,
burst 100), and at 10,000 ScaledObjects that limit, not the controller, bounds the first
reconcile and the scale loops' status writes. This launcher changes only that default (what
such a flag would do) and then runs the command unchanged, so the bench can show both.
"""

from __future__ import annotations

import sys

from promop.kube.client import KubeClient


def main() -> int:
    qps, burst = float(sys.argv[1]), int(sys.argv[2])
    KubeClient.__init__.__kwdefaults__.update(qps=qps, burst=burst)
    from promop.cli import main as cli

    return cli(sys.argv[3:])


if __name__ == "__main__":
    sys.exit(main())
