"""ScrapeConfig in the render pipeline: selection, isolation, TLS assets, references, gates, the CLI."""

from __future__ import annotations

import base64

import yaml

from promop.render import RenderInputs, RenderOptions, generate_config, references, render
from promop.render.model import ObjectRef

from .helpers import PROMTOOL_VERSION, lay_out, promtool_check_config

CA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


def prom(**spec) -> dict:
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus",
            "metadata": {"name": "p", "namespace": "mon"}, "spec": {"version": PROMTOOL_VERSION, **spec}}


def sc(name: str, namespace: str = "mon", labels: dict | None = None, **spec) -> dict:
    spec = spec or {"staticConfigs": [{"targets": ["a:9100"]}]}
    return {"apiVersion": "monitoring.coreos.com/v1alpha1", "kind": "ScrapeConfig",
            "metadata": {"name": name, "namespace": namespace, "labels": labels or {}}, "spec": spec}


def jobs(result) -> list[str]:
    return [j["job_name"] for j in result.config.get("scrape_configs") or []]


def test_nil_selector_selects_nothing_and_empty_selects_all():
    objs = [sc("a"), sc("b", labels={"team": "x"})]
    nothing = render(RenderInputs(prometheus=prom(serviceMonitorSelector={}), scrape_configs=objs))
    assert jobs(nothing) == []
    assert not any(d.selected for d in nothing.selection if d.kind == "ScrapeConfig")
    everything = render(RenderInputs(prometheus=prom(scrapeConfigSelector={}), scrape_configs=objs))
    assert jobs(everything) == ["scrapeConfig/mon/a", "scrapeConfig/mon/b"]
    labelled = render(RenderInputs(prometheus=prom(scrapeConfigSelector={"matchLabels": {"team": "x"}}),
                                   scrape_configs=objs))
    assert jobs(labelled) == ["scrapeConfig/mon/b"]


def test_scrape_config_selector_alone_makes_the_config_managed():
    result = render(RenderInputs(prometheus=prom(scrapeConfigSelector={}), scrape_configs=[sc("a")]))
    assert not result.config_unmanaged and result.config_text


def test_namespace_selector_nil_means_own_namespace_and_empty_means_all():
    objs = [sc("a"), sc("b", namespace="other")]
    own = render(RenderInputs(prometheus=prom(scrapeConfigSelector={}), scrape_configs=objs))
    assert jobs(own) == ["scrapeConfig/mon/a"]
    why = next(d.reason for d in own.selection if d.name == "b")
    assert "scrapeConfigNamespaceSelector" in why
    every = render(RenderInputs(prometheus=prom(scrapeConfigSelector={}, scrapeConfigNamespaceSelector={}),
                                scrape_configs=objs))
    assert jobs(every) == ["scrapeConfig/mon/a", "scrapeConfig/other/b"]
    labelled = render(RenderInputs(
        prometheus=prom(scrapeConfigSelector={}, scrapeConfigNamespaceSelector={"matchLabels": {"env": "prod"}}),
        scrape_configs=objs, namespaces=[{"metadata": {"name": "mon"}},
                                         {"metadata": {"name": "other", "labels": {"env": "prod"}}}]))
    assert jobs(labelled) == ["scrapeConfig/other/b"]


def test_an_invalid_scrape_config_is_rejected_alone():
    bad = sc("bad", relabelings=[{"sourceLabels": ["x"], "regex": "(", "targetLabel": "y"}])
    missing = sc("missing", basicAuth={"username": {"name": "nope", "key": "u"}, "password": {"name": "nope", "key": "p"}})
    result = render(RenderInputs(prometheus=prom(scrapeConfigSelector={}), scrape_configs=[sc("good"), bad, missing]))
    assert jobs(result) == ["scrapeConfig/mon/good"]
    fields = {(p.name, p.field) for p in result.rejected}
    assert ("bad", "spec.relabelings[0].regex") in fields
    assert ("missing", "spec.basicAuth.username") in fields
    assert result.accepted("ScrapeConfig") == [("mon", "good")]


