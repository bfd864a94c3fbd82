"""Upstream's config reloader and configuration flags of `promop run`: `--config-reloader-cpu-request`,
`--config-reloader-cpu-limit`, `--config-reloader-memory-request`, `--config-reloader-memory-limit`,
`--enable-config-reloader-probes`, `--disable-unmanaged-prometheus-configuration` and
`--watch-referenced-objects-in-all-namespaces`: parsed as `promop run` parses them, then an operator
running with them against the sandbox."""

from __future__ import annotations

import base64
import subprocess
import sys

import pytest
from operator_testlib import NS, ROOT, config, eventually, operator_writes, prometheus, rule

from promop.cli import build_parser
from promop.host.flags import OptionsError
from promop.kube.errors import NotFound
from promop.kube.resources import NAMESPACES, PROMETHEUSES, SECRETS, SERVICEMONITORS, STATEFULSETS
from promop.operator.agent import PROMETHEUSAGENTS
from promop.operator.alertmanager import ALERTMANAGERS
from promop.operator.scope import referenced_namespaces
from promop.operator.options import from_args
from promop.operator.thanos import THANOSRULERS
from promop.render.reloader_container import ReloaderSettings


def options(*argv: str):
    return from_args(build_parser().parse_args(["run", *argv]))


# ---- parsing ---------------------------------------------------------------------------------------

def test_defaults_are_upstreams_but_the_cpu_limit():
    o = options()
    assert o.config_reloader == ReloaderSettings("10m", "200m", "50Mi", "50Mi", False)
    assert o.watch_referenced_objects_in_all_namespaces is False
    assert o.disable_unmanaged_prometheus_configuration is False
    assert o.render_options().config_reloader == o.config_reloader
    assert o.render_options().unmanaged_configuration is True


def test_accepted_values_reach_the_options_and_the_render_options():
    o = options("--config-reloader-cpu-request=0.05", "--config-reloader-cpu-limit=0",
                "--config-reloader-memory-request=64Mi", "--config-reloader-memory-limit=0.125Gi",
                "--enable-config-reloader-probes", "--watch-referenced-objects-in-all-namespaces=true",
                "--disable-unmanaged-prometheus-configuration")
    assert o.config_reloader == ReloaderSettings("50m", "0", "64Mi", "128Mi", True)
    assert o.watch_referenced_objects_in_all_namespaces and o.disable_unmanaged_prometheus_configuration
    render = o.render_options()
    assert render.config_reloader.resources() == {"limits": {"memory": "128Mi"},
                                                   "requests": {"cpu": "50m", "memory": "64Mi"}}
    assert render.unmanaged_configuration is False


def test_go_booleans_can_be_turned_off_explicitly():
    o = options("--enable-config-reloader-probes=false", "--watch-referenced-objects-in-all-namespaces=0",
                "--disable-unmanaged-prometheus-configuration=f")
    assert not (o.config_reloader.enable_probes or o.watch_referenced_objects_in_all_namespaces
                or o.disable_unmanaged_prometheus_configuration)


REFUSED = [
    (["--config-reloader-cpu-request=lots"], "--config-reloader-cpu-request: 'lots' is not a quantity"),
    (["--config-reloader-memory-limit=-1"], "--config-reloader-memory-limit: '-1' is negative"),
    (["--config-reloader-cpu-request=1"], "--config-reloader-cpu-request 1 is above --config-reloader-cpu-limit 200m"),
    (["--enable-config-reloader-probes=on"], "--enable-config-reloader-probes: 'on' is not true or false"),
    (["--watch-referenced-objects-in-all-namespaces=all"],
     "--watch-referenced-objects-in-all-namespaces: 'all' is not true or false"),
    (["--disable-unmanaged-prometheus-configuration=yes please"],
     "--disable-unmanaged-prometheus-configuration: 'yes please' is not true or false"),
]


@pytest.mark.parametrize("argv,message", REFUSED, ids=[" ".join(a) for a, _ in REFUSED])
def test_refused_values_name_the_flag(argv, message):
    with pytest.raises(OptionsError) as info:
        options(*argv)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_a_refused_value_is_one_line_and_exit_2():
    for argv in (["--config-reloader-memory-request=5 Mi"], ["--enable-config-reloader-probes=maybe"]):
        p = subprocess.run([sys.executable, "-m", "promop", "run", *argv], capture_output=True, text=True,
                           cwd=ROOT, timeout=60)
        assert p.returncode == 2, p.stderr
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("promop run: " + argv[0].split("=")[0]), p.stderr


