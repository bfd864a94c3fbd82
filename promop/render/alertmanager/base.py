"""The base of the generated configuration: the user's Secret, or `spec.alertmanagerConfiguration.global`.

The user's `alertmanager.yaml` is parsed and checked the way upstream's
builder checks it (reference §4): a failure here fails the whole sync, so the
previous generated configuration stays in place and the Alertmanager's status
says why.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

import yaml

from promop.render.alertmanager.common import AMScope, Fatal, Reject, Store
from promop.render.alertmanager.http_config import http_config, tls_config, valid_url
from promop.render.alertmanager.time_intervals import normalise_named

CONFIG_KEY = "alertmanager.yaml"
DEFAULT_CONFIG_TEXT = 'route:\n  receiver: "null"\nreceivers:\n- name: "null"\n'
TOP_LEVEL_KEYS = ("global", "route", "inhibit_rules", "receivers", "mute_time_intervals", "time_intervals", "templates")
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def user_secret_name(alertmanager: Mapping[str, Any]) -> str:
    spec = alertmanager.get("spec") or {}
    return spec.get("configSecret") or f"alertmanager-{alertmanager['metadata']['name']}"


def user_config(alertmanager: Mapping[str, Any], store: Store) -> tuple[str, dict[str, str]]:
    """(alertmanager.yaml text or the built-in default, the Secret's other keys base64-encoded)."""
    md = alertmanager["metadata"]
    secret = store.secrets.get((md["namespace"], user_secret_name(alertmanager)))
    if secret is None:
        return DEFAULT_CONFIG_TEXT, {}
    text = store.get("Secret", md["namespace"], user_secret_name(alertmanager), CONFIG_KEY) or ""
    extra: dict[str, str] = {}
    for key, value in (secret.get("data") or {}).items():
        if key != CONFIG_KEY:
            extra[key] = value
    for key, value in (secret.get("stringData") or {}).items():
        if key != CONFIG_KEY:
            extra[key] = base64.b64encode(str(value).encode()).decode()
    return (text if text.strip() else DEFAULT_CONFIG_TEXT), extra


def _walk_routes(route: Mapping[str, Any], field: str):
    yield route, field
    for i, child in enumerate(route.get("routes") or []):
        if isinstance(child, Mapping):
            yield from _walk_routes(child, f"{field}.routes[{i}]")


def _drop_false_continue(route: dict) -> None:
    if route.get("continue") is False:
        del route["continue"]
    for child in route.get("routes") or []:
        if isinstance(child, dict):
            _drop_false_continue(child)


def check_root_route(route: Any, field: str = "route") -> None:
    """Upstream's root-route rules: present, with a receiver, without matchers, continue or time intervals."""
    if not isinstance(route, Mapping):
        raise Fatal(field, "the configuration needs a root route")
    if not route.get("receiver"):
        raise Fatal(f"{field}.receiver", "the root route needs a receiver")
    for key in ("continue", "matchers", "match", "match_re", "mute_time_intervals", "active_time_intervals"):
        if route.get(key):
            raise Fatal(f"{field}.{key}", f"the root route cannot have {key}")


def parse_base(text: str, where: str) -> dict:
    """The user's alertmanager.yaml as a dict, checked; raises Fatal saying what to fix."""
    try:
        cfg = yaml.load(text, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise Fatal(where, f"invalid YAML{at}: {exc.problem}") from None
    except yaml.YAMLError as exc:
        raise Fatal(where, f"invalid YAML: {exc}") from None
    if not isinstance(cfg, dict):
        raise Fatal(where, "must be a YAML mapping with route and receivers")
    unknown = sorted(set(cfg) - set(TOP_LEVEL_KEYS))
    if unknown:
        raise Fatal(f"{where}: {unknown[0]}", f"unknown top-level field; known: {', '.join(TOP_LEVEL_KEYS)}")
    receivers = cfg.get("receivers") or []
    if not isinstance(receivers, list):
        raise Fatal(f"{where}: receivers", "must be a list")
    names: set[str] = set()
    for i, r in enumerate(receivers):
        if not isinstance(r, dict) or not r.get("name"):
            raise Fatal(f"{where}: receivers[{i}].name", "every receiver needs a name")
        if r["name"] in names:
            raise Fatal(f"{where}: receivers[{i}].name", f"duplicate receiver name {r['name']!r}")
        names.add(r["name"])
    check_root_route(cfg.get("route"), f"{where}: route")
    intervals: set[str] = set()
    for key in ("mute_time_intervals", "time_intervals"):
        if cfg.get(key) is not None:
            cfg[key] = normalise_named(cfg[key], f"{where}: {key}", Fatal)
            intervals |= {e["name"] for e in cfg[key]}
    for route, field in _walk_routes(cfg["route"], f"{where}: route"):
        if route.get("receiver") and route["receiver"] not in names:
            raise Fatal(f"{field}.receiver", f"receiver {route['receiver']!r} is not defined in receivers")
        for key in ("mute_time_intervals", "active_time_intervals"):
            for n in route.get(key) or []:
                if n not in intervals:
                    raise Fatal(f"{field}.{key}", f"time interval {n!r} is not defined")
    _drop_false_continue(cfg["route"])
    if cfg.get("inhibit_rules") is not None and not isinstance(cfg["inhibit_rules"], list):
        raise Fatal(f"{where}: inhibit_rules", "must be a list")
    templates = cfg.get("templates")
    if templates is not None and (not isinstance(templates, list) or not all(isinstance(t, str) for t in templates)):
        raise Fatal(f"{where}: templates", "must be a list of file paths")
    if cfg.get("global") is not None and not isinstance(cfg["global"], dict):
        raise Fatal(f"{where}: global", "must be a mapping")
    return cfg


def _gate(scope: AMScope, present: bool, minimum: str, field: str) -> None:
    if present and not scope.version.at_least(minimum):
        raise Reject(field, f"needs Alertmanager >= v{minimum}, but spec.version is {scope.version}")


def convert_global(scope: AMScope, g: Any, field: str = "spec.alertmanagerConfiguration.global") -> dict:
    """`alertmanagerConfiguration.global` -> `global:` (reference §6.8); raises Reject."""
    if not isinstance(g, Mapping):
        raise Reject(field, "must be a mapping")
    out: dict = {}
    if g.get("resolveTimeout"):
        out["resolve_timeout"] = g["resolveTimeout"]
    if g.get("httpConfig"):
        hc = http_config(scope, g["httpConfig"], f"{field}.httpConfig", amc_gates=False)
        if hc:
            out["http_config"] = hc
    smtp = g.get("smtp")
    if smtp:
        f = f"{field}.smtp"
        _gate(scope, smtp.get("forceImplicitTLS") is not None, "0.31.0", f"{f}.forceImplicitTLS")
        for crd, am in (("from", "smtp_from"), ("hello", "smtp_hello")):
            if smtp.get(crd):
                out[am] = smtp[crd]
        host = smtp.get("smartHost")
        if host:
            if not host.get("host") or not host.get("port"):
                raise Reject(f"{f}.smartHost", "needs host and port")
            out["smtp_smarthost"] = f"{host['host']}:{host['port']}"
        if smtp.get("authUsername"):
            out["smtp_auth_username"] = smtp["authUsername"]
        if smtp.get("authPassword"):
            out["smtp_auth_password"] = scope.secret(smtp["authPassword"], f"{f}.authPassword")
        if smtp.get("authSecret"):
            out["smtp_auth_secret"] = scope.secret(smtp["authSecret"], f"{f}.authSecret")
        if smtp.get("authIdentity"):
            out["smtp_auth_identity"] = smtp["authIdentity"]
        if smtp.get("requireTLS") is not None:
            out["smtp_require_tls"] = bool(smtp["requireTLS"])
        if smtp.get("tlsConfig"):
            # Upstream never ships these files in the tls-assets Secret; we do, so the paths work.
            out["smtp_tls_config"] = tls_config(scope, smtp["tlsConfig"], f"{f}.tlsConfig")
        if smtp.get("forceImplicitTLS") is not None:
            out["smtp_force_implicit_tls"] = bool(smtp["forceImplicitTLS"])
    if g.get("slackApiUrl"):
        out["slack_api_url"] = valid_url(scope.secret(g["slackApiUrl"], f"{field}.slackApiUrl").strip(), f"{field}.slackApiUrl")
    if g.get("opsGenieApiUrl"):
        out["opsgenie_api_url"] = valid_url(scope.secret(g["opsGenieApiUrl"], f"{field}.opsGenieApiUrl").strip(),
                                            f"{field}.opsGenieApiUrl")
    if g.get("opsGenieApiKey"):
        out["opsgenie_api_key"] = scope.secret(g["opsGenieApiKey"], f"{field}.opsGenieApiKey")
    if g.get("pagerdutyUrl"):
        out["pagerduty_url"] = valid_url(g["pagerdutyUrl"], f"{field}.pagerdutyUrl")
    for crd, am, minimum in (("telegram", "telegram_api_url", "0.24.0"), ("jira", "jira_api_url", "0.28.0"),
                             ("webex", "webex_api_url", "0.25.0")):
        if g.get(crd):
            _gate(scope, True, minimum, f"{field}.{crd}")
            if g[crd].get("apiURL"):
                out[am] = valid_url(g[crd]["apiURL"], f"{field}.{crd}.apiURL")
    rc = g.get("rocketChat")
    if rc:
        _gate(scope, True, "0.28.0", f"{field}.rocketChat")
        if rc.get("apiURL"):
            out["rocketchat_api_url"] = valid_url(rc["apiURL"], f"{field}.rocketChat.apiURL")
        if rc.get("token"):
            out["rocketchat_token"] = scope.secret(rc["token"], f"{field}.rocketChat.token")
        if rc.get("tokenID"):
            out["rocketchat_token_id"] = scope.secret(rc["tokenID"], f"{field}.rocketChat.tokenID")
    wc = g.get("wechat")
    if wc:
        if wc.get("apiURL"):
            out["wechat_api_url"] = valid_url(wc["apiURL"], f"{field}.wechat.apiURL")
        if wc.get("apiSecret"):
            out["wechat_api_secret"] = scope.secret(wc["apiSecret"], f"{field}.wechat.apiSecret")
        if wc.get("apiCorpID"):
            out["wechat_api_corp_id"] = wc["apiCorpID"]
    vo = g.get("victorops")
    if vo:
        if vo.get("apiURL"):
            out["victorops_api_url"] = valid_url(vo["apiURL"], f"{field}.victorops.apiURL")
        if vo.get("apiKey"):
            out["victorops_api_key"] = scope.secret(vo["apiKey"], f"{field}.victorops.apiKey")
    mm = g.get("mattermost")
    if mm:
        _gate(scope, True, "0.32.0", f"{field}.mattermost")
        if mm.get("webhookURL"):
            out["mattermost_webhook_url"] = valid_url(scope.secret(mm["webhookURL"], f"{field}.mattermost.webhookURL").strip(),
                                                      f"{field}.mattermost.webhookURL")
    return out
