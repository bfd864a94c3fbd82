"""The config split past one Secret (promop.render.split): pure render tests at 3,000 ServiceMonitors."""

from __future__ import annotations

import base64
import gzip
import hashlib

import pytest
import yaml

from promop.render import split
from promop.render.config import compress
from promop.render.model import RenderInputs, RenderOptions
from promop.render.pipeline import render
from tests.render.helpers import prometheus_obj, run_promtool, service_monitor, without_kubernetes_sd

MONITORS = 3000
LIMIT = split.DEFAULT_MAX_BYTES


def long_monitor(i: int, salt: str = "") -> dict:
    """A ServiceMonitor with a dozen relabelings whose regexes barely compress (sha256 hex)."""
    relabelings = [{"sourceLabels": [f"__meta_kubernetes_pod_label_l{k}"], "targetLabel": f"t{k}", "action": "replace",
                    "regex": hashlib.sha256(f"{i}-{k}{salt}".encode()).hexdigest()} for k in range(12)]
    return service_monitor(f"sm-{i:04d}", namespace=f"ns-{i % 40}",
                           endpoints=[{"port": "web", "relabelings": relabelings}])


def part_data(result) -> dict[str, bytes]:
    """Part Secret name -> its gzipped data (each has exactly one key)."""
    out = {}
    for s in result.config_parts:
        (value,) = s["data"].values()
        out[s["metadata"]["name"]] = base64.b64decode(value)
    return out


# libyaml's loader when PyYAML has it: the parts hold megabytes of YAML, which the pure-Python loader reads in
# tens of seconds (the same documents either way: both are PyYAML's safe constructor).
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def jobs_of(gz: bytes) -> list[dict]:
    return yaml.load(gzip.decompress(gz), Loader=_LOADER)["scrape_configs"] or []


@pytest.fixture(scope="module")
def big():
    """Rendered once for the module: 3,000 monitors, 2.45 (has scrape_config_files), default limit."""
    monitors = [long_monitor(i) for i in range(MONITORS)]
    result = render(RenderInputs(prometheus_obj(version="v2.45.0"), service_monitors=monitors))
    return monitors, result


def test_every_secret_is_under_the_limit(big):
    _, result = big
    assert len(result.config_parts) >= 2
    for name, gz in part_data(result).items():
        assert len(gz) <= LIMIT, name
    main = base64.b64decode(result.config_secret["data"]["prometheus.yaml.gz"])
    assert len(main) <= LIMIT
    # the jobs really were over the limit: otherwise nothing here tests the split
    assert sum(len(g) for g in part_data(result).values()) > LIMIT


def test_union_of_parts_is_the_unsplit_config(big):
    _, result = big
    from_parts = [j for gz in part_data(result).values() for j in jobs_of(gz)]
    names = [j["job_name"] for j in from_parts]
    assert len(names) == len(set(names)) == MONITORS
    unsplit = result.config["scrape_configs"]
    assert sorted(from_parts, key=lambda j: j["job_name"]) == sorted(unsplit, key=lambda j: j["job_name"])


def test_main_config_loads_the_parts_and_keeps_the_rest(big):
    _, result = big
    main = yaml.safe_load(gzip.decompress(base64.b64decode(result.config_secret["data"]["prometheus.yaml.gz"])))
    assert main["scrape_config_files"] == [f"{split.PARTS_OUT}/*.yaml"]
    assert "scrape_configs" not in main
    assert main["global"] == result.config["global"]
    assert main["rule_files"] == result.config["rule_files"]
    assert yaml.safe_load(result.config_text) == main


def test_statefulset_mounts_the_parts_into_the_reloaders(big):
    _, result = big
    pod = result.statefulsets[0]["spec"]["template"]["spec"]
    (volume,) = [v for v in pod["volumes"] if v["name"] == split.VOLUME]
    assert [s["secret"]["name"] for s in volume["projected"]["sources"]] == list(part_data(result))
    containers = {c["name"]: c for c in pod["containers"] + pod.get("initContainers", [])}
    for name in split.RELOADER_CONTAINERS:
        c = containers[name]
        assert {"mountPath": split.PARTS_MOUNT, "name": split.VOLUME, "readOnly": True} in c["volumeMounts"]
        assert f"--config-parts-dir={split.PARTS_MOUNT}" in c["args"]
        assert f"--config-parts-out-dir={split.PARTS_OUT}" in c["args"]
    assert not any(m["name"] == split.VOLUME for m in containers["prometheus"]["volumeMounts"])