@pytest.mark.parametrize("argv,namespaces", [
    ((), ()),  # every namespace, as without the flag
    (("--namespaces=a,b",), ()),  # the Secrets already follow --namespaces: unchanged
    (("--prometheus-instance-namespaces=mon",), ()),  # --namespaces is every namespace: so are the Secrets
    (("--prometheus-instance-namespaces=mon,a", "--namespaces=a,b"), ("mon", "a", "b")),  # the union
])
def test_referenced_namespaces_merge_the_allow_lists_as_upstream(argv, namespaces):
    assert referenced_namespaces(options("--watch-referenced-objects-in-all-namespaces", *argv)) == namespaces


# ---- an operator on the sandbox ------------------------------------------------------------------

def _get(kube, res, name, namespace=NS):
    try:
        return kube.get(res, name, namespace)
    except NotFound:
        return None


def reloader(sts: dict) -> dict:
    return next(c for c in sts["spec"]["template"]["spec"]["containers"] if c["name"] == "config-reloader")


def init_reloader(sts: dict) -> dict:
    return next(c for c in sts["spec"]["template"]["spec"]["initContainers"] if c["name"] == "init-config-reloader")


FLAGGED = ReloaderSettings(cpu_request="0", cpu_limit="100m", memory_request="32Mi", memory_limit="0",
                           enable_probes=True)
WANT_RESOURCES = {"limits": {"cpu": "100m"}, "requests": {"memory": "32Mi"}}


def test_reloader_flags_reach_prometheus_agent_and_ruler_statefulsets(cluster, kube, start_operator):
    kube.create(NAMESPACES, {"metadata": {"name": NS}})
    op = start_operator(config_reloader=FLAGGED)
    kube.create(PROMETHEUSES, prometheus("p"), NS)
    kube.create(PROMETHEUSAGENTS, {
        "apiVersion": "monitoring.coreos.com/v1alpha1", "kind": "PrometheusAgent",
        "metadata": {"name": "edge", "namespace": NS},
        "spec": {"podMonitorSelector": {}, "remoteWrite": [{"url": "http://central:9090/api/v1/write"}]}}, NS)
    kube.create(THANOSRULERS, {
        "apiVersion": "monitoring.coreos.com/v1", "kind": "ThanosRuler", "metadata": {"name": "tr", "namespace": NS},
        "spec": {"queryEndpoints": ["http://query:9090"], "ruleSelector": {}}}, NS)
    from promop.kube.resources import PROMETHEUSRULES
    kube.create(PROMETHEUSRULES, rule("r", "sum(up)"), NS)  # the ruler has a reloader only with rule ConfigMaps
    for name in ("prometheus-p", "prom-agent-edge", "thanos-ruler-tr"):
        sts = eventually(lambda n=name: _get(kube, STATEFULSETS, n), 30, f"StatefulSet {name}")
        main = eventually(lambda n=name: next((c for c in _get(kube, STATEFULSETS, n)["spec"]["template"]["spec"]
                                               ["containers"] if c["name"] == "config-reloader"), None), 30,
                          f"the reloader of {name}")
        assert main["resources"] == WANT_RESOURCES, name
        # as a real apiserver, the sandbox fills in the probe's defaults (scheme, period, thresholds)
        assert main["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": 8080, "scheme": "HTTP"}, name
        assert main["readinessProbe"]["httpGet"] == main["startupProbe"]["httpGet"] == main["livenessProbe"]["httpGet"]
        if name != "thanos-ruler-tr":  # the ruler has no init container
            init = init_reloader(sts)
            assert init["resources"] == WANT_RESOURCES and "livenessProbe" not in init
    # what the apiserver filled in (probe defaults) is not a difference: a resync writes no StatefulSet
    op.settle(cluster, 30)
    before = [w for w in operator_writes(cluster) if w.resource == "statefulsets"]
    op.controller.enqueue_all()
    op.settle(cluster, 30)
    assert [w for w in operator_writes(cluster) if w.resource == "statefulsets"] == before


