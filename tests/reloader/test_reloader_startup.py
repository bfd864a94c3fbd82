"""What the reloader imports in each mode: start-up CPU is what keeps a pod from being Ready
under the reloader's small CPU limit (docs/reloader.md, "Resources")."""
from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys

HEAVY = ("prometheus_client", "watchdog", "requests", "urllib3", "http.client", "http.server", "ssl", "yaml",
         "kubernetes", "tempfile")

PROBE = """
import json, sys
from reloader.cli import main
rc = main(sys.argv[1:])
print(json.dumps({"rc": rc, "modules": sorted(m for m in %r if m in sys.modules)}))
""" % (HEAVY,)


def _imported(args: list[str]) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    # -S: the host's site hooks (.pth files) import modules of their own; the reloader's image has none
    out = subprocess.run([sys.executable, "-S", "-c", PROBE, *args], capture_output=True, text=True, env=env, timeout=60,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_init_mode_imports_no_client_server_watcher_or_yaml(tmp_path):
    src = tmp_path / "prometheus.yaml.gz"
    src.write_bytes(gzip.compress(b"global:\n  scrape_interval: 30s\n"))
    out = tmp_path / "prometheus.env.yaml"
    seen = _imported(["--watch-interval=0", "--listen-address=:0", f"--config-file={src}",
                      f"--config-envsubst-file={out}"])
    assert seen == {"rc": 0, "modules": []}
    assert out.read_text() == "global:\n  scrape_interval: 30s\n"
