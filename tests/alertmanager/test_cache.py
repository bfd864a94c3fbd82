"""A render with AMRenderCache equals one without, through edits, Secret changes and deletions."""

from __future__ import annotations

import copy

import yaml

from promop.render.alertmanager.cache import AMRenderCache
from promop.render.alertmanager.config import build_config, dump_config

from .helpers import SIMPLE_BASE, alertmanager, amc, base_secret, secret, store_of


def objects():
    hook = {"name": "h", "webhookConfigs": [{"url": "https://x.example/a"}]}
    slack = {"name": "s", "slackConfigs": [{"apiURL": {"name": "creds", "key": "url"}}]}
    return [amc(f"c{i}", f"ns{i % 3}", route={"receiver": "h", "routes": [{"receiver": "s", "matchers": [
        {"name": "x", "value": str(i), "matchType": "="}]}]}, receivers=[hook, slack],
        inhibitRules=[{"sourceMatch": [{"name": "a", "value": "b"}], "equal": ["c"]}]) for i in range(6)]


def render(am, objs, extra, cache):
    docs = [am, base_secret(SIMPLE_BASE + "inhibit_rules:\n- equal: [x]\n"), *extra]
    return build_config(am, objs, [], store_of(docs), cache=cache)


def same(a, b):
    assert a.text == b.text and a.config == b.config and a.rejected == b.rejected and a.assets == b.assets


def test_cached_equals_uncached_through_changes():
    am = alertmanager("v0.25.0")
    objs = objects()
    creds = [secret(f"creds", f"ns{n}", url="https://hooks.example.com/1") for n in range(3)]
    cache = AMRenderCache()
    same(render(am, objs, creds, cache), render(am, objs, creds, None))
    same(render(am, objs, creds, cache), render(am, objs, creds, None))
    assert cache.hits == 6
    objs[2] = copy.deepcopy(objs[2])
    objs[2]["spec"]["receivers"][0]["webhookConfigs"][0]["url"] = "https://x.example/changed"
    same(render(am, objs, creds, cache), render(am, objs, creds, None))
    creds[1] = secret("creds", "ns1", url="not a url")  # c1 and c4 now rejected: their read changed
    a, b = render(am, objs, creds, cache), render(am, objs, creds, None)
    same(a, b)
    assert sorted(p.name for p in a.rejected) == ["c1", "c4"]
    del objs[0]
    same(render(am, objs, creds, cache), render(am, objs, creds, None))


def test_assembled_text_is_the_whole_dump():
    am = alertmanager("v0.25.0")
    creds = [secret("creds", f"ns{n}", url="https://hooks.example.com/1") for n in range(3)]
    result = render(am, objects(), creds, AMRenderCache())
    assert yaml.safe_load(result.text) == yaml.safe_load(dump_config(result.config))


def test_references_with_the_cache_equal_without():
    from promop.render.alertmanager.model import AMRenderInputs
    from promop.render.alertmanager.pipeline import references

    am = alertmanager("v0.25.0")
    inputs = AMRenderInputs(am, objects(), [])
    cache = AMRenderCache()
    assert references(inputs, cache) == references(inputs) == references(inputs, cache)
    assert {(r.kind, r.namespace, r.name) for r in references(inputs)} == {
        ("Secret", "monitoring", "alertmanager-main"), *(("Secret", f"ns{n}", "creds") for n in range(3))}


def test_remembered_matchers_keep_their_meaning_and_invalid_ones_are_rejected_every_time():
    from promop.render.alertmanager.common import Reject, Version
    from promop.render.alertmanager.matchers import convert_matchers

    import pytest

    v = Version("v0.27.0")
    eq = [{"name": "sev", "value": "crit", "matchType": "="}]
    assert convert_matchers(eq, "m", v) == {"matchers": ['sev="crit"']}
    # same name and value, other operator / regex flag: not the remembered string
    assert convert_matchers([{**eq[0], "matchType": "!="}], "m", v) == {"matchers": ['sev!="crit"']}
    assert convert_matchers([{"name": "sev", "value": "crit", "regex": True}], "m", v) == {"matchers": ['sev=~"crit"']}
    for where in ("first", "second"):
        with pytest.raises(Reject) as exc:
            convert_matchers([eq[0], {"name": "sev", "value": "(", "matchType": "=~"}], f"{where}.matchers", v)
        assert exc.value.field == f"{where}.matchers[1].value"


def test_a_config_that_compresses_badly_gets_the_smaller_gzip():
    import gzip
    import random

    from promop.render.alertmanager.secrets import FAST_GZIP_LIMIT, compress

    rnd = random.Random(7)
    text = "".join(rnd.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(2 * FAST_GZIP_LIMIT))
    packed = compress(text)
    assert gzip.decompress(packed).decode() == text
    assert packed == gzip.compress(text.encode(), compresslevel=9, mtime=0)
    small = "route: {}\n" * 1000  # the usual case: level 1, still deterministic
    assert compress(small) == gzip.compress(small.encode(), compresslevel=1, mtime=0) == compress(small)
