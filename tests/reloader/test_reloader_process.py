"""The reloader as a real subprocess against a tiny counting /-/reload server."""
from __future__ import annotations

import gzip
import os
import shutil
import signal
import socket
import threading
import time
from datetime import datetime
from pathlib import Path

import requests

from deadlines import scaled
from reloader_testlib import gz, wait_for, write_atomic
from reloader_fixtures import reloader_factory, reload_server, fast_flags  # noqa: F401 (pytest fixtures)


def _setup(tmp_path: Path, text: str = "global: {}\n") -> tuple[Path, Path, Path]:
    cfg_dir, out_dir, rules = tmp_path / "config", tmp_path / "config_out", tmp_path / "rules"
    for d in (cfg_dir, out_dir, rules):
        d.mkdir()
    cfg = cfg_dir / "prometheus.yaml.gz"
    cfg.write_bytes(gz(text))
    return cfg, out_dir / "prometheus.env.yaml", rules


def _args(cfg: Path, out: Path, rules: Path, url: str, fast: list[str]) -> list[str]:
    return [f"--config-file={cfg}", f"--config-envsubst-file={out}", f"--watched-dir={rules}",
            f"--watched-dir={cfg.parent}", f"--reload-url={url}", *fast]


def test_reloads_only_when_content_changes(tmp_path, reloader_factory, reload_server, fast_flags) -> None:
    cfg, out, rules = _setup(tmp_path)
    (rules / "a.yaml").write_text("groups: []\n")
    srv = reload_server()
    rel = reloader_factory(_args(cfg, out, rules, srv.url, fast_flags))
    rel.wait_reloaded(1)
    assert srv.posts == 1

    # The same bytes written again (a new inode each time, as kubelet would): no reload.
    passes = rel.count_logs("pass finished")
    events = rel.metric("reloader_watch_events_total")
    write_atomic(cfg, cfg.read_bytes())
    write_atomic(rules / "a.yaml", b"groups: []\n")
    rel.wait_metric("reloader_watch_events_total", lambda v: v > events)
    wait_for(lambda: rel.count_logs("pass finished") > passes, what="a pass after the rewrite")
    assert srv.posts == 1
    assert rel.metric("reloader_reloads_total") == 1

    # A real change in a watched dir reloads exactly once more.
    (rules / "a.yaml").write_text("groups: [{name: g, rules: []}]\n")
    rel.wait_reloaded(2)
    # And a config change too, with the output rewritten.
    write_atomic(cfg, gz("global: {scrape_interval: 7s}\n"))
    rel.wait_reloaded(3)
    assert out.read_text() == "global: {scrape_interval: 7s}\n"
    assert srv.posts == 3
    assert rel.metric("reloader_last_reload_successful") == 1
    assert rel.metric("reloader_last_reload_success_timestamp_seconds") > time.time() - 60
    assert rel.metric("reloader_watches") == 2
    assert rel.metric("reloader_reloads_failed_total") == 0


def test_envsubst_ordinal_and_unset_variables(tmp_path, reloader_factory, reload_server, fast_flags) -> None:
    cfg, out, rules = _setup(tmp_path, "pod: $(POD_NAME)\nord: $(STATEFULSET_ORDINAL_NUMBER)\nx: $(UNSET_A) $(UNSET_A) $(UNSET_B)\n")
    srv = reload_server()
    env = {"POD_NAME": "prometheus-main-7"}
    for name in ("UNSET_A", "UNSET_B"):
        os.environ.pop(name, None)
    rel = reloader_factory(_args(cfg, out, rules, srv.url, fast_flags), env=env)
    rel.wait_reloaded(1)
    assert out.read_text() == "pod: prometheus-main-7\nord: 7\nx: $(UNSET_A) $(UNSET_A) $(UNSET_B)\n"
    assert rel.metric("reloader_config_environment_variable_expansion_errors") == 3
    warnings = [e for e in rel.logs if e["level"] == "warn" and e["msg"].startswith("environment variable not set")]
    assert sorted((w["var"], w["occurrences"]) for w in warnings) == [("UNSET_A", 2), ("UNSET_B", 1)]
    # Logged once: a new config with the same unset variable adds no warning.
    write_atomic(cfg, gz("x: $(UNSET_A)\n"))
    rel.wait_reloaded(2)
    assert rel.metric("reloader_config_environment_variable_expansion_errors") == 1
    assert len([e for e in rel.logs if e["msg"].startswith("environment variable not set")]) == 2


