"""The config reloader flags on every workload: upstream's TestSidecarResources (pkg/prometheus/server,
pkg/alertmanager, pkg/thanos statefulset_test.go, whose cases live in pkg/operator's
TestSidecarsResources) translated, plus `--enable-config-reloader-probes` and the input hashes."""

from __future__ import annotations

import pytest

from promop.quantity import QuantityError
from promop.render import render
from promop.render.agent import render_agent
from promop.render.alertmanager.model import AMRenderInputs, AMRenderOptions
from promop.render.alertmanager.pipeline import render as render_alertmanager
from promop.render.model import RenderInputs, RenderOptions
from promop.render.reloader_container import ReloaderSettings, canonical_quantity, settings_from_flags
from promop.render.thanos.ruler_render import input_hash as ruler_input_hash
from promop.render.thanos.ruler_statefulset import build_ruler_statefulset

META = {"name": "test", "namespace": "ns", "uid": "uid-1"}


def prometheus_sts(options: RenderOptions, **spec) -> dict:
    prom = {"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus", "metadata": dict(META),
            "spec": {"serviceMonitorSelector": {}, **spec}}
    return render(RenderInputs(prometheus=prom, options=options)).statefulsets[0]


def agent_sts(options: RenderOptions, **spec) -> dict:
    agent = {"apiVersion": "monitoring.coreos.com/v1alpha1", "kind": "PrometheusAgent", "metadata": dict(META),
             "spec": {"podMonitorSelector": {}, "remoteWrite": [{"url": "http://rw.example/api/v1/write"}], **spec}}
    return render_agent(RenderInputs(prometheus=agent, options=options)).statefulsets[0]


def alertmanager_sts(options: RenderOptions, **spec) -> dict:
    am = {"apiVersion": "monitoring.coreos.com/v1", "kind": "Alertmanager", "metadata": dict(META), "spec": spec}
    am_options = AMRenderOptions(config_reloader=options.config_reloader)
    return render_alertmanager(AMRenderInputs(alertmanager=am, options=am_options)).statefulset


def ruler_sts(options: RenderOptions, **spec) -> dict:
    ruler = {"apiVersion": "monitoring.coreos.com/v1", "kind": "ThanosRuler", "metadata": dict(META),
             "spec": {"queryEndpoints": ["http://query:9090"], **spec}}
    # upstream: the ruler has a reloader only when it mounts a rule ConfigMap
    return build_ruler_statefulset(ruler, options, ["my-configmap"], [], "h")


WORKLOADS = {"Prometheus": prometheus_sts, "PrometheusAgent": agent_sts, "Alertmanager": alertmanager_sts,
             "ThanosRuler": ruler_sts}


def reloaders(sts: dict) -> list[dict]:
    """Every container whose name ends with config-reloader (upstream's HasSuffix), init ones too."""
    pod = sts["spec"]["template"]["spec"]
    found = [c for c in [*pod["containers"], *pod.get("initContainers", [])] if c["name"].endswith("config-reloader")]
    assert found, "no config-reloader container"
    return found


def options_with(cpu_request="10m", cpu_limit="200m", memory_request="50Mi", memory_limit="50Mi",
                 probes=False) -> RenderOptions:
    return RenderOptions(config_reloader=settings_from_flags(cpu_request, cpu_limit, memory_request, memory_limit,
                                                             probes))


# upstream's TestSidecarsResources: (CPU request, CPU limit, memory request, memory limit) -> resources
SIDECAR_CASES = {
    "no_resources": (("0", "0", "0", "0"), {}),
    "no_requests": (("0", "100m", "0", "50Mi"), {"limits": {"cpu": "100m", "memory": "50Mi"}}),
    "no_CPU_resources": (("0", "0", "50Mi", "50Mi"), {"limits": {"memory": "50Mi"}, "requests": {"memory": "50Mi"}}),
    "no_CPU_requests": (("0", "100m", "50Mi", "50Mi"),
                        {"limits": {"cpu": "100m", "memory": "50Mi"}, "requests": {"memory": "50Mi"}}),
    "no_CPU_limits": (("100m", "0", "50Mi", "50Mi"),
                      {"limits": {"memory": "50Mi"}, "requests": {"cpu": "100m", "memory": "50Mi"}}),
    "no_memory_resources": (("100m", "100m", "0", "0"), {"limits": {"cpu": "100m"}, "requests": {"cpu": "100m"}}),
    "no_memory_requests": (("100m", "100m", "0", "50Mi"),
                           {"limits": {"cpu": "100m", "memory": "50Mi"}, "requests": {"cpu": "100m"}}),
    "no_memory_limits": (("100m", "100m", "50Mi", "0"),
                         {"limits": {"cpu": "100m"}, "requests": {"cpu": "100m", "memory": "50Mi"}}),
}


