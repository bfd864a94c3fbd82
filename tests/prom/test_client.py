"""promop.prom against a real Prometheus serving data it stored (backfilled by promtool).

Expectations come from the series we wrote, not from the client: a counter rising
at exactly k/s has rate k, a gauge's value at t is the last sample at or before t.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import threading
import time
import warnings
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import requests

from prom.prom_fixtures import (  # noqa: F401  (fixtures)
    PrometheusServer, counter, exporter_factory, free_port, gauge, prometheus_factory,
)
from promop.prom import PromConnectionError, PromError, PrometheusClient, RangeSeries, Sample, Scalar, String

pytestmark = pytest.mark.prometheus

# Fixed past times, on a 15s grid, well inside the default 15d retention.
T0 = (int(time.time()) // 3600 - 3) * 3600
T1 = T0 + 1800
PODS = ("web-1", "web-2", "api-1")


def _wave(t: float) -> float:
    return float(int(t - T0) // 15 % 7)  # 0..6, changes every sample


def _series():
    out = []
    for i, pod in enumerate(PODS):
        labels = {"namespace": "shop" if pod.startswith("web") else "backend", "pod": pod}
        out.append(counter("http_requests_total", labels, T0, T1, 15, first=1000.0 * i, per_second=i + 1))
        out.append(gauge("memory_bytes", labels, T0, T1, 15, 1e6 * (i + 1)))
    out.append(gauge("wave", {"job": "w"}, T0, T1, 15, _wave))
    return out


@pytest.fixture
def prom(prometheus_factory) -> PrometheusServer:  # noqa: F811
    return prometheus_factory(_series(), extra_args=["--query.max-samples=5000"])


@pytest.mark.parametrize("verb", ["GET", "POST"])
def test_instant_vector_scalar_string_matrix(prom: PrometheusServer, verb: str) -> None:
    with PrometheusClient(prom.url, verb=verb) as c:
        at = T1 - 60
        rates = c.query("sum(rate(http_requests_total[2m])) by (pod)", at)
        assert sorted((s.labels["pod"], round(s.value, 9)) for s in rates) == [
            ("api-1", 3.0), ("web-1", 1.0), ("web-2", 2.0)]
        assert all(isinstance(s, Sample) and s.timestamp == at for s in rates)

        mem = c.query('memory_bytes{namespace="shop"}', at)
        assert {s.labels["pod"]: s.value for s in mem} == {"web-1": 1e6, "web-2": 2e6}
        assert {s.name for s in mem} == {"memory_bytes"}

        assert c.query("scalar(sum(memory_bytes)) / 2", at) == Scalar(3e6, at)
        assert c.query('"hello"', at) == String("hello", at)

        window = c.query('wave[1m]', T0 + 600)
        assert isinstance(window, list) and isinstance(window[0], RangeSeries)
        # Prometheus 2.x range selectors include both ends: [t-1m, t].
        expected = [(t, _wave(t)) for t in range(T0 + 540, T0 + 601, 15)]
        assert window[0].points == expected

        assert c.query("memory_bytes", T1 + 3600) == []          # beyond the lookback: empty vector
        nan = c.query_vector("vector(0) / 0", at)
        assert len(nan) == 1 and math.isnan(nan[0].value) and nan[0].labels == {}
        assert c.query_vector("scalar(vector(7))", at) == [Sample({}, 7.0, at)]


@pytest.mark.parametrize("verb", ["GET", "POST"])
def test_range_query(prom: PrometheusServer, verb: str) -> None:
    with PrometheusClient(prom.url, verb=verb) as c:
        start, end = T0 + 100, T0 + 400
        matrix = c.query_range("wave", start, end, 30)
        assert len(matrix) == 1 and matrix[0].labels == {"__name__": "wave", "job": "w"}
        # The value at t is the last sample at or before t (samples every 15s from T0).
        expected = [(float(t), _wave(T0 + (t - T0) // 15 * 15)) for t in range(start, end + 1, 30)]
        assert matrix[0].points == expected
        assert matrix[0].values == [v for _, v in expected]

        rates = c.query_range("rate(http_requests_total[1m])", T0 + 300, T0 + 600, 60)
        assert {s.labels["pod"]: set(round(v, 9) for v in s.values) for s in rates} == {
            "web-1": {1.0}, "web-2": {2.0}, "api-1": {3.0}}
        with pytest.raises(ValueError):
            c.query_range("wave", start, end, 0)


@pytest.mark.parametrize("verb", ["GET", "POST"])
def test_range_query_columns_equal_points(prom: PrometheusServer, verb: str) -> None:
    """The lean range-query form: the same series, times and values as query_range, as float arrays."""
    with PrometheusClient(prom.url, verb=verb) as c:
        for q, start, end, step in (("wave", T0 + 100, T0 + 400, 30),
                                    ("rate(http_requests_total[1m])", T0 + 300, T0 + 600, 60),
                                    ("memory_bytes / (memory_bytes - memory_bytes)", T0, T0 + 120, 60)):
            points = c.query_range(q, start, end, step)
            columns = c.query_range_columns(q, start, end, step)
            assert len(points) == len(columns) > 0
            for p, col in zip(points, columns):
                assert col.labels == p.labels and col.times.typecode == col.values.typecode == "d"
                assert list(col.times) == [t for t, _ in p.points]
                assert [repr(v) for v in col.values] == [repr(v) for _, v in p.points]  # NaN/+Inf too
        nan_inf = c.query_range_columns("memory_bytes / (memory_bytes - memory_bytes)", T0, T0 + 60, 60)
        assert {repr(v) for s in nan_inf for v in s.values} == {"inf"}
        with pytest.raises(ValueError):
            c.query_range_columns("wave", T0, T1, 0)
        with pytest.raises(PromError) as e:
            c.query_range_columns("rate(", T0, T1, 60)
        assert e.value.status == 400 and "rate(" in str(e.value)


def test_range_query_columns_bad_answers_are_named(proxy: "FlakyProxy") -> None:
    c = PrometheusClient(proxy.url, retries=0)
    answer = {"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": {"a": "1"}, "values": [[10, "NaN"], [20, "-Inf"], [30.5, "1e3"]]},
        {"metric": {"a": "2"}, "histograms": [[10, {"count": "1"}]]}]}}
    proxy.script = [(200, json.dumps(answer).encode(), {"Content-Type": "application/json"})]
    first, hist_only = c.query_range_columns("x", T0, T1, 10)
    assert list(first.times) == [10.0, 20.0, 30.5] and [repr(v) for v in first.values] == ["nan", "-inf", "1000.0"]
    assert hist_only.labels == {"a": "2"} and len(hist_only.times) == len(hist_only.values) == 0
    for bad in ({"resultType": "vector", "result": []}, {"resultType": "matrix", "result": [{"values": [[1]]}]},
                {"resultType": "matrix", "result": [{"values": [[1, "one"]]}]}):
        proxy.script = [(200, json.dumps({"status": "success", "data": bad}).encode(), {})]
        with pytest.raises(PromError) as e:
            c.query_range_columns("some_query", T0, T1, 10)
        assert e.value.error_type == "bad_response" and "some_query" in str(e.value)


@pytest.mark.parametrize("verb", ["GET", "POST"])
def test_series_and_labels(prom: PrometheusServer, verb: str) -> None:
    with PrometheusClient(prom.url, verb=verb) as c:
        got = c.series('{__name__=~"memory_bytes|http_requests_total",namespace="shop"}', T0, T1)
        assert sorted((s["__name__"], s["pod"]) for s in got) == [
            ("http_requests_total", "web-1"), ("http_requests_total", "web-2"),
            ("memory_bytes", "web-1"), ("memory_bytes", "web-2")]
        both = c.series(["wave", 'memory_bytes{pod="api-1"}'], T0, T1)
        assert sorted(s["__name__"] for s in both) == ["memory_bytes", "wave"]
        assert json.loads(c.series_bytes("wave", T0, T1))["data"] == [{"__name__": "wave", "job": "w"}]
        # Outside the time range there are none.
        assert c.series("wave", T1 + 7200, T1 + 7300) == []

        assert c.label_values("pod", start=T0, end=T1) == sorted(PODS)
        assert c.label_values("pod", 'memory_bytes{namespace="backend"}', T0, T1) == ["api-1"]
        assert c.label_values("no_such_label", start=T0, end=T1) == []
        assert c.label_names("wave", T0, T1) == ["__name__", "job"]


def test_errors_name_the_query_and_carry_prometheus_message(prom: PrometheusServer) -> None:
    c = PrometheusClient(prom.url)
    with pytest.raises(PromError) as bad:
        c.query("sum(rate(http_requests_total[2m]) by (pod)")
    e = bad.value
    assert e.status == 400 and e.error_type == "bad_data"
    assert "parse error" in e.message
    assert "sum(rate(http_requests_total[2m]) by (pod)" in str(e) and "bad_data" in str(e)

    with pytest.raises(PromError) as exec_err:    # 422: too many samples for --query.max-samples
        c.query_range("http_requests_total", T0, T1, 1)
    assert exec_err.value.status == 422 and exec_err.value.error_type == "execution"
    assert "too many samples" in str(exec_err.value)

    with pytest.raises(PromError) as series_err:
        c.series("{}")
    assert series_err.value.error_type == "bad_data" and "series ['{}']" in str(series_err.value)

    with pytest.raises(ValueError):
        c.series([])
    with pytest.raises(ValueError, match="naive datetime"):
        from datetime import datetime
        c.query("up", datetime(2020, 1, 1))


# -- transport: a proxy in front of the real Prometheus that fails on demand ---------------


class FlakyProxy:
    """Forwards to Prometheus after `fail` scripted failures; records each request's headers."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.script: list[tuple[int, bytes, dict]] = []   # (status, body, headers) answered first
        self.requests: list[dict] = []
        self.hold = threading.Event()
        self.hold.set()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                proxy.requests.append({"path": self.path, "headers": dict(self.headers), "method": self.command})
                proxy.hold.wait(10)
                if proxy.script:
                    status, out, headers = proxy.script.pop(0)
                else:
                    r = requests.request(self.command, proxy.upstream + self.path, data=body,
                                         headers={"Content-Type": self.headers.get("Content-Type", "")})
                    status, out, headers = r.status_code, r.content, {"Content-Type": "application/json"}
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            do_GET = do_POST = _handle

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.hold.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def proxy(prom: PrometheusServer):
    p = FlakyProxy(prom.url)
    yield p
    p.close()