def test_reloader_flags_reach_alertmanager_statefulsets(kube, start_operator):
    kube.create(NAMESPACES, {"metadata": {"name": NS}})
    start_operator(config_reloader=FLAGGED)
    kube.create(ALERTMANAGERS, {"apiVersion": "monitoring.coreos.com/v1", "kind": "Alertmanager",
                                "metadata": {"name": "main", "namespace": NS}, "spec": {}}, NS)
    sts = eventually(lambda: _get(kube, STATEFULSETS, "alertmanager-main"), 30, "the Alertmanager StatefulSet")
    assert reloader(sts)["resources"] == WANT_RESOURCES


def test_changing_the_reloader_flags_updates_existing_statefulsets(kube, start_operator):
    kube.create(NAMESPACES, {"metadata": {"name": NS}})
    first = start_operator()
    kube.create(PROMETHEUSES, prometheus("p"), NS)
    sts = eventually(lambda: _get(kube, STATEFULSETS, "prometheus-p"), 30, "the StatefulSet")
    assert reloader(sts)["resources"]["limits"] == {"cpu": "200m", "memory": "50Mi"}
    eventually(first.idle, 30, "idle")
    first.shutdown()
    start_operator(config_reloader=FLAGGED)  # a restart with other flags: the input hash differs
    eventually(lambda: reloader(_get(kube, STATEFULSETS, "prometheus-p"))["resources"] == WANT_RESOURCES, 30,
               "the StatefulSet updated with the new resources")


def _no_selectors(name: str) -> dict:
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus", "metadata": {"name": name, "namespace": NS},
            "spec": {"ruleSelector": {}}}


def test_without_the_flag_a_prometheus_without_selectors_gets_an_empty_secret_left_alone(kube, start_operator):
    kube.create(NAMESPACES, {"metadata": {"name": NS}})
    op = start_operator()
    kube.create(PROMETHEUSES, _no_selectors("p"), NS)
    secret = eventually(lambda: _get(kube, SECRETS, "prometheus-p"), 30, "the config Secret")
    assert not secret.get("data")
    secret["data"] = {"prometheus.yaml.gz": base64.b64encode(b"not even gzip").decode()}
    kube.update(SECRETS, secret, NS)  # the user's config: never overwritten
    kube.patch(PROMETHEUSES, "p", {"spec": {"scrapeInterval": "17s"}}, NS)
    eventually(op.idle, 30, "idle")
    assert _get(kube, SECRETS, "prometheus-p")["data"] == secret["data"]


def test_with_the_flag_a_prometheus_without_selectors_gets_a_generated_config(kube, start_operator):
    kube.create(NAMESPACES, {"metadata": {"name": NS}})
    op = start_operator(disable_unmanaged_prometheus_configuration=True)
    kube.create(SERVICEMONITORS, {"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
                                  "metadata": {"name": "web", "namespace": NS},
                                  "spec": {"selector": {}, "endpoints": [{"port": "web"}]}}, NS)
    kube.create(PROMETHEUSES, _no_selectors("p"), NS)
    cfg = eventually(lambda: config(kube, "p"), 30, "a generated config")
    assert cfg.get("scrape_configs", []) == []  # nil selectors select nothing, as upstream
    kube.patch(PROMETHEUSES, "p", {"spec": {"scrapeInterval": "17s"}}, NS)
    eventually(lambda: (config(kube, "p") or {}).get("global", {}).get("scrape_interval") == "17s", 30,
               "the config follows the spec")
    eventually(op.idle, 30, "idle")


def _basic_auth_monitor(namespace: str) -> dict:
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
            "metadata": {"name": "web", "namespace": namespace},
            "spec": {"selector": {}, "endpoints": [{"port": "web", "basicAuth": {
                "username": {"name": "creds", "key": "user"}, "password": {"name": "creds", "key": "pass"}}}]}}


def _creds(namespace: str, password: str) -> dict:
    b64 = {k: base64.b64encode(v.encode()).decode() for k, v in (("user", "u"), ("pass", password))}
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds", "namespace": namespace}, "data": b64}


def _password(kube, name="p", namespace="mon") -> str | None:
    from operator_testlib import decode_config
    import yaml

    try:
        cfg = yaml.safe_load(decode_config(kube.get(SECRETS, f"prometheus-{name}", namespace)))
    except NotFound:
        return None
    jobs = (cfg or {}).get("scrape_configs") or []
    return jobs[0].get("basic_auth", {}).get("password") if jobs else None


