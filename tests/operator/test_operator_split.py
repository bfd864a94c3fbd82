"""The config split past one Secret, end to end: the operator on the sandbox with a low
--config-secret-max-bytes, and the real reloader mirroring the part Secrets it wrote.

Debian's Prometheus is 2.42, older than scrape_config_files (2.43): it cannot load the main config,
so the reloads go to a counting stand-in and promtool checks each mirrored part.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import yaml
from operator_testlib import NS, ROOT, eventually, names, prometheus, service_monitor

from promop.kube.resources import NAMESPACES, PROMETHEUSES, SECRETS, SERVICEMONITORS, STATEFULSETS
from promop.render import split
from tests.render.helpers import run_promtool, without_kubernetes_sd

LIMIT = 2500


def monitor(i: int, salt: str = "") -> dict:
    relabelings = [{"sourceLabels": [f"__meta_kubernetes_pod_label_l{k}"], "targetLabel": f"t{k}",
                    "regex": hashlib.sha256(f"{i}-{k}{salt}".encode()).hexdigest()} for k in range(6)]
    return service_monitor(f"sm-{i}", relabelings=relabelings)


def parts(kube) -> dict[str, bytes]:
    """Part Secret name -> its gzipped data."""
    out = {}
    for name in names(kube, SECRETS):
        if split.part_index({"metadata": {"name": "p"}}, name) is not None:
            (value,) = (kube.get(SECRETS, name, NS).get("data") or {}).values()
            out[name] = base64.b64decode(value)
    return out


def main_config(kube) -> dict:
    data = kube.get(SECRETS, "prometheus-p", NS)["data"]["prometheus.yaml.gz"]
    return yaml.safe_load(gzip.decompress(base64.b64decode(data)))


def reconciled(kube, name: str = "p") -> dict:
    conditions = (kube.get(PROMETHEUSES, name, NS).get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == "Reconciled"), {})


class Mounts:
    """The part Secrets as kubelet projects them into one directory: keys -> ..data -> ..<n>/."""

    def __init__(self, root: Path):
        self.root = root
        root.mkdir(parents=True)
        self.n = 0

    def publish(self, files: dict[str, bytes]) -> None:
        self.n += 1
        ts = self.root / f"..{self.n}"
        ts.mkdir()
        for key, data in files.items():
            (ts / key).write_bytes(data)
        os.symlink(ts.name, self.root / "..tmp")
        os.replace(self.root / "..tmp", self.root / "..data")
        for entry in self.root.iterdir():
            if not entry.name.startswith(".") and entry.name not in files:
                entry.unlink()
        for key in files:
            if not (self.root / key).is_symlink():
                os.symlink(f"..data/{key}", self.root / key)


def projected(kube) -> dict[str, bytes]:
    """What kubelet would project: each part Secret's key and data."""
    out = {}
    for name in parts(kube):
        for key, value in kube.get(SECRETS, name, NS)["data"].items():
            out[key] = base64.b64decode(value)
    return out


class Reloads:
    """Prometheus's /-/reload stand-in."""

    def __init__(self) -> None:
        self.count = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                outer.count += 1
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/-/reload"