def test_an_edit_of_one_monitor_rewrites_exactly_one_part(big):
    monitors, result = big
    before = part_data(result)
    edited = list(monitors)
    edited[1234] = long_monitor(1234, salt="edited")
    again = render(RenderInputs(prometheus_obj(version="v2.45.0"), service_monitors=edited,
                                config_parts=len(before)))
    after = part_data(again)
    assert after.keys() == before.keys()
    changed = [n for n in before if before[n] != after[n]]
    assert len(changed) == 1
    assert "serviceMonitor/ns-34/sm-1234/0" in [j["job_name"] for j in jobs_of(after[changed[0]])]


def test_a_prometheus_older_than_2_43_is_refused_with_the_size_and_limit():
    with pytest.raises(split.ConfigTooLarge) as exc:
        small(20, 3000, version="v2.42.0")
    message = str(exc.value)
    assert exc.value.reason == "ConfigTooLarge"
    assert "over the config Secret limit of 3000 bytes (--config-secret-max-bytes)" in message
    assert "2.43.0" in message and "v2.42.0" in message and "shard" in message and "upgrade" in message
    assert "\n" not in message
    # 2.43.0 itself has scrape_config_files; and the old one is fine while the config fits
    assert small(20, 3000, version="v2.43.0").config_parts
    assert small(20, split.DEFAULT_MAX_BYTES, version="v2.42.0").config_parts == []


# ---- small configs: a low limit, fast -----------------------------------------------------------------------

def small(n: int, limit: int, version: str = "v2.45.0", previous: int = 0):
    opts = RenderOptions(config_secret_max_bytes=limit)
    return render(RenderInputs(prometheus_obj(version=version), service_monitors=[long_monitor(i) for i in range(n)],
                               options=opts, config_parts=previous))


def test_a_config_under_the_limit_is_not_split():
    result = small(20, split.DEFAULT_MAX_BYTES)
    assert result.config_parts == []
    assert "scrape_config_files" not in result.config_text
    assert len(result.config["scrape_configs"]) == 20
    pod = result.statefulsets[0]["spec"]["template"]["spec"]
    assert not any(v["name"] == split.VOLUME for v in pod["volumes"])


def test_the_limit_is_the_flag_and_a_config_just_over_it_splits():
    full = len(compress(small(20, split.DEFAULT_MAX_BYTES).config_text))
    assert small(20, full).config_parts == []
    assert small(20, full - 200).config_parts != []


def test_a_shrunk_config_halves_the_parts_only_with_room_to_spare():
    grown = small(60, 6000)
    n = len(grown.config_parts)
    assert n >= 4
    # rendered again with the count it has: the same parts
    assert part_data(small(60, 6000, previous=n)) == part_data(grown)
    # far fewer jobs: the count comes down, and every part still fits
    shrunk = small(15, 6000, previous=n)
    assert 0 < len(shrunk.config_parts) < n
    assert all(len(g) <= 6000 for g in part_data(shrunk).values())


def test_one_monitor_larger_than_the_limit_is_refused():
    with pytest.raises(split.ConfigTooLarge, match=r"ServiceMonitor/ns-\d+/sm-\d+ alone compress to \d+ bytes, over the config Secret limit of 400 bytes"):
        small(3, 400)


def test_part_index_only_matches_this_prometheus():
    prom = prometheus_obj(name="k8s")
    assert split.part_index(prom, "prometheus-k8s-config-part-3") == 3
    assert split.part_index(prom, "prometheus-k8s-other-config-part-3") is None
    assert split.part_index(prom, "prometheus-k8s-tls-assets-0") is None


def test_every_part_is_a_config_promtool_accepts(tmp_path):
    """Debian's promtool (2.42) has no scrape_config_files, but each part alone is a valid config
    (kubernetes_sd_configs checked and swapped, as for every promtool check here: Debian builds it without)."""
    result = small(30, 5000)
    assert len(result.config_parts) >= 2
    for name, gz in part_data(result).items():
        path = tmp_path / f"{name}.yaml"
        path.write_text(without_kubernetes_sd(gzip.decompress(gz).decode().replace("$(SHARD)", "0")))
        done = run_promtool("check", "config", "--syntax-only", str(path))
        assert done.returncode == 0, done.stdout + done.stderr


