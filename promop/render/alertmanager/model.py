"""The shapes that go into and come out of an Alertmanager render."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from promop.render.alertmanager.common import DEFAULT_ALERTMANAGER_BASE_IMAGE, Fatal
from promop.render.model import Decision, Problem, RenderOptions


@dataclass(frozen=True)
class AMRenderOptions(RenderOptions):
    """Operator flags that matter to Alertmanager objects."""

    alertmanager_default_base_image: str = DEFAULT_ALERTMANAGER_BASE_IMAGE
    cluster_domain: str = ""  # --cluster-domain: fully qualified peer addresses when set


@dataclass
class AMRenderInputs:
    """Everything one Alertmanager's render depends on.

    `alertmanager_configs` are candidates (every AlertmanagerConfig known);
    `namespaces` are Namespace objects for the namespace selector;
    `secrets`/`configmaps` hold full objects keyed by (namespace, name): the
    user config Secret and every referenced one (see references()).
    """

    alertmanager: dict
    alertmanager_configs: Sequence[dict] = ()
    namespaces: Sequence[dict] = ()
    secrets: Mapping[tuple[str, str], dict] = field(default_factory=dict)
    configmaps: Mapping[tuple[str, str], dict] = field(default_factory=dict)
    options: AMRenderOptions = field(default_factory=AMRenderOptions)


@dataclass
class AMRenderResult:
    """What one Alertmanager renders to. When `fatal` is set there is no generated Secret: the
    operator keeps the previous one and reports the error (reference §4)."""

    config: dict | None
    config_text: str
    generated_secret: dict | None
    tls_secrets: list[dict]
    web_config_secret: dict | None
    cluster_tls_secret: dict | None
    service: dict | None  # None with spec.serviceName (the user's Service is used)
    statefulset: dict
    selection: list[Decision]
    rejected: list[Problem]
    warnings: list[Problem]
    fatal: Fatal | None = None
    unmanaged: bool = False
    input_hash: str = ""

    def objects(self) -> list[dict]:
        """Every object to write, in write order (the StatefulSet last)."""
        out = [o for o in (self.generated_secret, *self.tls_secrets, self.web_config_secret, self.cluster_tls_secret,
                           self.service) if o is not None]
        return [*out, self.statefulset]

    def accepted(self) -> list[tuple[str, str]]:
        bad = {(p.namespace, p.name) for p in self.rejected}
        return [(d.namespace, d.name) for d in self.selection if d.selected and (d.namespace, d.name) not in bad]
