"""Unit tests of the reloader's pure parts: durations, envsubst, input, output, hashing, flags."""
from __future__ import annotations

import gzip
import os
import re
import stat

import pytest
import requests
from hypothesis import given, settings
from hypothesis import strategies as st

from reloader import server, source
from reloader.atomic import OutputError, write_atomically
from gotime.duration import parse_seconds as parse_duration
from reloader.envsubst import ORDINAL_VAR, Expansion, environment, expand, expand_chunks, ordinal_from
from reloader.flags import parse
from reloader.hashing import dirs_digest
from reloader.metrics import create
from reloader.process import find_pids
from reloader.source import InputError, decoded_chunks
from reloader_testlib import KubeletDir
from reloader_fixtures import reload_server  # noqa: F401 (pytest fixtures)


@pytest.mark.parametrize(
    "text,seconds",
    [("0", 0.0), ("3m", 180.0), ("1s", 1.0), ("500ms", 0.5), ("1m30s", 90.0), ("1h", 3600.0),
     ("1.5s", 1.5), ("250us", 0.00025), ("2h45m", 9900.0)],
)
def test_durations_parse_like_go(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "3", "1x", "m", "1s2", "s1"])
def test_bad_durations_are_rejected(text: str) -> None:
    with pytest.raises(ValueError, match="^time: (invalid|missing unit in|unknown unit .* in) duration"):
        parse_duration(text)


ENV = {b"POD_NAME": b"prometheus-k8s-12", b"SHARD": b"3", b"EMPTY": b""}


def test_envsubst_expands_and_leaves_unset_literally() -> None:
    out, result = expand(b"a $(POD_NAME) b $(SHARD) $(NOPE) $(NOPE) $(EMPTY). $POD_NAME $( x) $()", ENV)
    assert out == b"a prometheus-k8s-12 b 3 $(NOPE) $(NOPE) . $POD_NAME $( x) $()"
    assert result.missing == {"NOPE": 2}
    assert result.error_count == 2


@pytest.mark.parametrize("pod,ordinal", [("prometheus-k8s-12", "12"), ("web-0", "0"), ("web", None), ("web-x", None), (None, None)])
def test_ordinal_is_trailing_number(pod: str | None, ordinal: str | None) -> None:
    assert ordinal_from(pod) == ordinal


def test_environment_derives_ordinal_from_named_var() -> None:
    env = environment("MY_POD", {b"MY_POD": b"prom-main-4"})
    assert env[ORDINAL_VAR.encode()] == b"4"
    assert ORDINAL_VAR.encode() not in environment("POD_NAME", {b"MY_POD": b"prom-main-4"})


_ALPHABET = st.sampled_from([b"$", b"(", b")", b"POD_NAME", b"SHARD", b"NOPE", b"x", b" ", b"\n", "é".encode()])


@settings(max_examples=200, deadline=None)
@given(parts=st.lists(_ALPHABET, max_size=40), cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=6))
def test_streamed_envsubst_equals_whole_buffer(parts: list[bytes], cuts: list[int]) -> None:
    data = b"".join(parts)
    bounds = sorted({min(c, len(data)) for c in cuts} | {0, len(data)})
    chunks = [data[a:b] for a, b in zip(bounds, bounds[1:])]
    streamed = Expansion()
    got = b"".join(expand_chunks(chunks, ENV, streamed))
    whole, result = expand(data, ENV)
    assert got == whole
    assert streamed.missing == result.missing
    expected = re.sub(rb"\$\(([a-zA-Z_0-9]+)\)", lambda m: ENV.get(m.group(1), m.group(0)), data)
    assert got == expected


def _decode(path) -> bytes:
    with open(path, "rb") as f:
        return b"".join(decoded_chunks(f, str(path)))


def test_plain_input_passes_through(tmp_path) -> None:
    p = tmp_path / "c.yaml"
    p.write_bytes(b"global: {}\n")
    assert _decode(p) == b"global: {}\n"


def test_gzip_input_is_decompressed(tmp_path) -> None:
    p = tmp_path / "c.yaml.gz"
    p.write_bytes(gzip.compress("héllo $(POD_NAME)\n".encode()))
    assert _decode(p) == "héllo $(POD_NAME)\n".encode()


def test_corrupt_gzip_is_a_clear_error(tmp_path) -> None:
    p = tmp_path / "c.yaml.gz"
    good = gzip.compress(b"scrape_configs: []\n" * 100)
    p.write_bytes(good[:10] + b"garbage" * 5 + good[-8:])
    with pytest.raises(InputError, match=r"c\.yaml\.gz starts with the gzip magic bytes but cannot be decompressed"):
        _decode(p)