UNAVAILABLE = (503, b'{"status":"error","errorType":"unavailable","error":"TSDB not ready"}',
               {"Content-Type": "application/json"})


def test_retries_5xx_with_backoff_then_succeeds(proxy: FlakyProxy) -> None:
    slept: list[float] = []
    c = PrometheusClient(proxy.url, retries=3, backoff=0.1, sleep=slept.append)
    proxy.script = [UNAVAILABLE, (502, b"<html>bad gateway</html>", {})]
    got = c.query('memory_bytes{pod="web-2"}', T1)
    assert [s.value for s in got] == [2e6]
    assert len(proxy.requests) == 3
    assert len(slept) == 2 and 0.05 <= slept[0] <= 0.1 and 0.1 <= slept[1] <= 0.2   # doubled, jittered

    proxy.requests.clear()
    proxy.script = [UNAVAILABLE] * 3
    c2 = PrometheusClient(proxy.url, retries=2, backoff=0.01, sleep=slept.append)
    with pytest.raises(PromError) as e:
        c2.query("up")
    assert len(proxy.requests) == 3
    assert e.value.status == 503 and e.value.error_type == "unavailable"
    assert "TSDB not ready" in str(e.value) and "after 3 attempts" in str(e.value) and "'up'" in str(e.value)


def test_retry_after_is_honoured(proxy: FlakyProxy) -> None:
    slept: list[float] = []
    proxy.script = [(503, b"busy", {"Retry-After": "2"})]
    c = PrometheusClient(proxy.url, retries=1, backoff=0.01, max_backoff=1.5, sleep=slept.append)
    assert c.query("scalar(vector(1))", T1) == Scalar(1.0, T1)
    assert slept == [1.5]   # capped at max_backoff