def test_init_mode_writes_once_and_exits_without_reloading(tmp_path, reloader_factory, reload_server) -> None:
    cfg, out, rules = _setup(tmp_path, "shard: $(SHARD)\n")
    srv = reload_server()
    command = [shutil.which("promop-config-reloader") or "promop-config-reloader"]
    rel = reloader_factory(
        [f"--config-file={cfg}", f"--config-envsubst-file={out}", "--watch-interval=0",
         "--listen-address=127.0.0.1:0", f"--reload-url={srv.url}"],
        env={"SHARD": "2"}, command=command,
    )
    assert rel.wait_exit(timeout=20) == 0
    assert out.read_text() == "shard: 2\n"
    assert srv.posts == 0
    assert rel.find_log("listening") is None


def test_init_mode_waits_for_missing_input(tmp_path, reloader_factory) -> None:
    cfg, out, _ = _setup(tmp_path)
    cfg.unlink()
    rel = reloader_factory([f"--config-file={cfg}", f"--config-envsubst-file={out}", "--watch-interval=0",
                            "--retry-interval=50ms"])
    err = rel.wait_log("cannot apply config")
    assert "does not exist (yet); waiting for it" in err["err"]
    assert rel.proc.poll() is None
    write_atomic(cfg, gz("late: true\n"))
    assert rel.wait_exit(timeout=20) == 0
    assert out.read_text() == "late: true\n"


def test_missing_input_at_start_is_waited_for(tmp_path, reloader_factory, reload_server, fast_flags) -> None:
    cfg, out, rules = _setup(tmp_path)
    cfg.unlink()
    srv = reload_server()
    rel = reloader_factory(_args(cfg, out, rules, srv.url, fast_flags))
    assert "does not exist (yet)" in rel.wait_log("cannot apply config")["err"]
    rel.wait_metric("reloader_config_apply_operations_failed_total", lambda v: v >= 1)
    assert srv.posts == 0 and not out.exists()
    write_atomic(cfg, gz("global: {}\n"))
    rel.wait_reloaded(1)
    assert out.read_text() == "global: {}\n"


def test_bad_input_keeps_last_good_output_until_fixed(tmp_path, reloader_factory, reload_server, fast_flags) -> None:
    cfg, out, rules = _setup(tmp_path, "good: 1\n")
    srv = reload_server()
    rel = reloader_factory(_args(cfg, out, rules, srv.url, fast_flags))
    rel.wait_reloaded(1)

    broken = gzip.compress(b"good: 2\n" * 50)
    write_atomic(cfg, broken[:20] + b"\x00" * 30 + broken[50:])
    err = rel.wait_log("cannot apply config")["err"]
    assert "cannot be decompressed" in err and str(cfg) in err
    assert rel.wait_metric("reloader_config_apply_operations_failed_total", lambda v: v >= 1)

    write_atomic(cfg, gzip.compress(b"bad: \xff\n"))
    wait_for(lambda: any("not valid UTF-8" in e.get("err", "") for e in rel.logs), what="UTF-8 error log")
    assert out.read_text() == "good: 1\n"
    assert srv.posts == 1

    # A watched-dir change still reloads while the config input is bad (the last good output stays).
    (rules / "r.yaml").write_text("groups: []\n")
    rel.wait_reloaded(2)
    assert out.read_text() == "good: 1\n"

    write_atomic(cfg, gz("good: 3\n"))
    rel.wait_reloaded(3)
    assert out.read_text() == "good: 3\n"


def test_unwritable_output_dir_recovers(tmp_path, reloader_factory, reload_server, fast_flags) -> None:
    cfg, _, rules = _setup(tmp_path)
    blocker = tmp_path / "out_dir"
    blocker.write_text("a file where the output directory should be")
    out = blocker / "prometheus.env.yaml"
    srv = reload_server()
    rel = reloader_factory(_args(cfg, out, rules, srv.url, fast_flags))
    err = rel.wait_log("cannot apply config")["err"]
    assert "cannot create a temporary file" in err and str(blocker) in err
    rel.wait_metric("reloader_config_apply_operations_failed_total", lambda v: v >= 2)  # retried
    assert srv.posts == 0
    blocker.unlink()
    blocker.mkdir()
    rel.wait_reloaded(1)
    assert out.read_text() == "global: {}\n"


