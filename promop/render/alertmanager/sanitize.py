"""Version gates on the final Alertmanager configuration (upstream's `sanitize`), reference §7.

Applied to the user's base configuration and to every converted
AlertmanagerConfig. A field the target Alertmanager does not know is dropped
with a warning; a combination it would refuse raises `error` (Fatal for the
base configuration, Reject for one AlertmanagerConfig, so one object never
breaks the others).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Callable

from promop.render.alertmanager.common import Version, normalise_duration

Warn = Callable[[str, str], None]

# (key, minimum version): dropped below it.
_GLOBAL_DROPS = (
    ("smtp_tls_config", "0.28.0"), ("slack_api_url_file", "0.22.0"), ("slack_app_token", "0.30.0"),
    ("slack_app_token_file", "0.30.0"), ("slack_app_url", "0.30.0"), ("opsgenie_api_key_file", "0.24.0"),
    ("smtp_auth_password_file", "0.25.0"), ("victorops_api_key_file", "0.25.0"), ("wechat_api_secret_file", "0.31.0"),
    ("telegram_bot_token", "0.31.0"), ("telegram_bot_token_file", "0.31.0"), ("smtp_auth_secret_file", "0.31.0"),
    ("smtp_force_implicit_tls", "0.31.0"), ("mattermost_webhook_url", "0.32.0"), ("mattermost_webhook_url_file", "0.32.0"),
)
_RECEIVER_DROPS: dict[str, tuple[tuple[str, str], ...]] = {
    "email_configs": (("auth_password_file", "0.25.0"), ("force_implicit_tls", "0.31.0"), ("auth_secret_file", "0.31.0"),
                      ("threading", "0.30.0")),
    "opsgenie_configs": (("actions", "0.24.0"), ("entity", "0.24.0"), ("update_alerts", "0.24.0"), ("api_key_file", "0.24.0")),
    "pagerduty_configs": (("source", "0.25.0"), ("routing_key_file", "0.25.0"), ("service_key_file", "0.25.0"),
                          ("timeout", "0.30.0")),
    "pushover_configs": (("user_key_file", "0.26.0"), ("token_file", "0.26.0"), ("device", "0.26.0"), ("ttl", "0.27.0"),
                         ("monospace", "0.29.0")),
    "slack_configs": (("api_url_file", "0.22.0"), ("timeout", "0.30.0"), ("app_token", "0.30.0"), ("app_token_file", "0.30.0"),
                      ("app_url", "0.30.0"), ("message_text", "0.31.0"), ("update_message", "0.32.0")),
    "victorops_configs": (("api_key_file", "0.25.0"),),
    "webhook_configs": (("url_file", "0.26.0"), ("timeout", "0.28.0"), ("payload", "0.32.0")),
    "wechat_configs": (("api_secret_file", "0.31.0"),),
    "sns_configs": (("use_aws_http_client", "0.33.0"),),
    "telegram_configs": (("chat_id_file", "0.31.0"), ("bot_token_file", "0.26.0"), ("message_thread_id", "0.26.0")),
    "discord_configs": (("content", "0.28.0"), ("username", "0.28.0"), ("avatar_url", "0.28.0")),
    "msteams_configs": (("summary", "0.27.0"),),
    "jira_configs": (("api_type", "0.29.0"),),
}
# Receiver types Alertmanager only knows from a version on: older ones refuse the whole config.
_RECEIVER_MINIMUM = {
    "telegram_configs": "0.24.0", "discord_configs": "0.25.0", "webex_configs": "0.25.0", "msteams_configs": "0.26.0",
    "msteamsv2_configs": "0.28.0", "jira_configs": "0.28.0", "rocketchat_configs": "0.28.0",
    "mattermost_configs": "0.30.0", "incidentio_configs": "0.29.0",
}
# A value wins over its _file variant.
_FILE_PAIRS = ("user_key", "token", "api_key", "api_url", "url", "auth_password", "auth_secret", "api_secret",
               "bot_token", "routing_key", "service_key", "webhook_url", "chat_id", "app_token")
_GLOBAL_FILE_PAIRS = ("slack_api_url", "opsgenie_api_key", "smtp_auth_password", "smtp_auth_secret",
                      "victorops_api_key", "wechat_api_secret", "telegram_bot_token", "mattermost_webhook_url",
                      "slack_app_token")
_TLS_VERSIONS = ("TLS10", "TLS11", "TLS12", "TLS13")


class Sanitizer:
    """Version gates for one target version; `error(field, message)` is raised for refusals."""

    def __init__(self, version: Version, warn: Warn, error: type[Exception]):
        self.version = version
        self.warn = warn
        self.error = error

    def _below(self, minimum: str) -> bool:
        return not self.version.at_least(minimum)

    def _drop(self, obj: dict, key: str, minimum: str, field: str) -> None:
        if key in obj and self._below(minimum):
            del obj[key]
            self.warn(f"{field}.{key}", f"dropped: needs Alertmanager >= v{minimum}, but spec.version is {self.version}")

    def _file_pairs(self, obj: dict, pairs: tuple[str, ...]) -> None:
        for key in pairs:
            if obj.get(key) and obj.get(f"{key}_file"):
                del obj[f"{key}_file"]

    def config(self, cfg: dict) -> None:
        """The whole configuration, in place."""
        if "global" in cfg and isinstance(cfg["global"], dict):
            self.global_(cfg["global"], "global")
        if isinstance(cfg.get("route"), dict):
            self.route(cfg["route"], "route")
        for i, rule in enumerate(cfg.get("inhibit_rules") or []):
            self.inhibit_rule(rule, f"inhibit_rules[{i}]")
        for i, receiver in enumerate(cfg.get("receivers") or []):
            self.receiver(receiver, f"receivers[{i}]")
        self._drop(cfg, "mute_time_intervals", "0.22.0", "config")
        self._drop(cfg, "time_intervals", "0.24.0", "config")
        for key in ("mute_time_intervals", "time_intervals"):
            for i, entry in enumerate(cfg.get(key) or []):
                self.time_intervals(entry, f"{key}[{i}]")

    def time_intervals(self, entry: dict, field: str) -> None:
        for j, ti in enumerate(entry.get("time_intervals") or []):
            if isinstance(ti, dict):
                self._drop(ti, "location", "0.25.0", f"{field}.time_intervals[{j}]")

    def global_(self, g: dict, field: str) -> None:
        self._file_pairs(g, _GLOBAL_FILE_PAIRS)
        for key, minimum in _GLOBAL_DROPS:
            self._drop(g, key, minimum, field)
        if g.get("slack_app_token") and g.get("slack_api_url") and g.get("slack_api_url") != g.get("slack_app_url"):
            raise self.error(f"{field}.slack_app_token", "slack_app_token cannot be combined with a different slack_api_url")
        if isinstance(g.get("http_config"), dict):
            self.http_config(g["http_config"], f"{field}.http_config")
        if isinstance(g.get("smtp_tls_config"), dict):
            self.tls_config(g["smtp_tls_config"], f"{field}.smtp_tls_config")
        for key in ("resolve_timeout",):
            if key in g:
                g[key] = self._duration(g[key], f"{field}.{key}")

    def _duration(self, value: Any, field: str) -> str:
        return normalise_duration(value, field, self.error)

    def tls_config(self, tls: dict, field: str) -> None:
        tls.setdefault("insecure_skip_verify", False)
        for key in ("min_version", "max_version"):
            if key in tls and tls[key] not in _TLS_VERSIONS:
                raise self.error(f"{field}.{key}", f"{tls[key]!r} is not a TLS version; use one of {', '.join(_TLS_VERSIONS)}")
            self._drop(tls, key, "0.25.0", field)
        if "min_version" in tls and "max_version" in tls and tls["min_version"] > tls["max_version"]:
            raise self.error(field, "min_version is above max_version")

    def http_config(self, hc: dict, field: str) -> None:
        for key in ("authorization", "oauth2"):
            if key in hc and self._below("0.22.0"):
                raise self.error(f"{field}.{key}", f"needs Alertmanager >= v0.22.0, but spec.version is {self.version}")
        self._drop(hc, "follow_redirects", "0.22.0", field)
        self._drop(hc, "enable_http2", "0.25.0", field)
        self._drop(hc, "http_headers", "0.28.0", field)
        for key in ("proxy_from_environment", "no_proxy", "proxy_connect_header"):
            self._drop(hc, key, "0.26.0", field)
        if isinstance(hc.get("oauth2"), dict):
            for key in ("proxy_url", "no_proxy", "proxy_from_environment", "proxy_connect_header"):
                self._drop(hc["oauth2"], key, "0.25.0", f"{field}.oauth2")
            if isinstance(hc["oauth2"].get("tls_config"), dict):
                self.tls_config(hc["oauth2"]["tls_config"], f"{field}.oauth2.tls_config")
        if isinstance(hc.get("tls_config"), dict):
            self.tls_config(hc["tls_config"], f"{field}.tls_config")
        if self.version.at_least("0.26.0"):
            if hc.get("proxy_connect_header") and not (hc.get("proxy_url") or hc.get("proxy_from_environment")):
                raise self.error(f"{field}.proxy_connect_header", "needs proxy_url or proxy_from_environment")
            if hc.get("proxy_from_environment") and hc.get("proxy_url"):
                raise self.error(f"{field}.proxy_from_environment", "cannot be combined with proxy_url")
            if hc.get("proxy_from_environment") and hc.get("no_proxy"):
                raise self.error(f"{field}.no_proxy", "cannot be combined with proxy_from_environment")
            if hc.get("no_proxy") and not hc.get("proxy_url"):
                raise self.error(f"{field}.no_proxy", "needs proxy_url")

    def route(self, route: dict, field: str) -> None:
        self._drop(route, "mute_time_intervals", "0.22.0", field)
        self._drop(route, "active_time_intervals", "0.24.0", field)
        if route.get("matchers") and self._below("0.22.0"):
            raise self.error(f"{field}.matchers", f"matchers need Alertmanager >= v0.22.0, but spec.version is {self.version}")
        for key in ("group_wait", "group_interval", "repeat_interval"):
            if key in route:
                value = self._duration(route[key], f"{field}.{key}")
                if value == "0s" and key != "group_wait":
                    del route[key]
                else:
                    route[key] = value
        for i, child in enumerate(route.get("routes") or []):
            if isinstance(child, dict):
                self.route(child, f"{field}.routes[{i}]")

    def inhibit_rule(self, rule: dict, field: str) -> None:
        for key in ("source_matchers", "target_matchers"):
            if rule.get(key) and self._below("0.22.0"):
                raise self.error(f"{field}.{key}", f"needs Alertmanager >= v0.22.0, but spec.version is {self.version}")

    def receiver(self, receiver: dict, field: str) -> None:
        for key in list(receiver):
            configs = receiver[key]
            if key == "name" or not isinstance(configs, list):
                continue
            minimum = _RECEIVER_MINIMUM.get(key)
            if minimum and self._below(minimum) and configs:
                raise self.error(f"{field}.{key}", f"needs Alertmanager >= v{minimum}, but spec.version is {self.version}")
            for i, cfg in enumerate(configs):
                if isinstance(cfg, dict):
                    self.receiver_config(key, cfg, f"{field}.{key}[{i}]")

    def receiver_config(self, kind: str, cfg: dict, field: str) -> None:
        self._file_pairs(cfg, _FILE_PAIRS)
        for key, minimum in _RECEIVER_DROPS.get(kind, ()):
            self._drop(cfg, key, minimum, field)
        if isinstance(cfg.get("http_config"), dict):
            self.http_config(cfg["http_config"], f"{field}.http_config")
        if isinstance(cfg.get("tls_config"), dict):
            self.tls_config(cfg["tls_config"], f"{field}.tls_config")
        if kind == "sns_configs" and isinstance(cfg.get("sigv4"), dict):
            sig = cfg["sigv4"]
            self._drop(sig, "external_id", "0.33.0", f"{field}.sigv4")
            if sig.get("external_id") and not sig.get("role_arn"):
                raise self.error(f"{field}.sigv4.external_id", "external_id needs role_arn")
        elif kind == "email_configs" and isinstance(cfg.get("threading"), dict):
            by = cfg["threading"].get("thread_by_date")
            if by not in (None, "", "daily", "none"):
                raise self.error(f"{field}.threading.thread_by_date", f"{by!r} is not daily or none")
        elif kind == "slack_configs":
            if cfg.get("update_message") and cfg.get("api_url") not in (None, "https://slack.com/api/chat.postMessage"):
                raise self.error(f"{field}.update_message", "needs api_url https://slack.com/api/chat.postMessage")
            if (cfg.get("app_token") or cfg.get("app_token_file")) and (cfg.get("api_url") or cfg.get("api_url_file")):
                raise self.error(f"{field}.app_token", "app_token cannot be combined with api_url")
        elif kind == "pushover_configs":
            if cfg.get("html") and cfg.get("monospace"):
                raise self.error(field, "html and monospace are mutually exclusive")
        elif kind == "pagerduty_configs" and self._below("0.30.0"):
            for k, v in (cfg.get("details") or {}).items():
                if not isinstance(v, str):
                    raise self.error(f"{field}.details.{k}", "non-string details need Alertmanager >= v0.30.0")
        elif kind == "opsgenie_configs" and self._below("0.24.0"):
            for j, r in enumerate(cfg.get("responders") or []):
                if isinstance(r, Mapping) and r.get("type") == "teams":
                    raise self.error(f"{field}.responders[{j}].type", "type teams needs Alertmanager >= v0.24.0")
        elif kind == "webex_configs" and not cfg.get("room_id"):
            raise self.error(f"{field}.room_id", "room_id is empty")
        elif kind == "msteamsv2_configs" and bool(cfg.get("webhook_url")) == bool(cfg.get("webhook_url_file")):
            raise self.error(field, "set exactly one of webhook_url or webhook_url_file")
        elif kind == "rocketchat_configs" and cfg.get("token") and cfg.get("token_file"):
            raise self.error(field, "set token or token_file, not both")