def test_4xx_is_not_retried(proxy: FlakyProxy) -> None:
    c = PrometheusClient(proxy.url, retries=3, sleep=lambda s: None)
    with pytest.raises(PromError) as e:
        c.query("rate(")
    assert len(proxy.requests) == 1 and e.value.status == 400


def test_connection_refused_is_retried_and_named() -> None:
    slept: list[float] = []
    port = free_port()
    c = PrometheusClient(f"http://127.0.0.1:{port}", retries=2, backoff=0.01, sleep=slept.append)
    with pytest.raises(PromConnectionError) as e:
        c.query("up")
    assert len(slept) == 2
    assert e.value.error_type == "connection" and e.value.status == 0
    assert f"127.0.0.1:{port}" in str(e.value) and "'up'" in str(e.value)


def test_read_timeout_is_not_retried(proxy: FlakyProxy) -> None:
    proxy.hold.clear()
    c = PrometheusClient(proxy.url, timeout=0.2, retries=3, sleep=lambda s: None)
    t = time.monotonic()
    with pytest.raises(PromConnectionError) as e:
        c.query("up")
    assert time.monotonic() - t < 5
    assert e.value.error_type == "timeout" and len(proxy.requests) == 1
    proxy.hold.set()


def test_prometheus_timeout_parameter_is_sent(proxy: FlakyProxy) -> None:
    c = PrometheusClient(proxy.url, timeout=7.5)
    c.query("up", T1)
    assert "timeout=7.5" in proxy.requests[-1]["path"]


