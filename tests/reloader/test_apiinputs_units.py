"""reloader/apiinputs.py: what a Secret input and a ConfigMap mirror do with what the watch delivers.

A deleted rule ConfigMap shows as an optional ConfigMap volume would: an empty directory. Keys that
went away are removed; an older resourceVersion never replaces a newer one; the mounted copy does not
put back content the API has already replaced, and is not consulted while the watch is healthy.
"""
from __future__ import annotations

import base64
import logging
import os
import threading

from reloader.apiinputs import ConfigMapMirror, SecretInput, parse_specs, stage_path
from reloader.kubeapi import ObjectRef
from reloader.logs import Log

LOG = Log(logging.getLogger("test-apiinputs"), {})
CM = ObjectRef("configmaps", "monitoring", "rules-0")
SECRET = ObjectRef("secrets", "monitoring", "prometheus-main")


def configmap(rv: str, **data: str) -> dict:
    return {"metadata": {"name": CM.name, "resourceVersion": rv}, "data": data}


def secret(rv: str, **data: bytes) -> dict:
    return {"metadata": {"name": SECRET.name, "resourceVersion": rv},
            "data": {k: base64.b64encode(v).decode() for k, v in data.items()}}


def files(directory) -> dict[str, str]:
    return {p.name: p.read_text() for p in directory.iterdir() if not p.name.startswith(".")}


class Triggers:
    def __init__(self) -> None:
        self.count = 0

    def __call__(self) -> None:
        self.count += 1


def test_mirror_writes_keys_removes_gone_ones_and_empties_on_deletion(tmp_path):
    out = tmp_path / "rules"
    trigger = Triggers()
    mirror = ConfigMapMirror(CM, str(out), "", LOG, trigger)
    mirror.on_object(configmap("5", **{"a.yaml": "A", "b.yaml": "B"}))
    assert files(out) == {"a.yaml": "A", "b.yaml": "B"}
    mirror.on_object(configmap("6", **{"a.yaml": "A2"}))
    assert files(out) == {"a.yaml": "A2"}
    mirror.on_missing()
    assert files(out) == {}
    assert trigger.count == 3
    mirror.on_object(configmap("9", **{"c.yaml": "C"}))
    assert files(out) == {"c.yaml": "C"}


def test_mirror_ignores_an_older_version_and_unchanged_content(tmp_path):
    out = tmp_path / "rules"
    trigger = Triggers()
    mirror = ConfigMapMirror(CM, str(out), "", LOG, trigger)
    mirror.on_object(configmap("7", **{"a.yaml": "new"}))
    mirror.on_object(configmap("6", **{"a.yaml": "old"}))
    mirror.on_object(configmap("8", **{"a.yaml": "new"}))   # a new version, same content: no reload
    assert files(out) == {"a.yaml": "new"}
    assert trigger.count == 1


def test_mirror_keeps_api_content_over_a_lagging_mount(tmp_path):
    mounted = tmp_path / "mounted"
    mounted.mkdir()
    (mounted / "a.yaml").write_text("v1")
    out = tmp_path / "rules"
    mirror = ConfigMapMirror(CM, str(out), str(mounted), LOG, Triggers())
    mirror.on_object(configmap("1", **{"a.yaml": "v1"}))
    mirror.on_object(configmap("2", **{"a.yaml": "v2"}))
    mirror.refresh_from_mount()            # kubelet still shows v1, which the API replaced
    assert files(out) == {"a.yaml": "v2"}
    (mounted / "a.yaml").write_text("v3")  # content the API never showed: changed while unwatched
    mirror.refresh_from_mount()
    assert files(out) == {"a.yaml": "v3"}


def test_mount_is_not_consulted_while_the_watch_is_healthy(tmp_path):
    mounted = tmp_path / "mounted"
    mounted.mkdir()
    (mounted / "a.yaml").write_text("from-mount")
    out = tmp_path / "rules"
    mirror = ConfigMapMirror(CM, str(out), str(mounted), LOG, Triggers())

    class Healthy:
        connected = threading.Event()

    Healthy.connected.set()
    mirror.watch = Healthy()  # type: ignore[assignment]
    mirror.on_object(configmap("3", **{"a.yaml": "from-api"}))
    mirror.refresh_from_mount()
    assert files(out) == {"a.yaml": "from-api"}


def test_secret_input_stages_the_decoded_key(tmp_path):
    output = tmp_path / "out" / "prometheus.env.yaml"
    stage = stage_path(str(output))
    assert os.path.dirname(stage) == str(output.parent) and os.path.basename(stage).startswith(".")
    trigger = Triggers()
    inp = SecretInput(SECRET, "prometheus.yaml.gz", str(tmp_path / "mounted.gz"), stage, LOG, trigger)
    os.makedirs(output.parent)
    inp.on_object(secret("4", **{"prometheus.yaml.gz": b"\x1f\x8bdata"}))
    with open(stage, "rb") as f:
        assert f.read() == b"\x1f\x8bdata"
    inp.on_object(secret("5", other=b"x"))      # the key is missing: keep the current config
    inp.on_object(secret("3", **{"prometheus.yaml.gz": b"older"}))
    with open(stage, "rb") as f:
        assert f.read() == b"\x1f\x8bdata"
    assert trigger.count == 1


def test_parse_specs_defaults_and_refusals(tmp_path):
    secret_spec, mirrors = parse_specs("monitoring/prometheus-main", ["monitoring/rules-0=/etc/rules,mount=/m"],
                                       "/etc/prometheus/config/prometheus.yaml.gz", "/out/prometheus.env.yaml")
    assert secret_spec == (SECRET, "prometheus.yaml.gz")
    assert mirrors == [(CM, "/etc/rules", "/m")]
    for bad in (("monitoring/prometheus-main", [], "", ""), ("", ["monitoring/rules-0"], "", "/o"),
                ("", ["rules-0=/d"], "", "/o")):
        try:
            parse_specs(*bad)
        except ValueError as exc:
            assert str(exc)
        else:
            raise AssertionError(f"parse_specs{bad} accepted")


class _DownApi:
    """An apiserver that cannot be reached: every read fails as requests would."""

    def get(self, ref, timeout: float = 10.0):
        import requests

        raise requests.ConnectionError("connection refused")

    def watch(self, ref, resource_version: str, timeout_seconds: int):
        return self.get(ref)


def test_a_failed_watch_runs_a_pass_so_the_mounted_copy_is_taken(tmp_path):
    # A mounted change that came while the watch still looked healthy was refused; once the watch
    # fails, the mounted copy is the source, and a pass must run now, not at the next --watch-interval.
    from reloader.apiinputs import ApiInputs

    trigger = Triggers()
    item = SecretInput(SECRET, "prometheus.yaml.gz", str(tmp_path / "mounted"), str(tmp_path / "stage"), LOG, trigger)
    errors: list[str] = []
    inputs = ApiInputs(_DownApi(), [item], LOG, on_event=lambda kind: None, on_error=errors.append)
    inputs.start()
    try:
        pause = threading.Event()
        for _ in range(200):  # the watch thread fails at once; poll for its first failure (up to 10 s)
            if errors and trigger.count:
                break
            pause.wait(0.05)
    finally:
        inputs.close()
    assert errors and errors[0] == "secrets"
    assert trigger.count >= 1
    assert not item.api_healthy()
