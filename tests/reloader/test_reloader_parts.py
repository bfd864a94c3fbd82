"""--config-parts-dir: a config split over several Secrets, mirrored as plain YAML for scrape_config_files.

Debian's Prometheus is 2.42, older than scrape_config_files (2.43), so the reloads here go to a
counting stand-in; tests/operator/test_split_e2e.py checks the files with promtool.
"""
from __future__ import annotations

import gzip
from pathlib import Path

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
