"""--config-parts-dir: a config split over several Secrets, mirrored as plain YAML for scrape_config_files.

Debian's Prometheus is 2.42, older than scrape_config_files (2.43), so the reloads here go to a
counting stand-in; tests/operator/test_split_e2e.py checks the files with promtool.
"""
from __future__ import annotations

import base64
import gzip
from pathlib import Path

import requests
import yaml

from reloader_testlib import KubeletDir, wait_for
from reloader_fixtures import reloader_factory, reload_server, fast_flags  # noqa: F401 (pytest fixtures)


def gz(text: str) -> bytes:
    """Deterministic, as the operator's (mtime 0): unchanged content is unchanged bytes."""
    return gzip.compress(text.encode(), mtime=0)


def _part(*jobs: str) -> str:
    return yaml.safe_dump({"scrape_configs": [{"job_name": j, "static_configs": [{"targets": ["$(POD_NAME):9090"]}]}
                                              for j in jobs]})


def _layout(tmp_path: Path) -> tuple[KubeletDir, Path, Path]:
    config = KubeletDir(tmp_path / "config")
    config.publish_bytes({"prometheus.yaml.gz": gz("global: {}\nscrape_config_files: [x/*.yaml]\n")})
    out = tmp_path / "config_out"
    out.mkdir()
    return config, out / "prometheus.env.yaml", out / "scrape-configs"


def _args(config: KubeletDir, out: Path, parts: KubeletDir, parts_out: Path, url: str) -> list[str]:
    return [f"--config-file={config.root / 'prometheus.yaml.gz'}", f"--config-envsubst-file={out}",
            f"--watched-dir={config.root}", f"--config-parts-dir={parts.root}",
            f"--config-parts-out-dir={parts_out}", f"--reload-url={url}"]


def _jobs(parts_out: Path) -> dict[str, list[str]]:
    return {p.name: [j["job_name"] for j in yaml.safe_load(p.read_text())["scrape_configs"]]
            for p in sorted(parts_out.glob("*.yaml"))}


def test_parts_are_gunzipped_expanded_and_a_changed_part_reloads(tmp_path, reloader_factory, reload_server, fast_flags):
    config, out, parts_out = _layout(tmp_path)
    parts = KubeletDir(tmp_path / "parts")
    parts.publish_bytes({"scrape-configs-0.yaml.gz": gz(_part("a", "b")), "scrape-configs-1.yaml.gz": gz(_part("c"))})
    srv = reload_server()
    proc = reloader_factory(_args(config, out, parts, parts_out, srv.url) + fast_flags, env={"POD_NAME": "pod-7"})
    wait_for(lambda: srv.posts >= 1 and _jobs(parts_out) == {"scrape-configs-0.yaml": ["a", "b"],
                                                             "scrape-configs-1.yaml": ["c"]},
             what="both parts written and a reload")
    text = (parts_out / "scrape-configs-0.yaml").read_text()
    assert "pod-7:9090" in text and "$(POD_NAME)" not in text
    before = (parts_out / "scrape-configs-0.yaml").stat().st_mtime_ns
    proc.wait_reloaded(1)

    # one part changes: it is rewritten, the other one is not, and Prometheus reloads
    parts.publish_bytes({"scrape-configs-0.yaml.gz": gz(_part("a", "b")), "scrape-configs-1.yaml.gz": gz(_part("c", "d"))})
    wait_for(lambda: _jobs(parts_out).get("scrape-configs-1.yaml") == ["c", "d"], what="part 1 rewritten")
    proc.wait_reloaded(2)
    assert (parts_out / "scrape-configs-0.yaml").stat().st_mtime_ns == before

    # the config shrank to one part: the stale file goes, and Prometheus reloads again
    parts.publish_bytes({"scrape-configs-0.yaml.gz": gz(_part("a", "b", "c", "d"))})
    wait_for(lambda: _jobs(parts_out) == {"scrape-configs-0.yaml": ["a", "b", "c", "d"]}, what="stale part removed")
    proc.wait_reloaded(3)


def test_a_corrupt_part_keeps_the_last_good_files(tmp_path, reloader_factory, reload_server,
                                                                       fast_flags):
    config, out, parts_out = _layout(tmp_path)
    parts = KubeletDir(tmp_path / "parts")
    parts.publish_bytes({"scrape-configs-0.yaml.gz": gz(_part("a"))})
    srv = reload_server()
    proc = reloader_factory(_args(config, out, parts, parts_out, srv.url) + fast_flags)
    proc.wait_reloaded(1)
    parts.publish_bytes({"scrape-configs-0.yaml.gz": gz(_part("a"))[:20]})
    entry = proc.wait_log("cannot apply config")
    assert "scrape-configs-0.yaml.gz" in entry["err"]
    assert _jobs(parts_out) == {"scrape-configs-0.yaml": ["a"]}
    # fixed: written again
    parts.publish_bytes({"scrape-configs-0.yaml.gz": gz(_part("a", "z"))})
    wait_for(lambda: _jobs(parts_out) == {"scrape-configs-0.yaml": ["a", "z"]}, what="the fixed part written")