def test_truncated_gzip_is_a_clear_error(tmp_path) -> None:
    p = tmp_path / "c.yaml.gz"
    p.write_bytes(gzip.compress(b"x" * 10000)[:-12])
    with pytest.raises(InputError, match="cannot be decompressed"):
        _decode(p)


def test_invalid_utf8_names_the_offset(tmp_path) -> None:
    p = tmp_path / "c.yaml"
    p.write_bytes(b"abc\xff\xfe")
    with pytest.raises(InputError, match=r"not valid UTF-8 .* near byte 3"):
        _decode(p)


def test_utf8_character_split_across_chunks_is_fine(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(source, "CHUNK_SIZE", 3)
    p = tmp_path / "c.yaml"
    text = "aé€😀b" * 5
    p.write_bytes(text.encode())
    assert _decode(p) == text.encode()
    p.write_bytes("a€".encode()[:-1])  # ends in the middle of a 3-byte character
    with pytest.raises(InputError, match="not valid UTF-8"):
        _decode(p)


def test_atomic_write_sets_mode_0644_regardless_of_umask(tmp_path) -> None:
    out = tmp_path / "out.yaml"
    old = os.umask(0o077)
    try:
        assert write_atomically(str(out), [b"a", b"b"]) == 2
    finally:
        os.umask(old)
    assert out.read_bytes() == b"ab"
    assert stat.S_IMODE(out.stat().st_mode) == 0o644


def test_failed_stream_keeps_previous_output_and_no_temp_files(tmp_path) -> None:
    out = tmp_path / "out.yaml"
    out.write_bytes(b"good")

    def broken():
        yield b"partial"
        raise InputError("bad input")

    with pytest.raises(InputError):
        write_atomically(str(out), broken())
    assert out.read_bytes() == b"good"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.yaml"]


def test_unwritable_output_dir_is_an_output_error(tmp_path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    with pytest.raises(OutputError, match="cannot create a temporary file in .*not-a-dir"):
        write_atomically(str(blocker / "out.yaml"), [b"x"])


def test_dir_hash_sees_content_and_ignores_identical_kubelet_swaps(tmp_path) -> None:
    rules = KubeletDir(tmp_path / "rules")
    rules.publish({"a.yaml": "groups: []\n"})
    first = dirs_digest([str(rules.root)])
    rules.publish({"a.yaml": "groups: []\n"})
    assert dirs_digest([str(rules.root)]) == first
    rules.publish({"a.yaml": "groups: [x]\n"})
    assert dirs_digest([str(rules.root)]) != first


def test_dir_hash_covers_names_nesting_and_skips_dangling(tmp_path) -> None:
    d = tmp_path / "d"
    (d / "sub").mkdir(parents=True)
    (d / "sub" / "x").write_text("1")
    base = dirs_digest([str(d)])
    os.symlink(d / "missing", d / "dangling")
    assert dirs_digest([str(d)]) == base
    os.rename(d / "sub" / "x", d / "sub" / "y")
    assert dirs_digest([str(d)]) != base
    assert dirs_digest([str(tmp_path / "absent")]) == dirs_digest([])


def test_flag_defaults_match_upstream() -> None:
    opts = parse([])
    assert (opts.watch_interval, opts.delay_interval, opts.retry_interval, opts.reload_timeout) == (180, 1, 5, 30)
    assert opts.reload_url == "http://127.0.0.1:9090/-/reload"
    assert opts.runtimeinfo_url == "http://127.0.0.1:9090/api/v1/status/runtimeinfo"
    assert (opts.reload_method, opts.process_executable_name) == ("http", "prometheus")
    assert opts.statefulset_ordinal_from_envvar == "POD_NAME"
    assert opts.listen_address == "" and not opts.init_mode


def test_operator_flags_parse() -> None:
    opts = parse([
        "--listen-address=:8080", "--reload-url=http://localhost:9090/-/reload",
        "--config-file=/etc/prometheus/config/prometheus.yaml.gz",
        "--config-envsubst-file=/etc/prometheus/config_out/prometheus.env.yaml",
        "--watched-dir=/etc/prometheus/rules/a", "--watched-dir", "/etc/prometheus/config",
        "--watch-interval=0", "--delay-interval=500ms", "--web-config-file=/w.yaml", "--auto-gomemlimit-ratio=0.9",
    ])
    assert opts.watched_dirs == ["/etc/prometheus/rules/a", "/etc/prometheus/config"]
    assert opts.init_mode and opts.delay_interval == 0.5
    assert server.split_address(opts.listen_address) == ("", 8080)
    assert server.split_address("[::1]:9") == ("::1", 9)


def test_bad_flag_value_is_a_usage_error(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        parse(["--watch-interval=3 minutes"])
    assert exc.value.code == 2
    assert '--watch-interval: time: unknown unit " minutes" in duration "3 minutes"' in capsys.readouterr().err


def test_find_pids_matches_comm_truncated_to_15(tmp_path) -> None:
    for pid, comm in [(10, "prometheus"), (11, "prometheus-confi"[:15]), (12, "bash"), (13, "prometheus")]:
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "comm").write_text(comm + "\n")
    (tmp_path / "self").mkdir()
    assert find_pids("prometheus", proc=str(tmp_path)) == [10, 13]
    assert find_pids("prometheus-config-reloader", proc=str(tmp_path)) == [11]


@pytest.mark.parametrize("address,probe", [("127.0.0.1:0", "127.0.0.1"), (":0", "127.0.0.1")])
def test_server_serves_metrics_and_health(address: str, probe: str) -> None:
    m = create("http")
    m.reloads.inc()
    srv = server.start(address, m.registry)
    try:
        base = f"http://{probe}:{server.bound_port(srv)}"
        health = requests.get(f"{base}/healthz", timeout=5)
        assert (health.status_code, health.json()) == (200, {"status": "up"})
        text = requests.get(f"{base}/metrics", timeout=5).text
        assert "reloader_reloads_total 1.0" in text
        assert 'reloader_info{method="http"} 1.0' in text
        assert requests.get(f"{base}/nope", timeout=5).status_code == 404
    finally:
        srv.shutdown()
        srv.server_close()


def test_http_call_errors_are_clear_and_redact_passwords() -> None:
    from reloader.httpcall import HttpCallError, call, redacted

    with pytest.raises(HttpCallError, match="invalid URL"):
        call("POST", "localhost:9090/-/reload", 1)
    assert redacted("http://u:secret@h:1/-/reload") == "http://u:***@h:1/-/reload"
    assert redacted("http://h:1/x") == "http://h:1/x"
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(HttpCallError) as exc:
        call("POST", f"http://u:secret@127.0.0.1:{port}/-/reload", 1)
    message = str(exc.value)
    assert "secret" not in message and "u:***@" in message
    assert "refused" in message.lower()


def test_http_reloader_treats_non_200_as_failure(reload_server) -> None:
    import threading

    from reloader.reloaders import HttpReloader, ReloadError

    srv = reload_server(status=503)
    with pytest.raises(ReloadError, match="returned 503: failed to reload config: simulated"):
        HttpReloader(srv.url, 5)(threading.Event())
    srv.status = 200
    HttpReloader(srv.url, 5)(threading.Event())
    assert srv.posts == 2


def test_input_read_errors_become_input_errors(tmp_path) -> None:
    from reloader.render import render

    class Broken:
        def read(self, n: int = -1) -> bytes:
            raise OSError(5, "Input/output error")

        def seek(self, n: int) -> None:
            return None

    out = tmp_path / "out.yaml"
    out.write_text("old")
    with pytest.raises(InputError, match="cannot read config file /x: Input/output error"):
        render(Broken(), "/x", str(out), {})  # type: ignore[arg-type]
    assert out.read_text() == "old"


@pytest.mark.parametrize(
    "pids,message",
    [([], "no process named 'prom' found; the signal method needs a shared process namespace"),
     ([7, 9], r"2 processes named 'prom' found \(pids \[7, 9\]\); refusing to guess")],
)
def test_signal_reloader_needs_exactly_one_process(pids: list[int], message: str) -> None:
    import threading

    from reloader.reloaders import ReloadError, SignalReloader

    reloader = SignalReloader("prom", "http://127.0.0.1:1/api/v1/status/runtimeinfo", 1, find=lambda name: pids)
    with pytest.raises(ReloadError, match=message):
        reloader(threading.Event())


def test_logfmt_and_json_lines() -> None:
    import io
    import json

    from reloader import logs

    buf = io.StringIO()
    log = logs.setup("logfmt", "info", stream=buf)
    log.info("config written", path="/a b", n=3, quote='say "hi"', empty="")
    log.debug("hidden")
    line = buf.getvalue().strip()
    assert line.startswith("ts=") and line.endswith('msg="config written" path="/a b" n=3 quote="say \\"hi\\"" empty=""')
    buf = io.StringIO()
    log = logs.setup("json", "debug", stream=buf)
    log.warning("w", var="X")
    entry = json.loads(buf.getvalue())
    assert (entry["level"], entry["msg"], entry["var"]) == ("warn", "w", "X")


def test_stale_temp_files_are_removed(tmp_path) -> None:
    from reloader.atomic import remove_stale_temps

    out = tmp_path / "prometheus.env.yaml"
    (tmp_path / ".prometheus.env.yaml.abc123.tmp").write_text("half")
    (tmp_path / ".other.yaml.abc123.tmp").write_text("not ours")
    (tmp_path / "prometheus.env.yaml").write_text("good")
    assert remove_stale_temps(str(out)) == [".prometheus.env.yaml.abc123.tmp"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [".other.yaml.abc123.tmp", "prometheus.env.yaml"]


@pytest.mark.parametrize("portable", [False, True], ids=["inotify-thread", "watchdog-observer"])
def test_watcher_sees_writes_and_rewatches_a_recreated_dir(tmp_path, portable: bool) -> None:
    import threading

    from reloader.logs import setup
    from reloader.watcher import Watcher
    from reloader_testlib import wait_for

    d = tmp_path / "rules"
    d.mkdir()
    hits: list[int] = []
    woke = threading.Event()

    def notify() -> None:
        hits.append(1)
        woke.set()

    watcher = Watcher([str(d)], notify, create("http"), setup("json", "error"),
                      ignore=lambda p: p.endswith(".ignored"), portable=portable)
    watcher.start()
    try:
        wait_for(lambda: hits, what="the notification for the new watch")
        assert watcher.metrics.watches._value.get() == 1
        before = len(hits)
        (d / "x.ignored").write_text("ours")
        (d / "a.yaml").write_text("groups: []\n")
        wait_for(lambda: len(hits) > before, what="an event for a.yaml")
        events = watcher.metrics.watch_events._value.get()
        assert events >= 1
        # The directory goes away and comes back (new inode): it is watched again.
        (d / "a.yaml").unlink()
        (d / "x.ignored").unlink()
        d.rmdir()
        watcher.ensure()
        assert str(d) in watcher.failing
        d.mkdir()
        watcher.ensure()
        assert not watcher.failing and watcher.metrics.watches._value.get() == 1
        before = len(hits)
        (d / "b.yaml").write_text("groups: []\n")
        wait_for(lambda: len(hits) > before, what="an event in the re-created directory")
    finally:
        watcher.stop()


def test_precomputed_render_and_hash_are_used_only_if_no_event_came_since(tmp_path) -> None:
    import threading

    from reloader.apply import Applier
    from reloader.logs import setup

    cfg, out, rules = tmp_path / "in.yaml", tmp_path / "out" / "out.yaml", tmp_path / "rules"
    out.parent.mkdir()
    rules.mkdir()
    cfg.write_text("v: 1\n")
    opts = parse([f"--config-file={cfg}", f"--config-envsubst-file={out}", f"--watched-dir={rules}"])
    reloads: list[str] = []
    applier = Applier(opts, lambda stop: reloads.append(out.read_text()), create("http"), setup("json", "error"))
    stop = threading.Event()
    applier.apply(stop)
    assert reloads == ["v: 1\n"]

    cfg.write_text("v: 2\n")
    applier.precompute(seq=7)  # during the delay: renders v: 2 and hashes it
    assert out.read_text() == "v: 2\n"
    (rules / "r.yaml").write_text("groups: []\n")  # a later change (event number 8)
    applier.apply(stop, seq=8)
    assert len(reloads) == 2
    applier.apply(stop, seq=None)  # a full check: the rule file was already covered at 8
    assert len(reloads) == 2

    cfg.write_text("v: 3\n")
    applier.precompute(seq=9)
    applier.apply(stop, seq=9)  # nothing since: the precomputed state is used as is
    assert reloads[-1] == "v: 3\n" and len(reloads) == 3
    # With a stale precomputed hash (no rule file) against event 8, using it would reload again.
    (rules / "r.yaml").unlink()
    applier.precompute(seq=10)
    (rules / "r.yaml").write_text("groups: []\n")
    applier.apply(stop, seq=11)
    assert len(reloads) == 3  # fresh hash: same state as reloaded at 9


@pytest.mark.parametrize("strategy", ["HTTP", "ProcessSignal"])
def test_the_operators_statefulset_args_are_reloader_flags(strategy: str) -> None:
    """What the operator renders must parse with our flags and mean what the pod needs."""
    from promop.render.model import RenderOptions
    from promop.render.statefulset import build_statefulsets

    prom = {"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus",
            "metadata": {"name": "k8s", "namespace": "mon", "uid": "u1"},
            "spec": {"reloadStrategy": strategy}}
    pod = build_statefulsets(prom, RenderOptions(), ["prometheus-k8s-rulefiles-0"], [], "h")[0]["spec"]["template"]["spec"]
    by_name = {c["name"]: c for c in pod["containers"] + pod.get("initContainers", [])}
    side = parse(by_name["config-reloader"]["args"])
    init = parse(by_name["init-config-reloader"]["args"])
    assert init.init_mode and not side.init_mode
    assert side.config_file == init.config_file and side.config_envsubst_file == init.config_envsubst_file
    assert "/etc/prometheus/config" in side.watched_dirs
    assert any(d.startswith("/etc/prometheus/rules/") for d in side.watched_dirs)
    assert side.reload_method == ("signal" if strategy == "ProcessSignal" else "http")
    assert side.listen_address
