"""The reloader against a real Prometheus (Debian's package)."""
from __future__ import annotations

import os
import signal
import socket
import time
from pathlib import Path

import pytest
import yaml

from reloader_testlib import KubeletDir, gz, wait_for
from reloader_fixtures import prometheus_binary, prometheus_factory, reloader_factory, fast_flags  # noqa: F401 (pytest fixtures)

pytestmark = pytest.mark.prometheus


def _config(pod_label: str = "$(POD_NAME)", rules_dir: Path | None = None, interval: str = "15s") -> str:
    cfg: dict = {"global": {"scrape_interval": interval, "external_labels": {"pod": pod_label}}}
    if rules_dir is not None:
        cfg["rule_files"] = [f"{rules_dir}/*.yaml"]
    return yaml.safe_dump(cfg)


def _rules(group: str) -> str:
    return yaml.safe_dump({"groups": [{"name": group, "rules": [{"record": "job:up:sum", "expr": "sum(up)"}]}]})


def _layout(tmp_path: Path) -> tuple[KubeletDir, Path, KubeletDir]:
    """Kubelet-like mounts: the config Secret, the config_out emptyDir, one rule ConfigMap."""
    config = KubeletDir(tmp_path / "config")
    out_dir = tmp_path / "config_out"
    out_dir.mkdir()
    rules = KubeletDir(tmp_path / "rules" / "prometheus-rulefiles-0")
    return config, out_dir / "prometheus.env.yaml", rules


def _sidecar_args(config: KubeletDir, out: Path, rules: KubeletDir, prom_port: int, fast: list[str]) -> list[str]:
    return [
        f"--reload-url=http://localhost:{prom_port}/-/reload",  # as the operator's StatefulSet
        f"--config-file={config.root / 'prometheus.yaml.gz'}",
        f"--config-envsubst-file={out}",
        f"--watched-dir={rules.root}",
        f"--watched-dir={config.root}",
        *fast,
    ]


def _publish_config(config: KubeletDir, text: str) -> None:
    config.publish_bytes({"prometheus.yaml.gz": gz(text)})


def test_gzipped_config_with_pod_name_reaches_prometheus(tmp_path, prometheus_factory, reloader_factory, fast_flags):
    config, out, rules = _layout(tmp_path)
    rules.publish({"a.yaml": _rules("first")})
    _publish_config(config, _config(rules_dir=rules.root))
    env = {"POD_NAME": "prometheus-k8s-1"}
    # The init container renders the config before Prometheus starts...
    init = reloader_factory([f"--config-file={config.root / 'prometheus.yaml.gz'}", f"--config-envsubst-file={out}",
                             "--watch-interval=0"], env=env)
    assert init.wait_exit(timeout=20) == 0
    prom = prometheus_factory(out)
    assert yaml.safe_load(prom.status_config())["global"]["external_labels"] == {"pod": "prometheus-k8s-1"}
    # ...then the sidecar follows changes.
    # The operator's flags: all interfaces (":8080" there; a free port here), localhost reload URL.
    side = reloader_factory(_sidecar_args(config, out, rules, prom.port, fast_flags) + ["--listen-address=:0"], env=env)
    side.wait_reloaded(1)
    _publish_config(config, _config(pod_label="$(POD_NAME)-shard-$(SHARD)", rules_dir=rules.root, interval="17s"))
    wait_for(lambda: "scrape_interval: 17s" in prom.status_config(), what="new config in Prometheus")
    status = yaml.safe_load(prom.status_config())
    assert status["global"]["external_labels"] == {"pod": "prometheus-k8s-1-shard-$(SHARD)"}
    assert side.metric("reloader_config_environment_variable_expansion_errors") == 1


def test_kubelet_rule_dir_swap_reaches_prometheus(tmp_path, prometheus_factory, reloader_factory, fast_flags):
    config, out, rules = _layout(tmp_path)
    rules.publish({"a.yaml": _rules("before")})
    _publish_config(config, _config(pod_label="p", rules_dir=rules.root))
    out.write_text(_config(pod_label="p", rules_dir=rules.root))
    prom = prometheus_factory(out)
    assert prom.rule_groups() == ["before"]
    side = reloader_factory(_sidecar_args(config, out, rules, prom.port, fast_flags))
    side.wait_reloaded(1)
    rules.publish({"a.yaml": _rules("after"), "b.yaml": _rules("added")})
    wait_for(lambda: prom.rule_groups() == ["added", "after"], what="swapped rules in /api/v1/rules")
    side.wait_reloaded(2)


def test_prometheus_down_at_start_then_up(tmp_path, prometheus_factory, reloader_factory, fast_flags):
    config, out, rules = _layout(tmp_path)
    _publish_config(config, _config(pod_label="$(POD_NAME)", interval="19s"))
    # the port stays bound (not listening: connections are refused) until Prometheus takes it, so
    # that no other process of a parallel run can take it in between
    reserved = socket.socket()
    reserved.bind(("127.0.0.1", 0))
    port = reserved.getsockname()[1]
    try:
        side = reloader_factory(_sidecar_args(config, out, rules, port, fast_flags), env={"POD_NAME": "p-0"})
        side.wait_metric("reloader_reloads_failed_total", lambda v: v >= 2)
        assert "is Prometheus up?" in side.wait_log("reload failed; will retry")["err"]
        assert side.metric("reloader_last_reload_successful") == 0
    finally:
        reserved.close()
    prom = prometheus_factory(out, port=port)
    side.wait_metric("reloader_last_reload_successful", lambda v: v == 1)
    assert "scrape_interval: 19s" in prom.status_config()


