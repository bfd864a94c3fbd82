"""spec.otlp -> the `otlp` section of the Prometheus config, as upstream 0.93 generates it.

Why the rules: Prometheus reads `otlp` from 2.55.0 and each setting from a later version, so
a setting is written only from the version that reads it (else dropped with a warning, like
upstream's WithMinimumVersion). What upstream refuses (an `otlp` for a Prometheus that has none,
a strategy the version or the name validation scheme cannot honour, contradictory attribute
promotion) stops the whole Prometheus with one reason, as upstream's reconcile fails.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from promop.render.context import GenContext
from promop.render.model import Problem
from promop.render.schema_check import InvalidPrometheus
from promop.render.store import Scope
from promop.render.versions import Version

OTLP_SINCE = "2.55.0"
TRANSLATION_STRATEGY_SINCE = "3.0.0"
NO_TRANSLATION_SINCE = "3.4.0"
PROMOTE_ALL_SINCE = "3.5.0"
# spec.otlp field -> (config key, first Prometheus version that reads it), in upstream's order.
FIELDS = (
    ("promoteResourceAttributes", "promote_resource_attributes", OTLP_SINCE),
    ("translationStrategy", "translation_strategy", TRANSLATION_STRATEGY_SINCE),
    ("keepIdentifyingResourceAttributes", "keep_identifying_resource_attributes", "3.1.0"),
    ("convertHistogramsToNHCB", "convert_histograms_to_nhcb", "3.4.0"),
    ("promoteAllResourceAttributes", "promote_all_resource_attributes", PROMOTE_ALL_SINCE),
    ("ignoreResourceAttributes", "ignore_resource_attributes", PROMOTE_ALL_SINCE),
    ("promoteScopeMetadata", "promote_scope_metadata", "3.6.0"),
    ("labelNameUnderscoreSanitization", "label_name_underscore_sanitization", "3.8.0"),
    ("labelNamePreserveMultipleUnderscores", "label_name_preserve_multiple_underscores", "3.8.0"),
)
# Strategies that keep UTF-8 names, which Prometheus refuses under the legacy name validation scheme.
UTF8_STRATEGIES = ("NoUTF8EscapingWithSuffixes", "NoTranslation")


def otlp_problems(spec: Mapping[str, Any], version: Version) -> list[tuple[str, str]]:
    """(field, reason) for each spec.otlp setting upstream refuses for this Prometheus version."""
    otlp = spec.get("otlp")
    if otlp is None:
        return []
    if not isinstance(otlp, Mapping):
        return [("spec.otlp", f"must be a mapping of OTLP settings, got {otlp!r}")]
    if not version.at_least(OTLP_SINCE):
        return [("spec.otlp", f"Prometheus reads an otlp section only from v{OTLP_SINCE}, but spec.version is "
                              f"{version}; raise spec.version or remove spec.otlp")]
    out = []
    strategy = otlp.get("translationStrategy")
    if strategy == "NoTranslation" and not version.at_least(NO_TRANSLATION_SINCE):
        out.append(("spec.otlp.translationStrategy", f"NoTranslation needs Prometheus >= v{NO_TRANSLATION_SINCE}, "
                                                     f"but spec.version is {version}; choose another strategy"))
    elif (strategy in UTF8_STRATEGIES and spec.get("nameValidationScheme") == "Legacy"
          and version.at_least(TRANSLATION_STRATEGY_SINCE)):
        out.append(("spec.otlp.translationStrategy", f"{strategy} keeps UTF-8 metric names, which "
                    "spec.nameValidationScheme Legacy forbids; use UnderscoreEscapingWithSuffixes or the UTF8 scheme"))
    if version.at_least(PROMOTE_ALL_SINCE):  # below, both fields are dropped: nothing contradicts
        promote_all = otlp.get("promoteAllResourceAttributes") is True
        if promote_all and otlp.get("promoteResourceAttributes"):
            out.append(("spec.otlp.promoteResourceAttributes", "cannot be set when promoteAllResourceAttributes is "
                        "true; list the attributes to leave out in ignoreResourceAttributes instead"))
        if otlp.get("ignoreResourceAttributes") and not promote_all:
            out.append(("spec.otlp.ignoreResourceAttributes", "is read only when promoteAllResourceAttributes is "
                        "true; set it, or list the attributes to keep in promoteResourceAttributes"))
    return out


def otlp_section(ctx: GenContext, scope: Scope) -> dict:
    """{"otlp": {...}} to merge into the config's tail, or {} when nothing is set (or all was dropped).

    Raises InvalidPrometheus when upstream would refuse the settings (otlp_problems)."""
    otlp = ctx.spec.get("otlp")
    if otlp is None:
        return {}
    problems = otlp_problems(ctx.spec, ctx.version)
    if problems:
        raise InvalidPrometheus([Problem("Prometheus", ctx.namespace, ctx.name, f, m) for f, m in problems])
    out: dict = {}
    for spec_key, key, minimum in FIELDS:
        value = otlp.get(spec_key)
        if value is None or (isinstance(value, list) and not value):
            continue
        scope.put(out, key, list(value) if isinstance(value, list) else value, minimum, f"spec.otlp.{spec_key}")
    return {"otlp": out} if out else {}


def receiver_enabled(spec: Mapping[str, Any]) -> bool:
    """spec.enableOTLPReceiver when set; unset, an `otlp` section turns the receiver on (upstream's
    BuildCommonPrometheusArgs: the section configures what the receiver ingests, so asking for it asks for the
    receiver, but an explicit `false` wins)."""
    explicit = spec.get("enableOTLPReceiver")
    if explicit is not None:
        return bool(explicit)
    return spec.get("otlp") is not None
