"""The HPA path's load, in its own process: what kube-controller-manager's HPA controller makes
the metrics path do for every ScaledObject whose target has replicas >= 1 (KEDA's model, §6:
one external-metrics request per HPA per sync period, 15 s by default).

    python3 -m bench.keda.hpa_driver PORT PERIOD SECONDS PATHS_FILE [THREADS]

Each path of PATHS_FILE (one `/keda/v1/namespaces/<ns>/scaledobjects/<name>/metrics/<metric>`
a line, as `promop adapter --keda-metrics-url` forwards them) is requested once per PERIOD,
the paths spread evenly over the period, for SECONDS. Prints one JSON line: requests sent,
answers by HTTP status, the worst lateness against the schedule.
"""

from __future__ import annotations

import http.client
import json
import sys
import threading
import time


def drive(port: int, period: float, seconds: float, paths: list[str], threads: int) -> dict:
    start = time.monotonic() + 0.5
    end = start + seconds
    codes: dict[int, int] = {}
    lock = threading.Lock()
    late = [0.0]
    step = period / max(1, len(paths))

    def worker(k: int) -> None:
        if k >= len(paths):
            return
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        mine: dict[int, int] = {}
        worst = 0.0
        rnd = 0
        while True:
            for i in range(k, len(paths), threads):
                due = start + rnd * period + i * step
                if due >= end or time.monotonic() >= end:   # a driver behind schedule stops at the end too
                    break
                now = time.monotonic()
                if due > now:
                    time.sleep(due - now)
                else:
                    worst = max(worst, now - due)
                try:
                    conn.request("GET", paths[i])
                    resp = conn.getresponse()
                    resp.read()
                    code = resp.status
                except (OSError, http.client.HTTPException):
                    conn.close()
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                    code = 0
                mine[code] = mine.get(code, 0) + 1
            else:
                rnd += 1
                continue
            break
        with lock:
            for c, n in mine.items():
                codes[c] = codes.get(c, 0) + n
            late[0] = max(late[0], worst)

    ts = [threading.Thread(target=worker, args=(k,), daemon=True) for k in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return {"requests": sum(codes.values()), "codes": {str(k): v for k, v in sorted(codes.items())},
            "seconds": seconds, "late_max": round(late[0], 3)}


def main() -> None:
    port, period, seconds, paths_file = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
    threads = int(sys.argv[5]) if len(sys.argv) > 5 else 4
    with open(paths_file, encoding="utf-8") as f:
        paths = [line.strip() for line in f if line.strip()]
    print(json.dumps(drive(port, period, seconds, paths, threads)), flush=True)


if __name__ == "__main__":
    main()