def test_invalid_config_is_rejected_then_a_valid_one_reloads(tmp_path, prometheus_factory, reloader_factory, fast_flags):
    config, out, rules = _layout(tmp_path)
    _publish_config(config, _config(pod_label="good", interval="21s"))
    out.write_text(_config(pod_label="good", interval="21s"))
    prom = prometheus_factory(out)
    side = reloader_factory(_sidecar_args(config, out, rules, prom.port, fast_flags))
    side.wait_reloaded(1)

    _publish_config(config, "global:\n  scrape_interval: not-a-duration\n")
    failed = side.wait_metric("reloader_reloads_failed_total", lambda v: v >= 2)  # and it keeps retrying
    assert side.metric("reloader_last_reload_successful") == 0
    assert "returned 500" in side.wait_log("reload failed; will retry")["err"]
    assert "scrape_interval: 21s" in prom.status_config()  # Prometheus keeps the old config

    _publish_config(config, _config(pod_label="fixed", interval="23s"))
    wait_for(lambda: "scrape_interval: 23s" in prom.status_config(), what="the fixed config in Prometheus")
    side.wait_metric("reloader_last_reload_successful", lambda v: v == 1)
    assert side.metric("reloader_reloads_failed_total") >= failed


def test_signal_method_against_real_prometheus(tmp_path, prometheus_binary, prometheus_factory, reloader_factory, fast_flags):
    """SIGHUP found by executable name. Tests run in parallel, so this Prometheus runs under
    a unique executable name (a symlink to the real binary): the kernel's process name is
    the symlink's name, which keeps upstream's name-based lookup unambiguous."""
    name = f"pt{os.getpid() % 100000}{time.monotonic_ns() % 1000:03d}"[:15]
    exe = tmp_path / name
    os.symlink(prometheus_binary, exe)
    config, out, rules = _layout(tmp_path)
    rules.publish({"a.yaml": _rules("sig-before")})
    _publish_config(config, _config(pod_label="s", rules_dir=rules.root, interval="25s"))
    out.write_text(_config(pod_label="s", rules_dir=rules.root, interval="25s"))
    prom = prometheus_factory(out, executable=str(exe))
    side = reloader_factory([
        "--reload-method=signal", f"--process-executable-name={name}",
        f"--runtimeinfo-url=http://127.0.0.1:{prom.port}/api/v1/status/runtimeinfo",
        "--reload-timeout=10s",
        *_sidecar_args(config, out, rules, 1, fast_flags)[1:],
    ])
    side.wait_metric("reloader_last_reload_successful", lambda v: v == 1)
    assert side.metric("reloader_reloads_total") == 1
    assert side.metric('reloader_info{method="signal"}') == 1
    rules.publish({"a.yaml": _rules("sig-after")})
    wait_for(lambda: prom.rule_groups() == ["sig-after"], what="rules reloaded via SIGHUP")
    wait_for(lambda: side.count_logs("reload triggered") == 2, what="second successful reload")
    assert side.metric("reloader_last_reload_successful") == 1
    assert prom.proc is not None and prom.proc.poll() is None  # SIGHUP reloaded, did not kill

    # A rejected config is reported as a failure, not waited out until the timeout.
    _publish_config(config, "global:\n  scrape_interval: nope\n")
    side.wait_metric("reloader_reloads_failed_total", lambda v: v >= 1, timeout=15)
    assert "rejected the new config" in side.wait_log("reload failed; will retry")["err"]
    side.proc.send_signal(signal.SIGTERM)
    assert side.wait_exit(timeout=5) == 0


def test_signal_method_counts_a_rejected_config_as_failed_and_retries(
        tmp_path, prometheus_binary, prometheus_factory, reloader_factory, fast_flags):
    """--reload-method=signal: a SIGHUP that Prometheus answers by refusing the new config is a failed
    reload (metrics, log), retried every --retry-interval, never a success; once the config is fixed,
    the next attempt succeeds."""
    name = f"pr{os.getpid() % 100000}{time.monotonic_ns() % 1000:03d}"[:15]
    exe = tmp_path / name
    os.symlink(prometheus_binary, exe)
    config, out, rules = _layout(tmp_path)
    _publish_config(config, _config(pod_label="s", interval="27s"))
    out.write_text(_config(pod_label="s", interval="27s"))
    prom = prometheus_factory(out, executable=str(exe))
    side = reloader_factory([
        "--reload-method=signal", f"--process-executable-name={name}",
        f"--runtimeinfo-url=http://127.0.0.1:{prom.port}/api/v1/status/runtimeinfo",
        "--reload-timeout=2s",
        *_sidecar_args(config, out, rules, 1, fast_flags)[1:],
    ])
    side.wait_reloaded(1)
    assert side.metric("reloader_last_reload_successful") == 1

    _publish_config(config, "global:\n  scrape_interval: refused\n")
    wait_for(lambda: "refused" in out.read_text(), what="the refused config rendered")
    # the first refusal is seen at once (reloadConfigSuccess turns false), the retries by their timeout
    side.wait_metric("reloader_reloads_failed_total", lambda v: v >= 2, timeout=20)
    assert side.metric("reloader_last_reload_successful") == 0
    assert side.count_logs("reload triggered") == 1  # no attempt on the refused config counted as a success
    attempts = side.metric("reloader_reloads_total")
    assert attempts >= 3
    assert "rejected the new config" in side.wait_log("reload failed; will retry")["err"]
    assert "scrape_interval: 27s" in prom.status_config()  # Prometheus keeps the config it had

    _publish_config(config, _config(pod_label="s", interval="29s"))
    wait_for(lambda: "scrape_interval: 29s" in prom.status_config(), timeout=20, what="the fixed config reloaded")
    side.wait_metric("reloader_last_reload_successful", lambda v: v == 1)
    side.wait_reloaded(2)