def test_the_statefulset_input_hash_follows_the_part_secrets():
    """The operator rewrites a StatefulSet only when its input-hash annotation changes: the parts
    volume must change it, or a grown or shrunk split would keep mounting the old Secrets."""
    def annotation(result) -> str:
        return result.statefulsets[0]["metadata"]["annotations"]["prometheus-operator-input-hash"]

    unsplit, few, many = small(15, split.DEFAULT_MAX_BYTES), small(15, 6000), small(15, 6000, previous=16)
    assert len(few.config_parts) != len(many.config_parts)
    assert len({annotation(unsplit), annotation(few), annotation(many)}) == 3
    assert annotation(small(15, 6000)) == annotation(few)


def test_fast_reload_reads_the_parts_through_the_api_with_the_mount_as_fallback():
    prom = prometheus_obj(version="v2.45.0")
    prom["metadata"]["annotations"] = {"promop.dev/fast-reload": "true"}
    result = render(RenderInputs(prom, service_monitors=[long_monitor(i) for i in range(15)],
                                 options=RenderOptions(config_secret_max_bytes=6000)))
    names = [s["metadata"]["name"] for s in result.config_parts]
    assert len(names) >= 2
    pod = result.statefulsets[0]["spec"]["template"]["spec"]
    for c in pod["containers"] + pod["initContainers"]:
        if c["name"] not in split.RELOADER_CONTAINERS:
            continue
        assert f"--config-parts-dir={split.PARTS_STAGED}" in c["args"]
        assert f"--config-parts-dir={split.PARTS_MOUNT}" not in c["args"]
        for i, name in enumerate(names):
            assert (f"--watch-secret-file=monitoring/{name}:scrape-configs-{i}.yaml.gz={split.PARTS_STAGED},"
                    f"mount={split.PARTS_MOUNT}") in c["args"]
        assert {"mountPath": split.PARTS_MOUNT, "name": split.VOLUME, "readOnly": True} in c["volumeMounts"]
    (role,) = [o for o in result.reloader_rbac if o["kind"] == "Role"]
    (secrets_rule,) = [r for r in role["rules"] if r["resources"] == ["secrets"]]
    assert secrets_rule["resourceNames"] == ["prometheus-k8s", *names]
    assert secrets_rule["verbs"] == ["get", "watch"]


# ---- the render cache's part memo: an edit recompresses one run of groups --------------------------------------

def _gzip_members(gz: bytes) -> int:
    """How many gzip members `gz` holds (each starts with the magic bytes and ends with its trailer)."""
    import zlib
    count, rest = 0, gz
    while rest:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        d.decompress(rest)
        rest = d.unused_data
        count += 1
    return count


def test_with_the_cache_an_edit_gives_the_uncached_bytes_and_recompresses_one_member(big, monkeypatch):
    from promop.render import RenderCache
    from promop.render import config as config_module
    monitors, result = big
    prom = prometheus_obj(version="v2.45.0")
    parts = len(result.config_parts)
    cache = RenderCache()
    first = render(RenderInputs(prom, service_monitors=monitors, config_parts=parts), cache=cache)
    assert part_data(first) == part_data(result)  # the cache changes no byte
    assert max(_gzip_members(gz) for gz in part_data(first).values()) > 1  # large parts: members per run
    edited = list(monitors)
    edited[1234] = long_monitor(1234, salt="edited")
    compressed: list[int] = []
    real = config_module.gzip.compress
    monkeypatch.setattr(config_module.gzip, "compress", lambda data, **kw: compressed.append(len(data)) or real(data, **kw))
    again = render(RenderInputs(prom, service_monitors=edited, config_parts=parts), cache=cache)
    monkeypatch.undo()
    uncached = render(RenderInputs(prom, service_monitors=edited, config_parts=parts))
    assert part_data(again) == part_data(uncached)
    # one member of the full config (for its size), one of the part the monitor is in, and the small
    # main config (global, rule_files...): nothing else
    assert len(compressed) == 3, compressed
    assert compressed[2] < 4096
    assert "serviceMonitor/ns-34/sm-1234/0" in [j["job_name"] for gz in part_data(again).values() for j in jobs_of(gz)]


def test_halving_is_judged_from_the_parts_sizes():
    """Bucket i of N/2 holds buckets i and i + N/2 of N: their sizes added decide, in both directions."""
    assert split._estimated_halves([b"x" * 10, b"x" * 1, b"x" * 20, b"x" * 2]) == 30
    assert split._estimated_halves([b"x" * 10, b"x" * 7]) == 17