def test_failed_reload_is_retried_until_it_succeeds(tmp_path, reloader_factory, reload_server, fast_flags) -> None:
    cfg, out, rules = _setup(tmp_path)
    srv = reload_server(status=500)
    rel = reloader_factory(_args(cfg, out, rules, srv.url, fast_flags))
    rel.wait_metric("reloader_reloads_failed_total", lambda v: v >= 3)
    assert rel.metric("reloader_last_reload_successful") == 0
    assert "returned 500" in rel.wait_log("reload failed; will retry")["err"]
    srv.status = 200
    rel.wait_metric("reloader_last_reload_successful", lambda v: v == 1)
    # Once it succeeded, retries stop: new passes (forced by a no-op watch event) do not POST.
    posts = srv.posts
    for _ in range(2):
        passes = rel.count_logs("pass finished")
        (rules / "same.yaml").write_text("")
        wait_for(lambda: rel.count_logs("pass finished") > passes, what="a pass after the write")
    assert srv.posts == posts + 1  # creating the file is a change; rewriting it identically is not


def test_sigterm_while_retrying_exits_promptly(tmp_path, reloader_factory, fast_flags) -> None:
    cfg, out, rules = _setup(tmp_path)
    with socket.socket() as s:  # a port nobody listens on: Prometheus is down
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}/-/reload"
    flags = [f for f in fast_flags if not f.startswith("--retry-interval")] + ["--retry-interval=1m"]
    rel = reloader_factory(_args(cfg, out, rules, url, flags))
    rel.wait_metric("reloader_reloads_failed_total", lambda v: v >= 1)
    started = time.monotonic()
    rel.proc.send_signal(signal.SIGTERM)
    assert rel.wait_exit(timeout=10) == 0
    assert time.monotonic() - started < scaled(3)  # promptly: not after the 1 m retry interval
    assert rel.find_log("received signal; shutting down", signal="SIGTERM")


def test_sigterm_during_a_hanging_reload_exits_promptly(tmp_path, reloader_factory, reload_server, fast_flags) -> None:
    cfg, out, rules = _setup(tmp_path)
    srv = reload_server(hang=threading.Event())
    rel = reloader_factory(_args(cfg, out, rules, srv.url, fast_flags + ["--reload-timeout=1m"]))
    wait_for(lambda: srv.posts >= 1, what="the reload POST")
    started = time.monotonic()
    rel.proc.send_signal(signal.SIGTERM)
    assert rel.wait_exit(timeout=10) == 0
    assert time.monotonic() - started < scaled(4)  # promptly: not after the 1 m reload timeout


def test_health_and_logfmt(tmp_path, reloader_factory, reload_server) -> None:
    cfg, out, rules = _setup(tmp_path)
    srv = reload_server()
    # logfmt is the default: override the fixture's json flag by giving it last.
    rel = reloader_factory(_args(cfg, out, rules, srv.url, ["--listen-address=127.0.0.1:0", "--log-format=logfmt"]))
    line = wait_for(lambda: next((l for l in rel.lines if "msg=listening" in l), None), what="logfmt listening line")
    assert line.startswith("ts=") and " level=info " in line
    port = int(line.rsplit("port=", 1)[1].split()[0])
    resp = requests.get(f"http://127.0.0.1:{port}/healthz", timeout=5)
    assert resp.status_code == 200 and resp.json() == {"status": "up"}
    wait_for(lambda: any("msg=\"reload triggered\"" in l for l in rel.lines), what="logfmt reload line")


def test_invalid_flags_exit_2(reloader_factory) -> None:
    rel = reloader_factory(["--config-envsubst-file=/tmp/x"])
    assert rel.wait_exit() == 2
    assert "needs --config-file" in rel.find_log("invalid flags")["err"]