def test_schema_violation_rejects_with_the_v1alpha1_schema():
    bad = sc("bad", scheme="FTP")
    result = generate_config(prom(), scrape_configs=[bad])
    assert [p.field for p in result.rejected] == ["spec.scheme"]


def test_tls_material_goes_to_the_tls_assets_secret_and_references_are_fetched():
    obj = sc("t", httpSDConfigs=[{"url": "http://sd/x", "tlsConfig": {"ca": {"secret": {"name": "tls", "key": "ca"}}}}],
             consulSDConfigs=[{"server": "c:8500", "tokenRef": {"name": "consul", "key": "token"}}])
    inputs = RenderInputs(prometheus=prom(scrapeConfigSelector={}), scrape_configs=[obj],
                          secrets={("mon", "tls"): {"stringData": {"ca": CA}},
                                   ("mon", "consul"): {"stringData": {"token": "s3cret"}}})
    assert {ObjectRef("Secret", "mon", "tls"), ObjectRef("Secret", "mon", "consul")} <= references(inputs)
    result = render(inputs)
    job = result.config["scrape_configs"][0]
    assert job["http_sd_configs"][0]["tls_config"] == {"ca_file": "/etc/prometheus/certs/0_mon_tls_ca"}
    assert job["consul_sd_configs"][0]["token"] == "s3cret"
    data = result.tls_secrets[0]["data"]
    assert base64.b64decode(data["0_mon_tls_ca"]).decode() == CA


def test_sharding_only_over_several_shards_and_not_twice():
    one = generate_config(prom(), scrape_configs=[sc("a")]).config["scrape_configs"][0]
    assert not any(r.get("action") == "hashmod" for r in one["relabel_configs"])
    two = generate_config(prom(shards=2), scrape_configs=[sc("a")]).config["scrape_configs"][0]
    assert [r.get("modulus") for r in two["relabel_configs"] if r.get("action") == "hashmod"] == [2]
    own = sc("b", staticConfigs=[{"targets": ["a:1"]}],
             relabelings=[{"sourceLabels": ["__address__"], "targetLabel": "__tmp_hash", "modulus": 9, "action": "HashMod"}])
    mine = generate_config(prom(shards=2), scrape_configs=[own]).config["scrape_configs"][0]
    assert [r.get("modulus") for r in mine["relabel_configs"] if r.get("action") == "hashmod"] == [9]


def test_a_field_too_new_for_the_version_is_dropped_with_a_warning():
    obj = sc("d", dnsSDConfigs=[{"names": ["x.example"], "type": "NS", "port": 53}], enableCompression=False)
    result = generate_config(prom(version="v2.48.0"), scrape_configs=[obj])
    job = result.config["scrape_configs"][0]
    assert "type" not in job["dns_sd_configs"][0] and "enable_compression" not in job
    assert {w.field for w in result.warnings} == {"spec.dnsSDConfigs[0].type", "spec.enableCompression"}
    newer = generate_config(prom(version="v2.49.0"), scrape_configs=[obj]).config["scrape_configs"][0]
    assert newer["dns_sd_configs"][0]["type"] == "NS" and newer["enable_compression"] is False


def test_a_discovery_or_field_upstream_refuses_for_the_version_rejects_the_object():
    """Upstream's selector rejects (not drops) these; one version later they are accepted."""
    for old, new, spec in (
        ("v2.27.0", "v2.28.0", {"httpSDConfigs": [{"url": "http://sd/x"}]}),
        ("v2.54.0", "v2.54.1", {"dockerSDConfigs": [{"host": "unix:///d.sock", "matchFirstNetwork": True}]}),
        ("v2.44.0", "v2.45.0", {"consulSDConfigs": [{"server": "c:8500", "pathPrefix": "/p"}]}),
        ("v3.1.0", "v3.2.0", {"openstackSDConfigs": [{"role": "LoadBalancer", "region": "r"}]}),
    ):
        rejected = generate_config(prom(version=old), scrape_configs=[sc("x", **spec)]).rejected
        assert rejected and "needs Prometheus" in rejected[0].message, (old, spec)
        assert generate_config(prom(version=new), scrape_configs=[sc("x", **spec)]).rejected == [], (new, spec)


