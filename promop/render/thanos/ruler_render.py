"""render_ruler(): every object one ThanosRuler needs, from plain data (pure, like render/pipeline.py).

Order: schema and spec checks (a bad ThanosRuler renders nothing: InvalidThanosRuler) -> PrometheusRule
selection (ruleSelector / ruleNamespaceSelector, upstream's rules, render/selection.py) -> rule ConfigMaps
-> config, web-config and TLS Secrets -> input hash -> governing Service and StatefulSet.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from promop.render.model import Decision, Problem, RenderOptions, obj_meta
from promop.render.schema_check import schema_problems
from promop.render.selection import select
from promop.render.store import Store
from promop.render.thanos.args import ManagedArgumentError
from promop.render.store import Reject
from promop.render.thanos.ruler_config import (
    config_secret, remote_write_config, remote_write_problem, tls_assets_secrets,
)
from promop.render.thanos.ruler_meta import GOVERNING_SERVICE_NAME, KIND, MANAGED_BY, owner_reference
from promop.render.thanos.ruler_rules import build_ruler_rule_configmaps
from promop.render.thanos.ruler_statefulset import build_ruler_statefulset
from promop.render.thanos.ruler_args import GRPC_PORT, HTTP_PORT
from promop.render.thanos.ruler_web import ruler_web_tls, web_config_secret
from promop.render.thanos.versions import ThanosVersionError, thanos_version


class InvalidThanosRuler(ValueError):
    """The ThanosRuler cannot be rendered (schema violation or a spec upstream refuses)."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("; ".join(f"{p.field}: {p.message}" for p in problems[:5]))


@dataclass
class RulerInputs:
    ruler: dict
    prometheus_rules: Sequence[dict] = ()
    namespaces: Sequence[dict] = ()
    secrets: Mapping[tuple[str, str], dict] = field(default_factory=dict)
    configmaps: Mapping[tuple[str, str], dict] = field(default_factory=dict)
    options: RenderOptions = field(default_factory=RenderOptions)
    thanos_default_base_image: str | None = None  # overrides options.thanos_default_base_image (tests)


@dataclass
class RulerResult:
    rule_configmaps: list[dict]
    config_secret: dict
    tls_secrets: list[dict]  # -tls-assets-0 .. -n (upstream's ShardedSecret)
    web_config_secret: dict
    service: dict
    statefulset: dict
    selection: list[Decision]
    rejected: list[Problem]
    warnings: list[Problem]
    rule_files: dict[tuple[str, str], tuple[str, str]]
    input_hash: str

    def objects(self) -> list[dict]:
        """Every object to write, in write order (what the pods mount before the StatefulSet)."""
        return [*self.rule_configmaps, self.config_secret, *self.tls_secrets, self.web_config_secret, self.service,
                self.statefulset]

    @property
    def tls_secret(self) -> dict:
        """The first TLS asset Secret (`-tls-assets-0`, always there)."""
        return self.tls_secrets[0]

    def accepted_rules(self) -> list[tuple[str, str]]:
        bad = {(p.namespace, p.name) for p in self.rejected if p.kind == "PrometheusRule"}
        return [(d.namespace, d.name) for d in self.selection if d.selected and (d.namespace, d.name) not in bad]


def spec_problems(ruler: Mapping[str, Any]) -> list[Problem]:
    """Why upstream would refuse this ThanosRuler: schema, no query endpoint/config, bad version, a remote
    write this Thanos cannot run."""
    problems = schema_problems(KIND, ruler)
    if problems:
        return problems
    ns, name = obj_meta(ruler)
    spec = ruler.get("spec") or {}
    if not spec.get("queryEndpoints") and spec.get("queryConfig") is None:
        problems.append(Problem(KIND, ns, name, "spec.queryEndpoints",
                                "one of the queryEndpoints or queryConfig fields should be specified"))
    try:
        version = thanos_version(spec.get("version"), "spec.version")
    except ThanosVersionError as err:
        problems.append(Problem(KIND, ns, name, "spec.version", str(err).partition(": ")[2]))
        return problems
    rw_problem = remote_write_problem(spec, version)
    if rw_problem is not None:
        problems.append(Problem(KIND, ns, name, rw_problem.field, rw_problem.message))
    return problems


