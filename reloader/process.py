"""Finding the Prometheus process for the signal reload method.

Matches like upstream (go-ps's Executable()): the kernel's process name,
/proc/<pid>/comm, which is the basename of the executed path cut to 15 bytes.
"""
from __future__ import annotations

import os

COMM_LEN = 15


def find_pids(name: str, proc: str = "/proc") -> list[int]:
    """PIDs (other than ours) whose executable name is `name`."""
    wanted = name[:COMM_LEN]
    me = os.getpid()
    pids = []
    for entry in os.listdir(proc):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open(os.path.join(proc, entry, "comm"), "rb") as f:
                comm = f.read().rstrip(b"\n").decode("utf-8", "replace")
        except OSError:
            continue
        if comm == wanted:
            pids.append(int(entry))
    return sorted(pids)