def test_missing_watched_dir_is_watched_once_it_appears(tmp_path, reloader_factory, reload_server, fast_flags) -> None:
    cfg, out, rules = _setup(tmp_path)
    late = tmp_path / "late-rules"
    srv = reload_server()
    rel = reloader_factory(_args(cfg, out, rules, srv.url, fast_flags) + [f"--watched-dir={late}"])
    rel.wait_reloaded(1)
    assert rel.find_log("cannot watch directory; will retry", dir=str(late))
    assert rel.metric("reloader_watch_errors_total") >= 1
    assert rel.metric("reloader_watches") == 2
    late.mkdir()
    rel.wait_metric("reloader_watches", lambda v: v == 3)
    (late / "r.yaml").write_text("groups: []\n")
    rel.wait_reloaded(2)
    assert srv.posts == 2


def test_init_mode_sigterm_while_waiting_exits_0(tmp_path, reloader_factory) -> None:
    cfg, out, _ = _setup(tmp_path)
    cfg.write_bytes(b"\x1f\x8b\x08 not really gzip")
    rel = reloader_factory([f"--config-file={cfg}", f"--config-envsubst-file={out}", "--watch-interval=0",
                            "--retry-interval=1m"])
    assert "cannot be decompressed" in rel.wait_log("cannot apply config")["err"]
    rel.proc.send_signal(signal.SIGTERM)
    assert rel.wait_exit(timeout=5) == 0
    assert not out.exists()


def test_periodic_full_check_catches_a_change_no_event_reports(tmp_path, reloader_factory, reload_server, fast_flags) -> None:
    """Watches are not recursive, but the hash covers nested files (as upstream's Walk): an
    in-place rewrite of rules/sub/x.yaml produces no event on the watched directory, so
    only the --watch-interval full check can find it."""
    cfg, out, rules = _setup(tmp_path)
    (rules / "sub").mkdir()
    nested = rules / "sub" / "x.yaml"
    nested.write_bytes(b"groups: [a]\n")
    srv = reload_server()
    flags = [f for f in fast_flags if not f.startswith("--watch-interval")] + ["--watch-interval=700ms"]
    rel = reloader_factory(_args(cfg, out, rules, srv.url, flags))
    rel.wait_reloaded(1)
    # Let a periodic pass or two go by first: with nothing changed they must not reload.
    applies = rel.metric("reloader_config_apply_operations_total")
    rel.wait_metric("reloader_config_apply_operations_total", lambda v: v >= applies + 2)
    assert srv.posts == 1
    events = rel.metric("reloader_watch_events_total")
    with open(nested, "r+b") as f:  # same inode, same size: nothing the directory watch sees
        f.write(b"groups: [b]\n")
    rel.wait_reloaded(2)
    assert srv.posts == 2
    assert rel.metric("reloader_watch_events_total") == events  # found by the full check, not an event


