"""The config Secret's prometheus.yaml.gz as gzip members per piece (issue 32).

A large config is gzipped piece by piece (head, runs of monitors' jobs, tail) so that an edit
recompresses one member. Whatever the members, gunzipping the Secret gives the plain config byte
for byte (Python's gzip module and the reloader's reader), a small config is exactly what
gzip.compress gives, and reused members are exactly what compressing again would give.
"""

from __future__ import annotations

import base64
import gzip
import io
import zlib

from promop.render import RenderCache, render
from promop.render.config import CONFIG_KEY, MEMBER_GROUPS, SINGLE_MEMBER_CHARS, assemble, compress, pieces, text_of
from promop.render.model import RenderInputs
from reloader.source import decoded_chunks


def _sm(i: int, path: str = "/metrics", rv: str = "1") -> dict:
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
            "metadata": {"name": f"sm-{i}", "namespace": f"ns-{i % 7}", "uid": f"u{i}", "resourceVersion": rv,
                         "labels": {"team": "a"}},
            "spec": {"selector": {"matchLabels": {"app": f"app-{i}"}},
                     "endpoints": [{"port": "web", "interval": "30s", "path": path}]}}


def _inputs(sms: list[dict]) -> RenderInputs:
    prom = {"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus",
            "metadata": {"name": "p", "namespace": "mon", "uid": "p", "resourceVersion": "1"},
            "spec": {"serviceMonitorSelector": {}, "serviceMonitorNamespaceSelector": {},
                     "remoteWrite": [{"url": "http://rw.example/api/v1/write"}]}}
    return RenderInputs(prometheus=prom, service_monitors=sms)


def _members(gz: bytes) -> int:
    """How many gzip members follow each other in `gz`."""
    count = 0
    while gz:
        d = zlib.decompressobj(31)
        d.decompress(gz)
        count += 1
        gz = d.unused_data
    return count


def _secret_gz(result) -> bytes:
    return base64.b64decode(result.config_secret["data"][CONFIG_KEY])


def test_a_large_config_is_several_members_that_gunzip_to_the_config_text():
    sms = [_sm(i) for i in range(1500)]
    result = render(_inputs(sms))
    gz = _secret_gz(result)
    assert len(result.config_text) > SINGLE_MEMBER_CHARS
    assert _members(gz) > 1500 // MEMBER_GROUPS // 3  # cut into many members, not one
    assert gzip.decompress(gz).decode() == result.config_text
    # the reloader reads the Secret's file as one stream
    assert b"".join(decoded_chunks(io.BytesIO(gz), "prometheus.yaml.gz")).decode() == result.config_text


def test_a_small_config_is_one_member_as_before():
    result = render(_inputs([_sm(i) for i in range(3)]))
    assert _secret_gz(result) == compress(result.config_text)
    assert _members(_secret_gz(result)) == 1


def test_pieces_join_to_the_assembled_text():
    head = {"global": {"scrape_interval": "30s"}}
    tail = {"remote_write": [{"url": "http://x"}]}
    groups = [(f"ServiceMonitor/ns/sm-{i}", [f"- job_name: j{i}a\n", f"- job_name: j{i}b\n"]) for i in range(300)]
    texts = [t for _, g in groups for t in g]
    for h, g, t, flat in ((head, groups, tail, texts), ({}, [], {}, []), (head, [("x", [])], {}, [])):
        got = pieces(h, g, t)
        assert text_of(got) == assemble(h, flat, t)
    assert len(pieces(head, groups, tail)) > 3


def test_an_edit_recompresses_one_member_and_gives_the_same_bytes_as_an_uncached_render():
    sms = [_sm(i) for i in range(1500)]
    cache = RenderCache()
    first = render(_inputs(sms), cache)
    members_before = dict(cache._members)
    sms[700] = _sm(700, path="/edited", rv="2")
    cached = render(_inputs(sms), cache)
    uncached = render(_inputs(sms))
    assert _secret_gz(cached) == _secret_gz(uncached)
    assert gzip.decompress(_secret_gz(cached)).decode() == cached.config_text != first.config_text
    assert "/edited" in cached.config_text
    new = [p for p in cache._members if p not in members_before]
    assert len(new) == 1 and any("/edited" in s for s in new[0])
    # a deletion and an addition: still byte-equal to an uncached render
    del sms[3]
    sms.append(_sm(5000))
    assert _secret_gz(render(_inputs(sms), cache)) == _secret_gz(render(_inputs(sms)))