def test_inconsistent_discoveries_are_rejected():
    cases = {
        "spec.dnsSDConfigs[0].port": {"dnsSDConfigs": [{"names": ["a.example"], "type": "A"}]},
        "spec.kubernetesSDConfigs[0].selectors[0].role": {"kubernetesSDConfigs": [{"role": "Node", "selectors": [{"role": "Pod"}]}]},
        "spec.kubernetesSDConfigs[0]": {"kubernetesSDConfigs": [{"role": "Pod", "apiServer": "https://k:6443",
                                                                 "namespaces": {"ownNamespace": True}}]},
        "spec.azureSDConfigs[0]": {"azureSDConfigs": [{"subscriptionID": "s", "tenantID": "t"}]},
    }
    for field, spec in cases.items():
        rejected = generate_config(prom(), scrape_configs=[sc("x", **spec)]).rejected
        assert [p.field for p in rejected] == [field], spec
    ok = {"kubernetesSDConfigs": [{"role": "Endpoints", "selectors": [{"role": "Pod", "label": "a=b"}]}],
          "dnsSDConfigs": [{"names": ["a.example"], "type": "A", "port": 80}]}
    assert generate_config(prom(), scrape_configs=[sc("x", **ok)]).rejected == []


def test_enforced_namespace_label_applies_to_samples_only():
    job = generate_config(prom(enforcedNamespaceLabel="namespace"), scrape_configs=[sc("a")]).config["scrape_configs"][0]
    assert job["metric_relabel_configs"] == [{"target_label": "namespace", "replacement": "mon"}]
    assert not any(r.get("target_label") == "namespace" for r in job["relabel_configs"])


def test_promtool_accepts_the_sds_debian_builds(tmp_path):
    """Debian's promtool 2.42 has static, file, http and dns discovery (kubernetes is swapped by lay_out;
    consul and the cloud discoveries are not built in, so they are covered by the goldens only)."""
    obj = sc("all", staticConfigs=[{"targets": ["a:9100"], "labels": {"x": "y"}}],
             fileSDConfigs=[{"files": ["/etc/sd/*.json"], "refreshInterval": "1m"}],
             httpSDConfigs=[{"url": "http://sd.example/targets", "refreshInterval": "30s"}],
             dnsSDConfigs=[{"names": ["_x._tcp.example"], "type": "SRV"}],
             kubernetesSDConfigs=[{"role": "Pod", "namespaces": {"names": ["a"]}}],
             metricRelabelings=[{"action": "drop", "sourceLabels": ["__name__"], "regex": "go_.*"}],
             sampleLimit=1000, scrapeTimeout="10s", scrapeInterval="30s")
    result = render(RenderInputs(prometheus=prom(scrapeConfigSelector={}), scrape_configs=[obj]))
    assert result.rejected == []
    checked = promtool_check_config(lay_out(result, tmp_path))
    assert checked.returncode == 0, checked.stdout + checked.stderr


def _promop(*args: str):
    from cli_runner import promop  # in-process: the same entry point as `python -m promop`

    return promop(*args)


def test_promop_render_and_explain_read_scrape_configs(tmp_path):
    f = tmp_path / "in.yaml"
    bad = sc("bad", scrapeInterval="10s", scrapeTimeout="30s")
    f.write_text(yaml.safe_dump_all([prom(scrapeConfigSelector={}), sc("good"), bad]))
    out = tmp_path / "out"
    proc = _promop("render", "-f", str(f), "--out", str(out), "--strict")
    assert proc.returncode == 1, proc.stderr  # one object rejected
    assert "ScrapeConfig mon/bad" in proc.stderr + proc.stdout
    config = yaml.safe_load((out / "mon" / "p" / "prometheus.yaml").read_text())
    assert [j["job_name"] for j in config["scrape_configs"]] == ["scrapeConfig/mon/good"]
    good = _promop("explain", "scrapeconfig", "mon/good", "-f", str(f))
    assert good.returncode == 0 and "scrapeConfig/mon/good" in good.stdout
    why = _promop("explain", "scrapeconfig", "mon/bad", "-f", str(f))
    assert why.returncode == 1 and "spec.scrapeTimeout" in why.stdout