def test_failed_reload_retries_at_the_retry_interval(tmp_path, reloader_factory, reload_server, fast_flags) -> None:
    cfg, out, rules = _setup(tmp_path)
    srv = reload_server(status=500)
    flags = [f for f in fast_flags if not f.startswith("--retry-interval")] + ["--retry-interval=300ms"]
    rel = reloader_factory(_args(cfg, out, rules, srv.url, flags))
    rel.wait_metric("reloader_reloads_failed_total", lambda v: v >= 4, timeout=20)
    times = [datetime.fromisoformat(e["ts"].replace("Z", "+00:00")).timestamp()
             for e in rel.logs if e["msg"] == "reload failed; will retry"]
    gaps = [b - a for a, b in zip(times, times[1:])]
    # Never sooner than --retry-interval (less the jitter of the POSTs the stamps follow).
    assert gaps and all(g >= 0.25 for g in gaps), gaps
    assert sorted(gaps)[len(gaps) // 2] < 3, gaps  # and it does keep retrying


def test_newer_content_supersedes_a_pending_retry(tmp_path, reloader_factory, reload_server, fast_flags) -> None:
    """While waiting a long --retry-interval, a new config is tried after --delay-interval,
    and once a reload of the newest content succeeds nothing older is reloaded again."""
    cfg, out, rules = _setup(tmp_path, "v: 1\n")
    srv = reload_server(status=500)
    # a retry interval far beyond the (scaled) deadlines below: only the new content can be tried in time
    flags = [f for f in fast_flags if not f.startswith("--retry-interval")] + ["--retry-interval=10m"]
    rel = reloader_factory(_args(cfg, out, rules, srv.url, flags))
    rel.wait_metric("reloader_reloads_failed_total", lambda v: v >= 1)
    write_atomic(cfg, gz("v: 2\n"))
    rel.wait_metric("reloader_reloads_failed_total", lambda v: v >= 2, timeout=20)  # not after 10m
    assert out.read_text() == "v: 2\n"
    srv.status = 200
    write_atomic(cfg, gz("v: 3\n"))
    rel.wait_reloaded(1, timeout=20)
    assert out.read_text() == "v: 3\n"
    posts = srv.posts
    # The reloaded state is the newest one: rewriting it identically is not a change.
    passes = rel.count_logs("pass finished")
    write_atomic(cfg, cfg.read_bytes())  # (gz() would stamp a new gzip mtime: other bytes)
    wait_for(lambda: rel.count_logs("pass finished") > passes, what="a pass after the rewrite")
    assert srv.posts == posts
    assert rel.metric("reloader_reloads_total") == 3 and rel.metric("reloader_reloads_failed_total") == 2


def test_all_issue_metrics_and_exact_healthz(tmp_path, reloader_factory, reload_server, fast_flags) -> None:
    cfg, out, rules = _setup(tmp_path)
    srv = reload_server()
    rel = reloader_factory(_args(cfg, out, rules, srv.url, fast_flags))
    rel.wait_reloaded(1)
    resp = requests.get(f"http://127.0.0.1:{rel.port}/healthz", timeout=5)
    assert (resp.status_code, resp.content) == (200, b'{"status":"up"}')
    names = set(rel.metrics())
    for name in ("reloader_reloads_total", "reloader_reloads_failed_total", "reloader_last_reload_successful",
                 "reloader_last_reload_success_timestamp_seconds", "reloader_config_apply_operations_total",
                 "reloader_config_apply_operations_failed_total",
                 "reloader_config_environment_variable_expansion_errors", "reloader_watches",
                 "reloader_watch_events_total", "reloader_watch_errors_total",
                 'reloader_info{method="http"}', 'prometheus_config_reloader_build_info{version="0.1.0"}'):
        assert name in names, name


def test_a_burst_of_changes_is_debounced_into_one_reload(tmp_path, reloader_factory, reload_server, fast_flags) -> None:
    cfg, out, rules = _setup(tmp_path)
    srv = reload_server()
    flags = [f for f in fast_flags if not f.startswith("--delay-interval")] + ["--delay-interval=1s"]
    rel = reloader_factory(_args(cfg, out, rules, srv.url, flags))
    rel.wait_reloaded(1)
    started = time.monotonic()
    for i in range(5):
        write_atomic(cfg, gz(f"burst: {i}\n"))
        last_write = time.time()  # taken before the write: its event can only come later
        (rules / f"r{i}.yaml").write_text("groups: []\n")
    burst = time.monotonic() - started
    rel.wait_reloaded(2)
    done = next(e for e in reversed(rel.logs) if e["msg"] == "reload triggered")
    # The pass ran once the events had been quiet for --delay-interval, not before.
    assert datetime.fromisoformat(done["ts"].replace("Z", "+00:00")).timestamp() - last_write >= 0.99
    assert out.read_text() == "burst: 4\n"
    if burst < 0.5:  # on a machine too loaded to write 10 files in 0.5 s, two passes are fair
        assert srv.posts == 2


def test_reload_timeout_fails_a_hanging_reload_and_retries(tmp_path, reloader_factory, reload_server, fast_flags) -> None:
    cfg, out, rules = _setup(tmp_path)
    srv = reload_server(hang=threading.Event())
    rel = reloader_factory(_args(cfg, out, rules, srv.url, fast_flags + ["--reload-timeout=300ms"]))
    rel.wait_metric("reloader_reloads_failed_total", lambda v: v >= 2, timeout=20)
    assert "timed out" in rel.wait_log("reload failed; will retry")["err"]
    assert rel.metric("reloader_last_reload_successful") == 0
    assert srv.posts >= 2
