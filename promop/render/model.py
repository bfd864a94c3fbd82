"""The shapes that go into and come out of the renderer.

The renderer is pure: a RenderInputs in, a RenderResult out, nothing read from
the cluster, the clock or the environment. The operator fills RenderInputs from
its caches (plus direct GETs for referenced Secret/ConfigMap content); the
`promop render` CLI fills it from YAML files.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from collections.abc import Mapping, Sequence
from typing import Any

from promop.featuregates import FeatureGates
from promop.render.reloader_container import ReloaderSettings

MONITORING_GROUP = "monitoring.coreos.com"
MONITORING_VERSION = "v1"

# Default images. The reloader image holds both `promop` and `promop-config-reloader`.
DEFAULT_PROMETHEUS_VERSION = "v3.13.2"
DEFAULT_PROMETHEUS_BASE_IMAGE = "quay.io/prometheus/prometheus"
DEFAULT_RELOADER_IMAGE = "ghcr.io/promop/promop:0.1.0"


@dataclass(frozen=True)
class ObjectRef:
    """A namespaced reference to a Kubernetes object, e.g. a Secret a monitor reads."""

    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"


@dataclass(frozen=True)
class Problem:
    """A rejection (the object is skipped) or a warning (it is used, with a caveat).

    `field` is a path into the object, e.g. `spec.endpoints[0].relabelings[1].regex`.
    """

    kind: str
    namespace: str
    name: str
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}: {self.field}: {self.message}"


@dataclass(frozen=True)
class Decision:
    """Whether a Prometheus selects one ServiceMonitor/PodMonitor/PrometheusRule, and why not.

    `reason` is empty when selected, else a sentence a user can act on, e.g.
    `serviceMonitorSelector matchLabels team=web: label team missing` or
    `namespace 'x' not matched by serviceMonitorNamespaceSelector ...`.
    A selected object may still be rejected; see RenderResult.rejected.
    """

    kind: str
    namespace: str
    name: str
    selected: bool
    reason: str = ""


@dataclass(frozen=True)
class RenderOptions:
    """Operator-level settings (command-line flags), not per-Prometheus spec."""

    labels: Mapping[str, str] = field(default_factory=dict)  # --labels: added to every object we create
    annotations: Mapping[str, str] = field(default_factory=dict)  # --annotations
    config_reloader_image: str = DEFAULT_RELOADER_IMAGE
    prometheus_default_base_image: str = DEFAULT_PROMETHEUS_BASE_IMAGE
    thanos_default_base_image: str = "quay.io/thanos/thanos"  # --thanos-default-base-image (render/thanos/versions.py)
    endpointslice_supported: bool = True  # the cluster serves discovery.k8s.io/v1 EndpointSlices
    shard_retention_policy: bool = True  # upstream's PrometheusShardRetentionPolicy gate (on by default)
    feature_gates: FeatureGates = field(default_factory=FeatureGates)  # --feature-gates (promop.featuregates)
    kubernetes_version: str = ""  # the apiserver's version, vX.Y.Z ("" = unknown: assume a current one)
    operator_version: str = "0.1.0"
    fast_reload: bool = False  # --fast-reload: reloaders read through the API (see render/fast_reload.py)
    # --config-secret-max-bytes: a gzipped config larger than this is split over several Secrets (render/split.py)
    config_secret_max_bytes: int = 900 * 1024
    # --config-reloader-{cpu,memory}-{request,limit}, --enable-config-reloader-probes (render/reloader_container.py)
    config_reloader: ReloaderSettings = field(default_factory=ReloaderSettings)
    # False with --disable-unmanaged-prometheus-configuration: a Prometheus without selectors gets a generated config
    unmanaged_configuration: bool = True


@dataclass
class RenderInputs:
    """Everything one Prometheus's render depends on.

    Monitors and rules are *candidates*: every object the operator knows of; the
    renderer selects. `namespaces` are Namespace objects (for namespace selectors);
    when empty, namespaces are inferred from the candidates' namespaces with no
    labels. `secrets`/`configmaps` hold full objects (with `data`) keyed by
    (namespace, name): only those referenced need to be present (see
    promop.render.references).
    """

    prometheus: dict
    service_monitors: Sequence[dict] = ()
    pod_monitors: Sequence[dict] = ()
    prometheus_rules: Sequence[dict] = ()
    probes: Sequence[dict] = ()
    namespaces: Sequence[dict] = ()
    secrets: Mapping[tuple[str, str], dict] = field(default_factory=dict)
    configmaps: Mapping[tuple[str, str], dict] = field(default_factory=dict)
    options: RenderOptions = field(default_factory=RenderOptions)
    scrape_configs: Sequence[dict] = ()  # ScrapeConfig candidates (monitoring.coreos.com/v1alpha1)
    # how many config part Secrets exist now (render/split.py keeps their count unless it must change)
    config_parts: int = 0


@dataclass
class RenderResult:
    """What one Prometheus renders to.

    `objects()` lists every Kubernetes object to write, in write order. `config`
    is the decoded Prometheus config (with `$(POD_NAME)`/`$(SHARD)` left as is).
    """

    config: dict
    config_secret: dict  # Secret prometheus-<name>, key prometheus.yaml.gz
    tls_secrets: list[dict]  # prometheus-<name>-tls-assets-<n>
    rule_configmaps: list[dict]  # prometheus-<name>-rulefiles-<i>
    service: dict  # governing Service prometheus-operated
    statefulsets: list[dict]  # one per shard
    selection: list[Decision]
    rejected: list[Problem]
    warnings: list[Problem]
    # (kind, namespace, name) of each accepted monitor -> its scrape job names
    jobs: dict[tuple[str, str, str], list[str]] = field(default_factory=dict)
    # (namespace, name) of each accepted PrometheusRule -> (configmap name, file key)
    rule_files: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)
    input_hash: str = ""
    # Secret prometheus-<name>-web-config that the StatefulSet mounts (None: not needed)
    web_config_secret: dict | None = None
    # the config as YAML text, exactly what is gzipped into config_secret
    config_text: str = ""
    # no scrape selector is set: upstream leaves the config Secret to the user;
    # config_secret then has no data and should only be created if absent
    config_unmanaged: bool = False
    # fast reload: the Role and RoleBinding that let the pods read their config through the API
    reloader_rbac: list[dict] = field(default_factory=list)
    # Secret prometheus-<name>-thanos-prometheus-http-client-file for the Thanos sidecar (None: no sidecar)
    thanos_secret: dict | None = None
    # the config split past one Secret: prometheus-<name>-config-part-<i> (render/split.py)
    config_parts: list[dict] = field(default_factory=list)
    # how many scrape jobs `config` has (reading `config` itself may decode them all: see lazy_field)
    job_count: int = 0

    def objects(self) -> list[dict]:
        return [
            *self.rule_configmaps,
            *self.config_parts,  # before the main config that loads them
            self.config_secret,
            *self.tls_secrets,
            *([self.web_config_secret] if self.web_config_secret else []),
            *([self.thanos_secret] if self.thanos_secret else []),
            self.service,
            *self.reloader_rbac,
            *self.statefulsets,
        ]

    def accepted(self, kind: str) -> list[tuple[str, str]]:
        """(namespace, name) of selected, not rejected objects of `kind`."""
        bad = {(p.kind, p.namespace, p.name) for p in self.rejected}
        return [
            (d.namespace, d.name)
            for d in self.selection
            if d.kind == kind and d.selected and (kind, d.namespace, d.name) not in bad
        ]


def obj_meta(obj: Mapping[str, Any]) -> tuple[str, str]:
    """(namespace, name) of an object dict."""
    md = obj.get("metadata") or {}
    return md.get("namespace") or "", md.get("name") or ""


def lazy_field(cls: type, name: str) -> type:
    """Make the dataclass field `name` of `cls` accept a callable for its value: called once, when
    the value is first read. The operator never reads a Prometheus config's text or decoded jobs (it
    writes the gzipped pieces): at 30,000 monitors building them cost tens of milliseconds and
    holding them a hundred megabytes; `promop render` and the tests read them as before."""
    slot = f"_{name}_value"

    def get(self: Any) -> Any:
        value = self.__dict__.get(slot)
        if callable(value):
            value = self.__dict__[slot] = value()
        return value

    def put(self: Any, value: Any) -> None:
        self.__dict__[slot] = value

    setattr(cls, name, property(get, put, doc=f"{name} (computed when first read)"))
    return cls


lazy_field(RenderResult, "config_text")
lazy_field(RenderResult, "config")