def test_init_mode_writes_the_parts_before_prometheus_starts(tmp_path, reloader_factory):
    config, out, parts_out = _layout(tmp_path)
    parts = KubeletDir(tmp_path / "parts")
    parts.publish_bytes({"scrape-configs-0.yaml.gz": gz(_part("a")), "scrape-configs-1.yaml": _part("b").encode()})
    init = reloader_factory([f"--config-file={config.root / 'prometheus.yaml.gz'}", f"--config-envsubst-file={out}",
                             f"--config-parts-dir={parts.root}", f"--config-parts-out-dir={parts_out}",
                             "--watch-interval=0"])
    assert init.wait_exit() == 0
    assert _jobs(parts_out) == {"scrape-configs-0.yaml": ["a"], "scrape-configs-1.yaml": ["b"]}


def test_parts_dir_without_out_dir_is_a_usage_error(tmp_path, reloader_factory):
    proc = reloader_factory([f"--config-parts-dir={tmp_path}"])
    assert proc.wait_exit() == 2
    entry = proc.find_log("invalid flags")
    assert entry is not None and "--config-parts-out-dir" in entry["err"]


# ---- fast reload: the part Secrets read through the API (--watch-secret-file) ----------------------------------

class Secrets:
    """The sandbox's part Secrets, written as the operator does."""

    def __init__(self, url: str):
        self.base = f"{url}/api/v1/namespaces/default/secrets"

    def put(self, name: str, key: str, data: bytes) -> None:
        body = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": "default"},
                "data": {key: base64.b64encode(data).decode()}}
        current = requests.get(f"{self.base}/{name}", timeout=5)
        if current.status_code == 404:
            resp = requests.post(self.base, json=body, timeout=5)
        else:
            body["metadata"]["resourceVersion"] = current.json()["metadata"]["resourceVersion"]
            resp = requests.put(f"{self.base}/{name}", json=body, timeout=5)
        assert resp.status_code in (200, 201), resp.text

    def delete(self, name: str) -> None:
        assert requests.delete(f"{self.base}/{name}", timeout=5).status_code == 200


def test_parts_through_the_api_reach_the_output_before_kubelet(tmp_path, sandbox, sandbox_kubeconfig, reloader_factory,
                                                               reload_server, fast_flags):
    config, out, parts_out = _layout(tmp_path)
    mounted = KubeletDir(tmp_path / "parts-mounted")
    staged = tmp_path / "config_out" / "scrape-configs-staged"
    secrets = Secrets(sandbox.url)
    secrets.put("p-config-part-0", "scrape-configs-0.yaml.gz", gz(_part("a")))
    secrets.put("p-config-part-1", "scrape-configs-1.yaml.gz", gz(_part("b")))
    # kubelet's projection lags: part 1 still holds an older job list
    mounted.publish_bytes({"scrape-configs-0.yaml.gz": gz(_part("a")), "scrape-configs-1.yaml.gz": gz(_part("old"))})
    srv = reload_server()
    watch = [f"--watch-secret-file=default/p-config-part-{i}:scrape-configs-{i}.yaml.gz={staged},mount={mounted.root}"
             for i in range(2)]
    proc = reloader_factory([f"--kubeconfig={sandbox_kubeconfig}", f"--config-file={config.root / 'prometheus.yaml.gz'}",
                             f"--config-envsubst-file={out}", f"--config-parts-dir={staged}",
                             f"--config-parts-out-dir={parts_out}", f"--reload-url={srv.url}", *watch, *fast_flags])
    wait_for(lambda: _jobs(parts_out) == {"scrape-configs-0.yaml": ["a"], "scrape-configs-1.yaml": ["b"]},
             what="the API's parts, not kubelet's older one")
    proc.wait_reloaded(1)
    reloads = proc.count_logs("reload triggered")

    # an edit through the API, never mounted: written and reloaded
    secrets.put("p-config-part-1", "scrape-configs-1.yaml.gz", gz(_part("b", "c")))
    wait_for(lambda: _jobs(parts_out).get("scrape-configs-1.yaml") == ["b", "c"], what="the edited part")
    proc.wait_reloaded(reloads + 1)

    # the operator deletes a stale part: its file goes
    secrets.delete("p-config-part-1")
    wait_for(lambda: list(_jobs(parts_out)) == ["scrape-configs-0.yaml"], what="the deleted part's file removed")
