"""One measured discovery, in its own process: `python3 -m bench.adapter.discovery_child MODE URL`.

MODE `adapter`: the adapter's discovery (streamed /api/v1/series, reduced to what the rules
keep, registry built) with the legacy default config. MODE `json`: fetch the same body and
`json.loads` it (the baseline). Prints JSON: wall seconds of the measured part, RSS growth
(peak resident set during the measured part minus resident set before it), body bytes.
"""

from __future__ import annotations

import gc
import json
import sys
import time


def _status(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def main() -> None:
    mode, url = sys.argv[1], sys.argv[2]
    import requests

    from promop.adapter.app import compile_state, discover_series
    from promop.adapter.config import parse_config
    from promop.adapter.default_config import default_config
    from promop.adapter.registry import build
    from promop.adapter.resources import ResourceMapper
    from promop.prom import PrometheusClient

    state = compile_state(parse_config(default_config()), ResourceMapper())
    client = PrometheusClient(url, timeout=120)
    session = requests.Session()
    size = int(session.get(url + "/size").text)
    gc.collect()
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")   # reset the peak (VmHWM) so it measures only what follows
    except OSError:
        pass
    before = _status("VmRSS")
    if mode == "json":
        t = time.perf_counter()
        parse = 0.0
        n = 0
        kept = []
        for query in sorted({n.rule.series_query for n in state.namers}):
            body = session.get(url + "/api/v1/series", params={"match[]": query}).content
            t0 = time.perf_counter()
            data = json.loads(body)
            parse += time.perf_counter() - t0
            n += len(data["data"])
            kept.append(data)
            del body
        total = time.perf_counter() - t
    else:
        t = time.perf_counter()
        sets = discover_series(client, state.namers + state.external_namers, start=None)
        registry = build(state.namers, state.external_namers, sets)
        total = time.perf_counter() - t
        parse = total
        n = registry.series_seen
    peak = _status("VmHWM")
    print(json.dumps({"mode": mode, "seconds": total, "parse_seconds": parse, "rss_growth": max(0, peak - before),
                      "body_bytes": size, "series": n}))


if __name__ == "__main__":
    main()