@pytest.mark.parametrize("watch", [True, False])
def test_secrets_of_monitor_namespaces_are_watched_only_with_the_flag(kube, start_operator, watch):
    for n in ("mon", "apps"):
        kube.create(NAMESPACES, {"metadata": {"name": n}})
    kube.create(SECRETS, _creds("apps", "old"), "apps")
    op = start_operator(prometheus_instance_namespaces=("mon",), namespaces=("apps",),
                        watch_referenced_objects_in_all_namespaces=watch)
    kube.create(SERVICEMONITORS, _basic_auth_monitor("apps"), "apps")
    prom = prometheus("p", serviceMonitorNamespaceSelector={})
    prom["metadata"]["namespace"] = "mon"
    kube.create(PROMETHEUSES, prom, "mon")
    eventually(lambda: _password(kube) == "old", 30, "the config with the password")
    eventually(op.idle, 30, "idle")
    assert ("apps/creds" in op.controller.secrets.store.keys()) is watch
    kube.patch(SECRETS, "creds", {"data": _creds("apps", "new")["data"]}, "apps")
    if watch:  # the Secret's update triggers the sync that writes the new password
        eventually(lambda: _password(kube) == "new", 30, "the new password")
    else:  # upstream too: only the next resync (5 min) would see it
        eventually(op.idle, 30, "idle")
        assert _password(kube) == "old"


# ---- the other upstream flags promop accepts ----------------------------------------------------------

def test_web_flags_of_upstream_are_accepted():
    o = options()
    assert (o.web_enable_http2, o.web_tls_reload_interval) == (False, 60.0)  # upstream's defaults
    o = options("--web.enable-http2", "--web.tls-reload-interval=1m30s")
    assert (o.web_enable_http2, o.web_tls_reload_interval) == (True, 90.0)
    assert options("--web.enable-http2=false").web_enable_http2 is False


@pytest.mark.parametrize("argv,message", [
    (["--web.tls-reload-interval=soon"], "--web.tls-reload-interval: 'soon' is not a duration"),
    (["--web.tls-reload-interval=-1m"], "--web.tls-reload-interval: '-1m' is negative"),
    (["--web.enable-http2=2"], "--web.enable-http2: '2' is not true or false"),
    (["--configmap-field-selector=name"], "--configmap-field-selector: invalid selector: 'name'"),
])
def test_other_refused_values_name_the_flag(argv, message):
    with pytest.raises(OptionsError) as info:
        options(*argv)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_the_configmap_field_selector_filters_the_configmap_informer(kube, start_operator):
    from promop.kube.resources import CONFIGMAPS

    kube.create(NAMESPACES, {"metadata": {"name": NS}})
    for name in ("kept", "ignored"):
        kube.create(CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": NS},
                                 "data": {"a": "b"}}, NS)
    op = start_operator(configmap_field_selector="metadata.name!=ignored", deny_namespaces=("elsewhere",))
    keys = op.controller.configmaps.store.keys()
    assert f"{NS}/kept" in keys and f"{NS}/ignored" not in keys  # filtered by the apiserver, with the deny-list


def _watched(informer) -> set:
    return {r.namespace for r in informer.reflectors}


def test_watch_flag_widens_secret_and_configmap_informers_of_prometheus_and_agents(cluster):
    """--namespaces=team with --prometheus-instance-namespaces=mon: referenced Secrets/ConfigMaps are
    watched where the Prometheus/agent objects are (mon), and with the flag also where the monitors are."""
    from promop.kube.client import KubeClient
    from promop.operator.agent.controller import AgentController
    from promop.operator.controller import Controller

    client = KubeClient(cluster.api_client())
    base = ("--namespaces=team", "--prometheus-instance-namespaces=mon")
    for argv, want in ((base, {"mon"}), ((*base, "--watch-referenced-objects-in-all-namespaces"), {"mon", "team"})):
        opts = options(*argv)
        for ctl in (Controller(client, opts), AgentController(client, opts)):
            assert _watched(ctl.secrets) == want and _watched(ctl.configmaps) == want, (type(ctl).__name__, argv)