def build_ruler_service(ruler: Mapping[str, Any], options: RenderOptions) -> dict:
    """Headless `thanos-ruler-operated` (one per namespace, every ThanosRuler a non-controller owner)."""
    port_name = (ruler.get("spec") or {}).get("portName") or "web"
    md: dict = {"name": GOVERNING_SERVICE_NAME, "namespace": ruler["metadata"].get("namespace", ""),
                "labels": dict(sorted({**MANAGED_BY, "operated-thanos-ruler": "true", **options.labels}.items())),
                "ownerReferences": [owner_reference(ruler, controller=False)]}
    if options.annotations:
        md["annotations"] = dict(sorted(options.annotations.items()))
    return {"apiVersion": "v1", "kind": "Service", "metadata": md, "spec": {
        "clusterIP": "None",
        "ports": [{"name": "grpc", "port": GRPC_PORT, "protocol": "TCP", "targetPort": "grpc"},
                  {"name": port_name, "port": HTTP_PORT, "protocol": "TCP", "targetPort": port_name}],
        "selector": {"app.kubernetes.io/name": "thanos-ruler"},
    }}


def input_hash(ruler: Mapping[str, Any], options: RenderOptions, cm_names: list[str], base_image: str,
               tls_shards: int = 1) -> str:
    """What the StatefulSet is built from (as for Prometheus): a change rolls the pods. The number of TLS
    asset Secrets counts (upstream hashes its ShardedSecret) only past one, so one-shard rulers keep their hash."""
    md = ruler.get("metadata") or {}
    payload = {"labels": md.get("labels") or {}, "annotations": md.get("annotations") or {},
               "generation": md.get("generation"), "spec": ruler.get("spec") or {},
               "options": [dict(options.labels), dict(options.annotations), options.config_reloader_image,
                           options.operator_version, base_image],
               "rule_configmap_names": sorted(set(cm_names))}
    if tls_shards > 1:
        payload["tls_shards"] = tls_shards
    if not options.config_reloader.is_default():  # the reloader flags, only when changed (no roll on upgrade)
        payload["config_reloader"] = options.config_reloader.hash_fields()
    digest = hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).digest()
    return str(int.from_bytes(digest[:8], "big"))


def _namespaces(inputs: RulerInputs) -> list[dict]:
    if inputs.namespaces:
        return list(inputs.namespaces)
    names = {obj_meta(o)[0] for o in inputs.prometheus_rules} | {obj_meta(inputs.ruler)[0]}
    return [{"metadata": {"name": n}} for n in sorted(names)]


def render_ruler(inputs: RulerInputs) -> RulerResult:
    """Every object for one ThanosRuler; raises InvalidThanosRuler when nothing can be rendered."""
    ruler, options = inputs.ruler, inputs.options
    problems = spec_problems(ruler)
    if problems:
        raise InvalidThanosRuler(problems)
    ns, name = obj_meta(ruler)
    spec = ruler.get("spec") or {}
    version = thanos_version(spec.get("version"))
    warnings: list[Problem] = []
    decisions = select(ruler, inputs.prometheus_rules, "PrometheusRule", _namespaces(inputs), warnings)
    warnings = [Problem(KIND, ns, name, w.field, w.message) for w in warnings]
    chosen = {(d.namespace, d.name) for d in decisions if d.selected}
    rules = [dict(r) for r in inputs.prometheus_rules if obj_meta(r) in chosen]
    rules_result = build_ruler_rule_configmaps(ruler, rules, options)
    store = Store(inputs.secrets, inputs.configmaps)
    try:
        web_tls = ruler_web_tls(ruler, store, version)
    except Reject as err:
        raise InvalidThanosRuler([Problem(KIND, ns, name, err.field, err.message)]) from None
    text, assets = remote_write_config(ruler, version, store, warnings)
    tls = tls_assets_secrets(ruler, options, assets)
    cm_names = list(rules_result.names)
    base_image = inputs.thanos_default_base_image or options.thanos_default_base_image
    digest = input_hash(ruler, options, cm_names, base_image, len(tls))
    try:
        sts = build_ruler_statefulset(ruler, options, cm_names, [t["metadata"]["name"] for t in tls], digest,
                                      base_image, web_tls)
    except ManagedArgumentError as err:
        field_, _, message = str(err).partition(": ")
        raise InvalidThanosRuler([Problem(KIND, ns, name, field_, message)]) from None
    return RulerResult(
        rule_configmaps=rules_result.configmaps, config_secret=config_secret(ruler, options, text), tls_secrets=tls,
        web_config_secret=web_config_secret(ruler, options, web_tls), service=build_ruler_service(ruler, options),
        statefulset=sts, selection=decisions, rejected=list(rules_result.rejected),
        warnings=[*warnings, *rules_result.warnings], rule_files=dict(rules_result.rule_files), input_hash=digest,
    )