def test_bearer_token_headers_and_token_file_rotation(proxy: FlakyProxy, tmp_path: Path) -> None:
    c = PrometheusClient(proxy.url, bearer_token="abc", headers={"X-Scope-OrgID": "team-a"})
    c.query("up", T1)
    assert proxy.requests[-1]["headers"]["Authorization"] == "Bearer abc"
    assert proxy.requests[-1]["headers"]["X-Scope-OrgID"] == "team-a"

    token = tmp_path / "token"
    token.write_text("first\n")
    c2 = PrometheusClient(proxy.url, bearer_token_file=str(token))
    c2.label_values("pod")
    assert proxy.requests[-1]["headers"]["Authorization"] == "Bearer first"
    token.write_text("second-token")
    import os
    os.utime(token, ns=(time.time_ns() + 10**9, time.time_ns() + 10**9))
    c2.series("wave", T0, T1)
    assert proxy.requests[-1]["headers"]["Authorization"] == "Bearer second-token"

    with pytest.raises(ValueError):
        PrometheusClient(proxy.url, bearer_token="a", basic_auth=("u", "p"))
    with pytest.raises(ValueError):
        PrometheusClient(proxy.url, verb="PUT")


# -- TLS and basic auth against Prometheus' own web config ----------------------------


@pytest.fixture
def tls_prom(tmp_path: Path):
    openssl = shutil.which("openssl")
    if not openssl:
        pytest.skip("openssl not found")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        crypt = pytest.importorskip("crypt")
    key, crt = tmp_path / "tls.key", tmp_path / "tls.crt"
    subprocess.run([openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-keyout", str(key), "-out", str(crt), "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"], check=True, capture_output=True)
    hashed = crypt.crypt("s3cret", crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=16))
    web = tmp_path / "web.yml"
    web.write_text(f"tls_server_config:\n  cert_file: {crt}\n  key_file: {key}\n"
                   f"basic_auth_users:\n  alice: '{hashed}'\n")
    return _start_tls(web), crt


def _start_tls(web: Path) -> PrometheusServer:
    # The factory's readiness probe speaks plain HTTP; start by hand and probe over TLS.
    server = PrometheusServer(web.parent, extra_args=[f"--web.config.file={web}"])
    server._ready = lambda: _tls_ready(server)   # type: ignore[method-assign]
    server.start()
    server.url = server.url.replace("http://", "https://")
    return server


def _tls_ready(server: PrometheusServer) -> bool:
    if server.proc is not None and server.proc.poll() is not None:
        raise AssertionError(server.log.read_text()[-2000:])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            requests.get(f"https://127.0.0.1:{server.port}/-/ready", timeout=1, verify=False)
        return True
    except requests.RequestException:
        return False


def test_tls_and_basic_auth(tls_prom) -> None:
    server, crt = tls_prom
    try:
        ok = PrometheusClient(server.url, ca_file=str(crt), basic_auth=("alice", "s3cret"))
        assert ok.query("scalar(vector(3))").value == 3.0
        with pytest.raises(PromError) as denied:
            PrometheusClient(server.url, ca_file=str(crt), basic_auth=("alice", "wrong")).query("up")
        assert denied.value.status == 401
        with pytest.raises(PromConnectionError) as untrusted:
            PrometheusClient(server.url, basic_auth=("alice", "s3cret")).query("up")
        assert "certificate" in str(untrusted.value).lower() and untrusted.value.error_type == "tls"
        insecure = PrometheusClient(server.url, insecure_skip_verify=True, basic_auth=("alice", "s3cret"))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert insecure.label_names() is not None
    finally:
        server.stop()


# -- the scrape fixture ---------------------------------------------------------------


def test_scraped_exporter_values(prometheus_factory, exporter_factory) -> None:  # noqa: F811
    e = exporter_factory()
    e.set("queue_depth", {"namespace": "ns1", "pod": "worker-0"}, 17)
    e.set("queue_depth", {"namespace": "ns1", "pod": "worker-1"}, 4.5)
    server = prometheus_factory(exporter=e, interval="100ms", scrapes=3)
    c = PrometheusClient(server.url)
    from prom.prom_fixtures import wait_for
    # polled, not read once: a scrape that timed out (100 ms) on a loaded machine marks the series
    # stale until the next one succeeds
    wait_for(lambda: {s.labels["pod"]: s.value for s in c.query_vector("queue_depth")} ==
             {"worker-0": 17.0, "worker-1": 4.5}, 10, "the exported values")
    e.set("queue_depth", {"namespace": "ns1", "pod": "worker-1"}, 9)
    wait_for(lambda: [s.value for s in c.query_vector('queue_depth{pod="worker-1"}')] == [9.0], 10, "the new value")


def test_iter_series_streams_the_same_label_sets(prom: PrometheusServer) -> None:
    c = PrometheusClient(prom.url)
    whole = c.series('{__name__=~".+"}', T0, T1)
    batches = list(c.iter_series('{__name__=~".+"}', T0, T1, batch_bytes=64))
    assert len(batches) > 1
    assert [s for b in batches for s in b] == whole and len(whole) == 7
    with pytest.raises(PromError) as e:
        list(c.iter_series("{}"))
    assert e.value.error_type == "bad_data"


def test_prometheus_auth_config_kubeconfig_format(tls_prom, tmp_path: Path) -> None:
    """upstream's --prometheus-auth-config: a kubeconfig-format file gives CA and credentials."""
    import base64

    from promop.adapter.promauth import AuthConfigError, options_from_kubeconfig

    server, crt = tls_prom
    try:
        cfg = tmp_path / "prom-auth.yaml"
        cfg.write_text(yaml_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "prom",
            "contexts": [{"name": "prom", "context": {"cluster": "c", "user": "u"}}],
            "clusters": [{"name": "c", "cluster": {"server": server.url,
                          "certificate-authority-data": base64.b64encode(Path(crt).read_bytes()).decode()}}],
            "users": [{"name": "u", "user": {"username": "alice", "password": "s3cret"}}]}))
        kw = options_from_kubeconfig(str(cfg))
        assert kw["basic_auth"] == ("alice", "s3cret") and Path(kw["ca_file"]).read_bytes() == Path(crt).read_bytes()
        assert PrometheusClient(server.url, **kw).query("scalar(vector(5))").value == 5.0
        with pytest.raises(AuthConfigError, match="no context named 'nope'"):
            cfg.write_text(yaml_dump({"current-context": "nope", "contexts": [{"name": "x", "context": {}}]}))
            options_from_kubeconfig(str(cfg))
    finally:
        server.stop()


