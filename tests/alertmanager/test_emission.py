"""The configuration text is written by promop.render.emit: exactly the emitter's document, byte-stable,
and safe for YAML 1.1 readers (Go's yaml.v2 in Alertmanager)."""

from __future__ import annotations

import yaml

from promop.render.alertmanager.cache import AMRenderCache
from promop.render.alertmanager.config import build_config, dump_config
from promop.render.alertmanager.secrets import web_config
from promop.render.emit import emit

from .helpers import alertmanager, amc, amtool_check, base_secret, secret, store_of
from .test_cache import objects, render


def _creds():
    return [secret("creds", f"ns{n}", url="https://hooks.example.com/1") for n in range(3)]


def test_assembled_text_is_the_emitters_document_byte_for_byte():
    """The per-object pieces concatenated equal one emit() of the whole ordered configuration."""
    for cache in (None, AMRenderCache()):
        result = render(alertmanager("v0.25.0"), objects(), _creds(), cache)
        assert result.text == dump_config(result.config)
        assert result.text.startswith("route:\n")  # no global in this base: the order is upstream's


def test_equal_inputs_give_equal_bytes():
    a = render(alertmanager("v0.25.0"), objects(), _creds(), None).text
    b = render(alertmanager("v0.25.0"), objects(), _creds(), AMRenderCache()).text
    assert a == b


def test_yaml_11_lookalikes_are_quoted_and_amtool_reads_them(tmp_path):
    """`08:00` is a sexagesimal int to a YAML 1.1 reader, `on` a bool: the emitter quotes both."""
    am = alertmanager("v0.25.0")
    obj = amc("c", "team", route={"receiver": "on", "muteTimeIntervals": ["office"]},
              receivers=[{"name": "on"}],
              muteTimeIntervals=[{"name": "office", "timeIntervals": [{"times": [{"startTime": "08:00",
                                                                                  "endTime": "17:30"}]}]}])
    docs = [am, base_secret('route:\n  receiver: "null"\nreceivers:\n- name: "null"\n')]
    result = build_config(am, [obj], [], store_of(docs))
    assert result.fatal is None and result.rejected == [], result.rejected
    assert "start_time: '08:00'" in result.text and "receiver: team/c/on" in result.text
    assert yaml.safe_load(result.text) == yaml.safe_load(dump_config(result.config))
    proc = amtool_check(result.text, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_base_value_json_has_no_type_for_still_renders():
    """An unquoted date in the user's alertmanager.yaml (PyYAML reads a datetime.date) is written back."""
    am = alertmanager("v0.25.0")
    docs = [am, base_secret("route:\n  receiver: 2024-01-01\nreceivers:\n- name: 2024-01-01\n"), *_creds()]
    result = build_config(am, objects(), [], store_of(docs))
    assert result.fatal is None and result.rejected == []
    assert result.text.startswith("route:\n  receiver: 2024-01-01\n")
    assert yaml.safe_load(result.text) == yaml.safe_load(dump_config(result.config))


def test_web_config_is_emitted():
    spec = {"web": {"httpConfig": {"http2": False, "headers": {"xFrameOptions": "deny"}}}}
    text = web_config(spec)
    assert text == emit({"http_server_config": {"http2": False, "headers": {"X-Frame-Options": "deny"}}})
    assert web_config({}) == ""
