"""AlertmanagerConfig receivers -> Alertmanager receivers, one converter per type.

Each converter validates as upstream's selection does (a problem raises Reject
with the field path, which rejects the AlertmanagerConfig alone) and maps the
CRD's camelCase fields onto Alertmanager's keys (reference §6.6).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Callable

from promop.render.alertmanager.common import AMScope, Reject, normalise_duration
from promop.render.alertmanager.http_config import http_config, tls_config, url_or_template, valid_url

SLACK_POST_MESSAGE = "https://slack.com/api/chat.postMessage"
_VICTOROPS_RESERVED = frozenset({"routing_key", "message_type", "state_message", "entity_display_name",
                                 "monitoring_tool", "entity_id", "entity_state"})
_OPSGENIE_TYPES = frozenset({"team", "teams", "user", "escalation", "schedule"})
_HOSTPORT = re.compile(r"^(\[[^\]]+\]|[^:\s]+):(\d+)$")


def _copy(src: Mapping[str, Any], out: dict, pairs: tuple[tuple[str, str], ...]) -> None:
    """out[am] = src[crd] for each pair whose value is set (None means unset, "" is kept)."""
    for crd, am in pairs:
        value = src.get(crd)
        if value is not None:
            out[am] = value


def _gate(scope: AMScope, cfg: Mapping[str, Any], key: str, minimum: str, field: str) -> None:
    if cfg.get(key) not in (None, False, "", [], {}) and not scope.version.at_least(minimum):
        raise Reject(f"{field}.{key}", f"needs Alertmanager >= v{minimum}, but spec.version is {scope.version}")


def _type_gate(scope: AMScope, minimum: str, field: str, kind: str) -> None:
    if not scope.version.at_least(minimum):
        raise Reject(field, f"{kind} receivers need Alertmanager >= v{minimum}, but spec.version is {scope.version}")


def _kv_map(items: Any, field: str) -> dict[str, str]:
    if not isinstance(items, list):
        raise Reject(field, "must be a list of {key, value}")
    out = {}
    for i, kv in enumerate(items):
        if not isinstance(kv, Mapping) or not kv.get("key"):
            raise Reject(f"{field}[{i}].key", "every entry needs a key")
        out[str(kv["key"])] = "" if kv.get("value") is None else str(kv["value"])
    return out


def _common(scope: AMScope, cfg: Mapping[str, Any], field: str, out: dict) -> None:
    if cfg.get("sendResolved") is not None:
        out["send_resolved"] = bool(cfg["sendResolved"])
    if cfg.get("httpConfig"):
        hc = http_config(scope, cfg["httpConfig"], f"{field}.httpConfig")
        if hc:
            out["http_config"] = hc


def _duration(cfg: Mapping[str, Any], key: str, out: dict, out_key: str, field: str) -> None:
    if cfg.get(key):
        out[out_key] = normalise_duration(cfg[key], f"{field}.{key}")


def webhook(scope: AMScope, cfg: Mapping[str, Any], field: str, ctx: "ReceiverContext") -> dict:
    out: dict = {}
    _gate(scope, cfg, "payload", "0.32.0", field)
    _common(scope, cfg, field, out)
    if cfg.get("urlSecret"):
        url = scope.secret(cfg["urlSecret"], f"{field}.urlSecret").strip()
        out["url"] = url_or_template(url, f"{field}.urlSecret")
    elif cfg.get("url"):
        out["url"] = url_or_template(cfg["url"], f"{field}.url")
    else:
        raise Reject(field, "one of url or urlSecret must be set")
    if isinstance(cfg.get("maxAlerts"), int) and cfg["maxAlerts"] > 0:
        out["max_alerts"] = cfg["maxAlerts"]
    _duration(cfg, "timeout", out, "timeout", field)
    if cfg.get("payload") is not None:
        out["payload"] = cfg["payload"]
    return out


def email(scope: AMScope, cfg: Mapping[str, Any], field: str, ctx: "ReceiverContext") -> dict:
    _gate(scope, cfg, "threading", "0.30.0", field)
    _gate(scope, cfg, "forceImplicitTLS", "0.31.0", field)
    if not cfg.get("to"):
        raise Reject(f"{field}.to", "the recipient address is missing")
    out: dict = {}
    _common(scope, cfg, field, out)
    _copy(cfg, out, (("to", "to"), ("from", "from"), ("hello", "hello")))
    if cfg.get("smarthost"):
        if not _HOSTPORT.match(str(cfg["smarthost"])):
            raise Reject(f"{field}.smarthost", f"{cfg['smarthost']!r} is not host:port")
        out["smarthost"] = cfg["smarthost"]
    if not out.get("smarthost") and not ctx.global_has("smtp_smarthost"):
        raise Reject(f"{field}.smarthost", "no smarthost here and no smtp_smarthost in the global configuration")
    if not out.get("from") and not ctx.global_has("smtp_from"):
        raise Reject(f"{field}.from", "no from address here and no smtp_from in the global configuration")
    _copy(cfg, out, (("authUsername", "auth_username"),))
    if cfg.get("authPassword"):
        out["auth_password"] = scope.secret(cfg["authPassword"], f"{field}.authPassword")
    if cfg.get("authSecret"):
        out["auth_secret"] = scope.secret(cfg["authSecret"], f"{field}.authSecret")
    _copy(cfg, out, (("authIdentity", "auth_identity"),))
    if cfg.get("headers"):
        headers = _kv_map(cfg["headers"], f"{field}.headers")
        seen: set[str] = set()
        for key in headers:
            if key.lower() in seen:
                raise Reject(f"{field}.headers", f"duplicate header {key!r} (header names are case-insensitive)")
            seen.add(key.lower())
        out["headers"] = headers
    _copy(cfg, out, (("html", "html"), ("text", "text"), ("requireTLS", "require_tls")))
    if cfg.get("tlsConfig"):
        out["tls_config"] = tls_config(scope, cfg["tlsConfig"], f"{field}.tlsConfig")
    if cfg.get("forceImplicitTLS") is not None:
        out["force_implicit_tls"] = bool(cfg["forceImplicitTLS"])
    threading = cfg.get("threading")
    if threading:
        by = threading.get("threadByDate") or "None"
        if by not in ("Daily", "None"):
            raise Reject(f"{field}.threading.threadByDate", f"{by!r} is not Daily or None")
        out["threading"] = {"enabled": True, "thread_by_date": by.lower()}
    return out


def _secret_url(scope: AMScope, ref: Any, field: str) -> str:
    return valid_url(scope.secret(ref, field).strip(), field).strip()


def slack(scope: AMScope, cfg: Mapping[str, Any], field: str, ctx: "ReceiverContext") -> dict:
    _gate(scope, cfg, "messageText", "0.31.0", field)
    _gate(scope, cfg, "updateMessage", "0.32.0", field)
    out: dict = {}
    _common(scope, cfg, field, out)
    if cfg.get("apiURL"):
        out["api_url"] = _secret_url(scope, cfg["apiURL"], f"{field}.apiURL")
    if cfg.get("updateMessage") and out.get("api_url", SLACK_POST_MESSAGE) != SLACK_POST_MESSAGE:
        raise Reject(f"{field}.updateMessage", f"updateMessage needs the API URL {SLACK_POST_MESSAGE}")
    _copy(cfg, out, (("channel", "channel"), ("username", "username"), ("color", "color"), ("title", "title"),
                     ("titleLink", "title_link"), ("pretext", "pretext"), ("text", "text")))
    if cfg.get("fields"):
        fields = []
        for i, f in enumerate(cfg["fields"]):
            if not f.get("title") or not f.get("value"):
                raise Reject(f"{field}.fields[{i}]", "a field needs title and value")
            item = {"title": f["title"], "value": f["value"]}
            if f.get("short") is not None:
                item["short"] = bool(f["short"])
            fields.append(item)
        out["fields"] = fields
    _copy(cfg, out, (("shortFields", "short_fields"), ("footer", "footer"), ("fallback", "fallback"),
                     ("callbackId", "callback_id"), ("iconEmoji", "icon_emoji"), ("iconURL", "icon_url"),
                     ("imageURL", "image_url"), ("thumbURL", "thumb_url"), ("linkNames", "link_names"),
                     ("mrkdwnIn", "mrkdwn_in")))
    if cfg.get("actions"):
        actions = []
        for i, a in enumerate(cfg["actions"]):
            f = f"{field}.actions[{i}]"
            if not a.get("type") or not a.get("text") or not (a.get("url") or a.get("name")):
                raise Reject(f, "an action needs type, text and url or name")
            item: dict = {}
            _copy(a, item, (("type", "type"), ("text", "text"), ("url", "url"), ("style", "style"),
                            ("name", "name"), ("value", "value")))
            if a.get("confirm"):
                c = a["confirm"]
                if not c.get("text"):
                    raise Reject(f"{f}.confirm.text", "a confirm field needs text")
                confirm: dict = {}
                _copy(c, confirm, (("text", "text"), ("title", "title"), ("okText", "ok_text"),
                                   ("dismissText", "dismiss_text")))
                item["confirm"] = confirm
            actions.append(item)
        out["actions"] = actions
    _duration(cfg, "timeout", out, "timeout", field)
    _copy(cfg, out, (("messageText", "message_text"), ("updateMessage", "update_message")))
    return out


def pagerduty(scope: AMScope, cfg: Mapping[str, Any], field: str, ctx: "ReceiverContext") -> dict:
    if not cfg.get("routingKey") and not cfg.get("serviceKey"):
        raise Reject(field, "one of routingKey or serviceKey must be set")
    out: dict = {}
    _common(scope, cfg, field, out)
    if cfg.get("routingKey"):
        out["routing_key"] = scope.secret(cfg["routingKey"], f"{field}.routingKey")
    if cfg.get("serviceKey"):
        out["service_key"] = scope.secret(cfg["serviceKey"], f"{field}.serviceKey")
    if cfg.get("url"):
        out["url"] = valid_url(cfg["url"], f"{field}.url")
    _copy(cfg, out, (("client", "client"),))
    if cfg.get("clientURL"):
        out["client_url"] = url_or_template(cfg["clientURL"], f"{field}.clientURL")
    _copy(cfg, out, (("description", "description"),))
    if cfg.get("details"):
        out["details"] = _kv_map(cfg["details"], f"{field}.details")
    if cfg.get("pagerDutyImageConfigs"):
        images = []
        for i, img in enumerate(cfg["pagerDutyImageConfigs"]):
            item: dict = {}
            _copy(img, item, (("src", "src"), ("alt", "alt"), ("href", "href")))
            if item.get("href"):
                url_or_template(item["href"], f"{field}.pagerDutyImageConfigs[{i}].href")
            images.append(item)
        out["images"] = images
    if cfg.get("pagerDutyLinkConfigs"):
        links = []
        for i, link in enumerate(cfg["pagerDutyLinkConfigs"]):
            item = {}
            _copy(link, item, (("href", "href"), ("alt", "text")))
            if item.get("href"):
                url_or_template(item["href"], f"{field}.pagerDutyLinkConfigs[{i}].href")
            links.append(item)
        out["links"] = links
    _copy(cfg, out, (("severity", "severity"), ("class", "class"), ("group", "group"),
                     ("component", "component"), ("source", "source")))
    _duration(cfg, "timeout", out, "timeout", field)
    return out


def opsgenie(scope: AMScope, cfg: Mapping[str, Any], field: str, ctx: "ReceiverContext") -> dict:
    out: dict = {}
    _common(scope, cfg, field, out)
    if cfg.get("apiKey"):
        out["api_key"] = scope.secret(cfg["apiKey"], f"{field}.apiKey")
    if cfg.get("apiURL"):
        out["api_url"] = valid_url(cfg["apiURL"], f"{field}.apiURL")
    _copy(cfg, out, (("message", "message"), ("description", "description"), ("source", "source"),
                     ("tags", "tags"), ("note", "note"), ("priority", "priority")))
    if cfg.get("details"):
        out["details"] = _kv_map(cfg["details"], f"{field}.details")
    if cfg.get("responders"):
        responders = []
        for i, r in enumerate(cfg["responders"]):
            f = f"{field}.responders[{i}]"
            if not (r.get("id") or r.get("name") or r.get("username")):
                raise Reject(f, "a responder needs one of id, name or username")
            kind = r.get("type") or ""
            if kind not in _OPSGENIE_TYPES and "{{" not in kind:
                raise Reject(f"{f}.type", f"{kind!r} is not one of team, teams, user, escalation, schedule")
            if kind == "teams" and not scope.version.at_least("0.24.0"):
                raise Reject(f"{f}.type", f"type teams needs Alertmanager >= v0.24.0, but spec.version is {scope.version}")
            item: dict = {}
            _copy(r, item, (("id", "id"), ("name", "name"), ("username", "username"), ("type", "type")))
            responders.append(item)
        out["responders"] = responders
    _copy(cfg, out, (("updateAlerts", "update_alerts"), ("entity", "entity"), ("actions", "actions")))
    return out


def wechat(scope: AMScope, cfg: Mapping[str, Any], field: str, ctx: "ReceiverContext") -> dict:
    out: dict = {}
    _common(scope, cfg, field, out)
    if cfg.get("apiSecret"):
        out["api_secret"] = scope.secret(cfg["apiSecret"], f"{field}.apiSecret")
    if cfg.get("apiURL"):
        out["api_url"] = valid_url(cfg["apiURL"], f"{field}.apiURL")
    _copy(cfg, out, (("corpID", "corp_id"), ("agentID", "agent_id"), ("toUser", "to_user"), ("toParty", "to_party"),
                     ("toTag", "to_tag"), ("message", "message"), ("messageType", "message_type")))
    return out


def victorops(scope: AMScope, cfg: Mapping[str, Any], field: str, ctx: "ReceiverContext") -> dict:
    if not cfg.get("routingKey"):
        raise Reject(f"{field}.routingKey", "the routing key is missing")
    out: dict = {}
    _common(scope, cfg, field, out)
    if cfg.get("apiKey"):
        out["api_key"] = scope.secret(cfg["apiKey"], f"{field}.apiKey")
    if cfg.get("apiUrl"):
        out["api_url"] = valid_url(cfg["apiUrl"], f"{field}.apiUrl")
    _copy(cfg, out, (("routingKey", "routing_key"), ("messageType", "message_type"),
                     ("entityDisplayName", "entity_display_name"), ("stateMessage", "state_message"),
                     ("monitoringTool", "monitoring_tool")))
    if cfg.get("customFields"):
        custom = _kv_map(cfg["customFields"], f"{field}.customFields")
        reserved = sorted(set(custom) & _VICTOROPS_RESERVED)
        if reserved:
            raise Reject(f"{field}.customFields", f"{reserved[0]!r} is a reserved VictorOps field")
        out["custom_fields"] = custom
    return out


def pushover(scope: AMScope, cfg: Mapping[str, Any], field: str, ctx: "ReceiverContext") -> dict:
    user_key = scope.secret(cfg["userKey"], f"{field}.userKey") if cfg.get("userKey") else ""
    if not user_key:
        raise Reject(f"{field}.userKey", "mandatory field userKey is empty (userKeyFile alone is not supported)")
    token = scope.secret(cfg["token"], f"{field}.token") if cfg.get("token") else ""
    if not token:
        raise Reject(f"{field}.token", "mandatory field token is empty (tokenFile alone is not supported)")
    if cfg.get("html") and cfg.get("monospace"):
        raise Reject(field, "html and monospace are mutually exclusive")
    out: dict = {}
    _common(scope, cfg, field, out)
    out["user_key"] = user_key
    out["token"] = token
    _copy(cfg, out, (("title", "title"), ("message", "message")))
    if cfg.get("url"):
        out["url"] = url_or_template(cfg["url"], f"{field}.url")
    _copy(cfg, out, (("urlTitle", "url_title"),))
    _duration(cfg, "ttl", out, "ttl", field)
    _copy(cfg, out, (("device", "device"), ("priority", "priority")))
    _duration(cfg, "retry", out, "retry", field)
    _duration(cfg, "expire", out, "expire", field)
    _copy(cfg, out, (("html", "html"), ("monospace", "monospace")))
    return out


def sns(scope: AMScope, cfg: Mapping[str, Any], field: str, ctx: "ReceiverContext") -> dict:
    _gate(scope, cfg, "useAWSHTTPClient", "0.33.0", field)
    empty = [not cfg.get(k) for k in ("targetARN", "topicARN", "phoneNumber")]
    if (empty[0] != empty[1]) != empty[2]:
        raise Reject(field, "set exactly one of targetARN, topicARN or phoneNumber")
    out: dict = {}
    _common(scope, cfg, field, out)
    if cfg.get("apiURL"):
        out["api_url"] = url_or_template(cfg["apiURL"], f"{field}.apiURL")
    sig = cfg.get("sigv4")
    if sig:
        s: dict = {}
        _copy(sig, s, (("region", "region"),))
        if sig.get("accessKey") and sig.get("secretKey"):
            s["access_key"] = scope.secret(sig["accessKey"], f"{field}.sigv4.accessKey")
            s["secret_key"] = scope.secret(sig["secretKey"], f"{field}.sigv4.secretKey")
        _copy(sig, s, (("profile", "profile"), ("roleArn", "role_arn")))
        if sig.get("externalId"):
            if not sig.get("roleArn"):
                raise Reject(f"{field}.sigv4.externalId", "externalId needs roleArn")
            s["external_id"] = sig["externalId"]
        out["sigv4"] = s
    _copy(cfg, out, (("topicARN", "topic_arn"), ("phoneNumber", "phone_number"), ("targetARN", "target_arn"),
                     ("subject", "subject"), ("message", "message"), ("attributes", "attributes")))
    if cfg.get("useAWSHTTPClient") is not None:
        out["use_aws_http_client"] = bool(cfg["useAWSHTTPClient"])
    return out


def telegram(scope: AMScope, cfg: Mapping[str, Any], field: str, ctx: "ReceiverContext") -> dict:
    _type_gate(scope, "0.24.0", field, "telegram")
    _gate(scope, cfg, "botTokenFile", "0.26.0", field)
    if bool(cfg.get("botToken")) == bool(cfg.get("botTokenFile")):
        raise Reject(field, "set exactly one of botToken or botTokenFile")
    if not cfg.get("chatID"):
        raise Reject(f"{field}.chatID", "the chat ID must be set and non-zero")
    out: dict = {}
    _common(scope, cfg, field, out)
    if cfg.get("apiURL"):
        out["api_url"] = valid_url(cfg["apiURL"], f"{field}.apiURL")
    if cfg.get("botToken"):
        token = scope.secret(cfg["botToken"], f"{field}.botToken")
        if not token:
            raise Reject(f"{field}.botToken", "the bot token is empty")
        out["bot_token"] = token
    _copy(cfg, out, (("botTokenFile", "bot_token_file"), ("chatID", "chat_id"),
                     ("messageThreadID", "message_thread_id"), ("message", "message"),
                     ("disableNotifications", "disable_notifications"), ("parseMode", "parse_mode")))
    return out


def discord(scope: AMScope, cfg: Mapping[str, Any], field: str, ctx: "ReceiverContext") -> dict:
    _type_gate(scope, "0.25.0", field, "discord")
    if not cfg.get("apiURL"):
        raise Reject(f"{field}.apiURL", "the webhook URL Secret reference is missing")
    out: dict = {}
    _common(scope, cfg, field, out)
    out["webhook_url"] = _secret_url(scope, cfg["apiURL"], f"{field}.apiURL")
    _copy(cfg, out, (("title", "title"), ("message", "message"), ("content", "content"), ("username", "username"),
                     ("avatarURL", "avatar_url")))
    return out


def webex(scope: AMScope, cfg: Mapping[str, Any], field: str, ctx: "ReceiverContext") -> dict:
    _type_gate(scope, "0.25.0", field, "webex")
    if not cfg.get("roomID"):
        raise Reject(f"{field}.roomID", "the room ID is missing")
    out: dict = {}
    _common(scope, cfg, field, out)
    if cfg.get("apiURL"):
        out["api_url"] = valid_url(cfg["apiURL"], f"{field}.apiURL")
    out["room_id"] = cfg["roomID"]
    _copy(cfg, out, (("message", "message"),))
    return out


def msteams(scope: AMScope, cfg: Mapping[str, Any], field: str, ctx: "ReceiverContext") -> dict:
    _type_gate(scope, "0.26.0", field, "msteams")
    if not cfg.get("webhookUrl"):
        raise Reject(f"{field}.webhookUrl", "the webhook URL Secret reference is missing")
    out: dict = {}
    _common(scope, cfg, field, out)
    out["webhook_url"] = _secret_url(scope, cfg["webhookUrl"], f"{field}.webhookUrl")
    _copy(cfg, out, (("title", "title"), ("summary", "summary"), ("text", "text")))
    return out


def msteamsv2(scope: AMScope, cfg: Mapping[str, Any], field: str, ctx: "ReceiverContext") -> dict:
    _type_gate(scope, "0.28.0", field, "msteamsv2")
    if not cfg.get("webhookURL"):
        raise Reject(f"{field}.webhookURL", "the webhook URL Secret reference is missing")
    out: dict = {}
    _common(scope, cfg, field, out)
    out["webhook_url"] = _secret_url(scope, cfg["webhookURL"], f"{field}.webhookURL")
    _copy(cfg, out, (("title", "title"), ("text", "text")))
    return out


def rocketchat(scope: AMScope, cfg: Mapping[str, Any], field: str, ctx: "ReceiverContext") -> dict:
    _type_gate(scope, "0.28.0", field, "rocketchat")
    out: dict = {}
    _common(scope, cfg, field, out)
    if cfg.get("apiURL"):
        out["api_url"] = valid_url(cfg["apiURL"], f"{field}.apiURL")
    _copy(cfg, out, (("channel", "channel"),))
    if cfg.get("token"):
        out["token"] = scope.secret(cfg["token"], f"{field}.token")
    if cfg.get("tokenID"):
        out["token_id"] = scope.secret(cfg["tokenID"], f"{field}.tokenID")
    _copy(cfg, out, (("color", "color"), ("emoji", "emoji"), ("iconURL", "icon_url"), ("text", "text"),
                     ("title", "title"), ("titleLink", "title_link")))
    if cfg.get("fields"):
        fields = []
        for f in cfg["fields"]:
            item: dict = {}
            _copy(f, item, (("title", "title"), ("value", "value"), ("short", "short")))
            fields.append(item)
        out["fields"] = fields
    out["short_fields"] = bool(cfg.get("shortFields"))
    _copy(cfg, out, (("imageURL", "image_url"), ("thumbURL", "thumb_url")))
    out["link_names"] = bool(cfg.get("linkNames"))
    if cfg.get("actions"):
        actions = []
        for a in cfg["actions"]:
            item = {}
            _copy(a, item, (("text", "text"), ("url", "url"), ("msg", "msg")))
            actions.append(item)
        out["actions"] = actions
    return out


class ReceiverContext:
    """What receiver conversion needs from the configuration being built (the base `global`)."""

    def __init__(self, global_config: Mapping[str, Any] | None):
        self.global_config = global_config or {}

    def global_has(self, key: str) -> bool:
        return bool(self.global_config.get(key))


# CRD list -> (Alertmanager list, converter), in upstream's receiver field order.
CONVERTERS: dict[str, tuple[str, Callable[..., dict]]] = {
    "opsgenieConfigs": ("opsgenie_configs", opsgenie),
    "pagerdutyConfigs": ("pagerduty_configs", pagerduty),
    "discordConfigs": ("discord_configs", discord),
    "slackConfigs": ("slack_configs", slack),
    "webhookConfigs": ("webhook_configs", webhook),
    "wechatConfigs": ("wechat_configs", wechat),
    "emailConfigs": ("email_configs", email),
    "victoropsConfigs": ("victorops_configs", victorops),
    "pushoverConfigs": ("pushover_configs", pushover),
    "snsConfigs": ("sns_configs", sns),
    "telegramConfigs": ("telegram_configs", telegram),
    "webexConfigs": ("webex_configs", webex),
    "msteamsConfigs": ("msteams_configs", msteams),
    "msteamsv2Configs": ("msteamsv2_configs", msteamsv2),
    "rocketchatConfigs": ("rocketchat_configs", rocketchat),
}


_CONVERTER_ORDER = {k: i for i, k in enumerate(CONVERTERS)}


def convert_receiver(scope: AMScope, receiver: Mapping[str, Any], field: str, name: str,
                     ctx: ReceiverContext) -> dict:
    """One CRD receiver -> {"name": name, "<type>_configs": [...]}."""
    out: dict = {"name": name}
    present = [k for k in receiver if k in CONVERTERS]  # a receiver has one or two types, not all 15
    if len(present) > 1:
        present.sort(key=_CONVERTER_ORDER.__getitem__)  # output in upstream's order whatever the input's
    for crd_key in present:
        am_key, convert = CONVERTERS[crd_key]
        configs = receiver[crd_key]
        if not configs:
            continue
        if not isinstance(configs, list):
            raise Reject(f"{field}.{crd_key}", "must be a list")
        out[am_key] = [convert(scope, c if isinstance(c, Mapping) else {}, f"{field}.{crd_key}[{i}]", ctx)
                       for i, c in enumerate(configs)]
    return out