@pytest.mark.parametrize("workload", WORKLOADS)
@pytest.mark.parametrize("case", SIDECAR_CASES)
def test_sidecar_resources(workload, case):
    flags, want = SIDECAR_CASES[case]
    sts = WORKLOADS[workload](options_with(*flags))
    for c in reloaders(sts):
        assert c["resources"] == want, (c["name"], case)


@pytest.mark.parametrize("workload", WORKLOADS)
def test_default_resources_are_upstreams_but_a_200m_cpu_limit(workload):
    """Upstream's 10m/50Mi, except the CPU limit: 200m, so the Python reloader starts in well under
    a second (docs/reloader.md, "Resources"; at 10m the pods took 45-61 s to be Ready)."""
    want = {"limits": {"cpu": "200m", "memory": "50Mi"}, "requests": {"cpu": "10m", "memory": "50Mi"}}
    for c in reloaders(WORKLOADS[workload](RenderOptions())):
        assert c["resources"] == want
        assert not {"livenessProbe", "readinessProbe", "startupProbe"} & set(c)


@pytest.mark.parametrize("workload", WORKLOADS)
def test_each_flag_sets_only_its_own_field(workload):
    sts = WORKLOADS[workload](options_with("1", "2", "3Mi", "4Mi"))
    for c in reloaders(sts):
        assert c["resources"] == {"limits": {"cpu": "2", "memory": "4Mi"}, "requests": {"cpu": "1", "memory": "3Mi"}}


def test_the_rendered_resources_are_a_fresh_copy_for_each_container():
    sts = prometheus_sts(RenderOptions())
    main, init = reloaders(sts)
    main["resources"]["limits"]["cpu"] = "9"
    assert init["resources"]["limits"]["cpu"] == "200m"
    assert reloaders(prometheus_sts(RenderOptions()))[0]["resources"]["limits"]["cpu"] == "200m"


HTTP_PROBE = {"httpGet": {"path": "/healthz", "port": 8080}}


@pytest.mark.parametrize("workload", WORKLOADS)
def test_probes_on_the_main_reloader_only(workload):
    sts = WORKLOADS[workload](options_with(probes=True))
    pod = sts["spec"]["template"]["spec"]
    main = next(c for c in pod["containers"] if c["name"] == "config-reloader")
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        assert main[probe] == HTTP_PROBE, probe
    for c in pod.get("initContainers", []):  # Kubernetes refuses probes on init containers
        assert not {"livenessProbe", "readinessProbe", "startupProbe"} & set(c), c["name"]
    others = [c for c in pod["containers"] if c["name"] != "config-reloader"]
    assert all("livenessProbe" not in c or c["livenessProbe"] != HTTP_PROBE for c in others)


@pytest.mark.parametrize("workload", WORKLOADS)
def test_probes_exec_on_localhost_when_the_reloader_listens_locally(workload):
    """Upstream's CreateConfigReloader with listenLocal: --listen-address=localhost:8080, no container
    port, and (with the probes flag) exec probes, since a kubelet GET cannot reach localhost."""
    sts = WORKLOADS[workload](options_with(probes=True), listenLocal=True)
    main = next(c for c in sts["spec"]["template"]["spec"]["containers"] if c["name"] == "config-reloader")
    url = "http://localhost:8080/healthz"
    script = (f'if [ -x "$(command -v curl)" ]; then exec curl --fail {url}; '
              f'elif [ -x "$(command -v wget)" ]; then exec wget -q -O /dev/null {url}; else exit 1; fi')
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        assert main[probe] == {"exec": {"command": ["sh", "-c", script]}}, probe
    assert "ports" not in main
    assert main["args"][0] == "--listen-address=localhost:8080"


@pytest.mark.parametrize("workload", ["Prometheus", "PrometheusAgent"])
def test_the_init_reloader_listens_on_every_address_with_listen_local(workload):
    """Upstream returns the init container before it passes listenLocal: :8081 with its port."""
    sts = WORKLOADS[workload](options_with(probes=True), listenLocal=True)
    init = next(c for c in sts["spec"]["template"]["spec"]["initContainers"] if c["name"] == "init-config-reloader")
    assert "--listen-address=:8081" in init["args"]
    assert init["ports"] == [{"containerPort": 8081, "name": "reloader-init", "protocol": "TCP"}]


def test_process_signal_reloader_ignores_listen_local():
    """Upstream passes listenLocal to the Prometheus reloader in HTTP reload mode only; with
    reloadStrategy ProcessSignal it listens on :8080 with its port, probed over HTTP."""
    sts = prometheus_sts(options_with(probes=True), listenLocal=True, reloadStrategy="ProcessSignal")
    main = next(c for c in sts["spec"]["template"]["spec"]["containers"] if c["name"] == "config-reloader")
    assert main["args"][0] == "--listen-address=:8080" and main["livenessProbe"] == HTTP_PROBE
    assert main["ports"] == [{"containerPort": 8080, "name": "reloader-web", "protocol": "TCP"}]


