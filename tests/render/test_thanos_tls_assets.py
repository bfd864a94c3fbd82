"""ThanosRuler TLS asset Secrets sharded as upstream's ShardedSecret: `thanos-ruler-<name>-tls-assets-<i>`,
keys sorted and packed first-fit under a Secret's size, every shard in the pod's projected `tls-assets`
volume, and the shard count in the input hash (only past one, so existing rulers keep their hash)."""

from __future__ import annotations

import base64

from promop.render.model import RenderOptions
from promop.render.thanos.ruler_config import tls_assets_secrets
from promop.render.thanos.ruler_render import RulerInputs, input_hash, render_ruler
from promop.render.thanos.ruler_statefulset import build_ruler_statefulset
from promop.render.tls_assets import MAX_SECRET_DATA

RULER = {"apiVersion": "monitoring.coreos.com/v1", "kind": "ThanosRuler",
         "metadata": {"name": "r", "namespace": "ns", "uid": "u"}, "spec": {"queryEndpoints": ["q"]}}


def test_no_assets_still_gives_the_first_shard():
    (secret,) = tls_assets_secrets(RULER, RenderOptions(), {})
    assert secret["metadata"]["name"] == "thanos-ruler-r-tls-assets-0" and secret["data"] == {}
    result = render_ruler(RulerInputs(ruler=RULER))
    assert result.tls_secrets == [result.tls_secret] and result.tls_secret["metadata"]["name"].endswith("-0")


def test_large_assets_spill_into_more_secrets_in_key_order():
    third = "x" * (MAX_SECRET_DATA // 3)
    assets = {f"0_ns_s{i}_ca": third for i in (3, 1, 2, 4)}
    secrets = tls_assets_secrets(RULER, RenderOptions(), assets)
    assert [s["metadata"]["name"] for s in secrets] == ["thanos-ruler-r-tls-assets-0", "thanos-ruler-r-tls-assets-1"]
    assert [sorted(s["data"]) for s in secrets] == [["0_ns_s1_ca", "0_ns_s2_ca"], ["0_ns_s3_ca", "0_ns_s4_ca"]]
    assert base64.b64decode(secrets[1]["data"]["0_ns_s4_ca"]).decode() == third
    for s in secrets:
        assert sum(len(k) + len(base64.b64decode(v)) for k, v in s["data"].items()) <= MAX_SECRET_DATA


def test_every_shard_is_projected_into_the_tls_assets_volume():
    names = ["thanos-ruler-r-tls-assets-0", "thanos-ruler-r-tls-assets-1"]
    sts = build_ruler_statefulset(RULER, RenderOptions(), [], names, "h")
    (volume,) = [v for v in sts["spec"]["template"]["spec"]["volumes"] if v["name"] == "tls-assets"]
    assert volume["projected"]["sources"] == [{"secret": {"name": n}} for n in names]


def test_shard_count_past_one_changes_the_input_hash():
    one = input_hash(RULER, RenderOptions(), [], "b")
    assert input_hash(RULER, RenderOptions(), [], "b", 1) == one
    assert input_hash(RULER, RenderOptions(), [], "b", 2) != one