def test_a_config_over_the_limit_splits_and_one_edit_rewrites_one_part(kube, start_operator, tmp_path):
    kube.create(NAMESPACES, {"metadata": {"name": NS}})
    kube.create(PROMETHEUSES, prometheus(version="v2.45.0"))
    for i in range(8):
        kube.create(SERVICEMONITORS, monitor(i))
    op = start_operator(config_secret_max_bytes=LIMIT)
    eventually(lambda: len(parts(kube)) >= 2 and sum(len(yaml.safe_load(gzip.decompress(g))["scrape_configs"] or [])
                                                     for g in parts(kube).values()) == 8, 30, "the jobs in parts")
    eventually(op.idle, 20)
    before = parts(kube)
    assert all(len(g) <= LIMIT for g in before.values())
    assert main_config(kube)["scrape_config_files"] == [f"{split.PARTS_OUT}/*.yaml"]
    assert "scrape_configs" not in main_config(kube)
    pod = kube.get(STATEFULSETS, "prometheus-p", NS)["spec"]["template"]["spec"]
    (volume,) = [v for v in pod["volumes"] if v["name"] == split.VOLUME]
    assert sorted(s["secret"]["name"] for s in volume["projected"]["sources"]) == sorted(before)
    assert reconciled(kube).get("status") == "True"

    # the real reloader mirrors the projected parts and reloads
    mounts = Mounts(tmp_path / "parts")
    mounts.publish(projected(kube))
    config_dir = tmp_path / "config"
    config_dir.mkdir()
    (config_dir / "prometheus.yaml.gz").write_bytes(base64.b64decode(
        kube.get(SECRETS, "prometheus-p", NS)["data"]["prometheus.yaml.gz"]))
    out = tmp_path / "config_out"
    reloads = Reloads()
    env = {**os.environ, "POD_NAME": "prometheus-p-0", "SHARD": "0", "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "reloader", f"--config-file={config_dir / 'prometheus.yaml.gz'}",
         f"--config-envsubst-file={out / 'prometheus.env.yaml'}", f"--config-parts-dir={mounts.root}",
         f"--config-parts-out-dir={out / 'scrape-configs'}", f"--reload-url={reloads.url}",
         "--delay-interval=50ms", "--retry-interval=200ms", "--watch-interval=1m"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    out.mkdir()
    try:
        eventually(lambda: reloads.count >= 1 and len(list((out / "scrape-configs").glob("*.yaml"))) == len(before),
                   30, "the parts mirrored and a reload")
        mirrored = [j for f in sorted((out / "scrape-configs").glob("*.yaml"))
                    for j in yaml.safe_load(f.read_text())["scrape_configs"] or []]
        assert sorted(j["job_name"] for j in mirrored) == sorted(f"serviceMonitor/{NS}/sm-{i}/0" for i in range(8))
        for f in (out / "scrape-configs").glob("*.yaml"):
            assert "$(SHARD)" not in f.read_text()  # expanded from the reloader's env, as in the main config
            checked = tmp_path / f"check-{f.name}"
            checked.write_text(without_kubernetes_sd(f.read_text()))
            done = run_promtool("check", "config", "--syntax-only", str(checked))
            assert done.returncode == 0, done.stdout + done.stderr

        # edit one monitor: the operator rewrites exactly one part Secret; the reloader reloads
        kube.patch(SERVICEMONITORS, "sm-3", {"spec": monitor(3, salt="edited")["spec"]}, NS)
        eventually(lambda: parts(kube) != before, 30, "a part rewritten")
        eventually(op.idle, 20)
        after = parts(kube)
        assert after.keys() == before.keys()
        assert len([n for n in before if before[n] != after[n]]) == 1
        seen = reloads.count
        mounts.publish(projected(kube))
        eventually(lambda: reloads.count > seen, 30, "a reload after the edit")
    finally:
        proc.terminate()
        proc.wait(10)
        reloads.server.shutdown()

    # the config shrinks under the limit: back to one Secret, the parts and the volume gone
    for i in range(1, 8):
        kube.delete(SERVICEMONITORS, f"sm-{i}", NS)
    eventually(lambda: parts(kube) == {}, 30, "stale part Secrets deleted")
    eventually(lambda: "scrape_configs" in main_config(kube) and "scrape_config_files" not in main_config(kube), 30,
               "one Secret again")
    eventually(lambda: not any(v["name"] == split.VOLUME for v in kube.get(STATEFULSETS, "prometheus-p", NS)[
        "spec"]["template"]["spec"]["volumes"]), 30, "the parts volume removed")


def test_an_old_prometheus_over_the_limit_is_refused_with_a_clear_condition(kube, start_operator):
    kube.create(NAMESPACES, {"metadata": {"name": NS}})
    kube.create(PROMETHEUSES, prometheus(version="v2.42.0"))
    for i in range(8):
        kube.create(SERVICEMONITORS, monitor(i))
    start_operator(config_secret_max_bytes=LIMIT)
    eventually(lambda: reconciled(kube).get("reason") == "ConfigTooLarge", 30, "Reconciled=False ConfigTooLarge")
    condition = reconciled(kube)
    assert condition["status"] == "False"
    assert f"over the config Secret limit of {LIMIT} bytes" in condition["message"]
    assert "2.43.0" in condition["message"] and "shard" in condition["message"]
    assert parts(kube) == {}