def yaml_dump(doc: dict) -> str:
    import yaml

    return yaml.safe_dump(doc)


def test_decode_range_body_equals_the_ordinary_decode() -> None:
    """The text-level cut of each series' points gives what orjson plus decode_matrix_columns gives, for
    compact answers (Prometheus' own) and spaced ones (the ordinary path), with the awkward cases."""
    import orjson

    from promop.prom.results import decode_matrix_columns, decode_range_body

    result = [
        {"metric": {"__name__": "a", "values": "x"}, "values": [[1.5, "NaN"], [2, "+Inf"], [3, "-Inf"], [4, "1e-05"]]},
        {"metric": {"tricky": 'say "values":[[1,"2"]] twice \\ "values":['}, "values": [[10, "0.25"]]},
        {"metric": {}, "values": []},
        {"metric": {"h": "1"}, "histograms": [[10, {"count": "1", "sum": "2"}]]},
        {"metric": {"b": "2"}, "values": [[1767225600.123, "123456789"], [1767229200, "0"]]},
    ]
    doc = {"status": "success", "data": {"resultType": "matrix", "result": result}, "warnings": ["w"]}
    for body in (json.dumps(doc, separators=(",", ":")).encode(), json.dumps(doc).encode(), orjson.dumps(doc)):
        want = decode_matrix_columns(orjson.loads(body)["data"])
        rest, got = decode_range_body(body)
        assert rest["status"] == "success" and rest["warnings"] == ["w"]
        assert [(s.labels, list(s.times), [repr(v) for v in s.values]) for s in got] == \
            [(s.labels, list(s.times), [repr(v) for v in s.values]) for s in want]
        assert all(s.times.typecode == s.values.typecode == "d" for s in got)
    for bad in (b'{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"x"]]}]}}',
                b'{"status":"success","data":{"resultType":"vector","result":[]}}'):
        with pytest.raises(ValueError):
            decode_range_body(bad)