def annotation_hash(sts: dict) -> str:
    return sts["metadata"]["annotations"]["prometheus-operator-input-hash"]


@pytest.mark.parametrize("workload", WORKLOADS)
def test_changing_a_flag_changes_the_input_hash_and_the_defaults_do_not(workload):
    build = WORKLOADS[workload]
    if workload == "ThanosRuler":  # the ruler's hash is computed by its render (ruler_render.input_hash)
        ruler = {"metadata": dict(META), "spec": {}}
        base = ruler_input_hash(ruler, RenderOptions(), ["cm"], "img")
        assert ruler_input_hash(ruler, options_with(), ["cm"], "img") == base
        assert ruler_input_hash(ruler, options_with(cpu_limit="10m"), ["cm"], "img") != base
        assert ruler_input_hash(ruler, options_with(probes=True), ["cm"], "img") != base
        return
    base = annotation_hash(build(RenderOptions()))
    assert annotation_hash(build(options_with())) == base  # the defaults spelt out: no roll on upgrade
    assert annotation_hash(build(options_with(memory_limit="64Mi"))) != base
    assert annotation_hash(build(options_with(probes=True))) != base


@pytest.mark.parametrize("text,canonical", [
    ("10m", "10m"), ("50Mi", "50Mi"), ("0.1", "100m"), ("1000m", "1"), ("1000", "1k"), ("1.5", "1500m"),
    ("1024Mi", "1Gi"), ("1.5Gi", "1536Mi"), ("0.5Ki", "512"), ("100M", "100M"), ("0Mi", "0"), ("0.000m", "0"),
    ("1e3", "1e3"), ("128974848", "128974848"), ("12e6", "12e6"), ("500u", "500u"), (" 2 ", "2"),
])
def test_quantities_are_kept_in_canonical_form(text, canonical):
    assert canonical_quantity(text) == canonical


@pytest.mark.parametrize("text", ["abc", "10 m", "1.2.3", "Mi", "10mi", ""])
def test_not_a_quantity(text):
    with pytest.raises(QuantityError):
        canonical_quantity(text)


def test_zero_in_any_spelling_means_none():
    s = settings_from_flags("0m", "0.0", "0Mi", "0Gi", False)
    assert s.resources() == {}


def test_empty_values_keep_the_defaults():
    assert settings_from_flags("", "", "", "", False) == ReloaderSettings()


@pytest.mark.parametrize("args,message", [
    (("x", "", "", "", False), "--config-reloader-cpu-request: 'x' is not a quantity"),
    (("", "1O0m", "", "", False), "--config-reloader-cpu-limit: '1O0m' is not a quantity"),
    (("", "", "-5Mi", "", False), "--config-reloader-memory-request: '-5Mi' is negative"),
    (("", "", "", "5 Mi", False), "--config-reloader-memory-limit: '5 Mi' is not a quantity"),
    (("300m", "", "", "", False), "--config-reloader-cpu-request 300m is above --config-reloader-cpu-limit 200m"),
    (("", "", "64Mi", "", False), "--config-reloader-memory-request 64Mi is above --config-reloader-memory-limit 50Mi"),
])
def test_refused_values_name_their_flag_in_one_line(args, message):
    with pytest.raises(ValueError) as info:
        settings_from_flags(*args)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_a_request_without_a_limit_or_equal_to_it_is_accepted():
    assert settings_from_flags("2", "0", "1Gi", "0", False).resources() == {"requests": {"cpu": "2", "memory": "1Gi"}}
    assert settings_from_flags("100m", "0.1", "", "", False).resources()["limits"]["cpu"] == "100m"


def test_agent_daemonset_reloaders_get_the_flags_too():
    from promop.featuregates import FeatureGates

    options = RenderOptions(feature_gates=FeatureGates((("PrometheusAgentDaemonSet", True),)),
                            config_reloader=settings_from_flags("0", "0", "10Mi", "20Mi", True))
    agent = {"apiVersion": "monitoring.coreos.com/v1alpha1", "kind": "PrometheusAgent", "metadata": dict(META),
             "spec": {"mode": "DaemonSet", "podMonitorSelector": {},
                      "remoteWrite": [{"url": "http://rw.example/api/v1/write"}]}}
    ds = render_agent(RenderInputs(prometheus=agent, options=options)).daemonsets[0]
    found = reloaders(ds)
    assert {c["name"] for c in found} == {"config-reloader", "init-config-reloader"}
    for c in found:
        assert c["resources"] == {"limits": {"memory": "20Mi"}, "requests": {"memory": "10Mi"}}
        assert ("livenessProbe" in c) is (c["name"] == "config-reloader")
