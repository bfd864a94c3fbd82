"""One test per receiver type: CRD fields -> Alertmanager keys, Secrets resolved, amtool where 0.25 can load it."""

from __future__ import annotations

import pytest
import yaml

from promop.render.alertmanager.common import Version
from promop.render.alertmanager.config import build_config
from promop.render.alertmanager.receivers import CONVERTERS

from .helpers import SIMPLE_BASE, alertmanager, amc, amtool_check, base_secret, secret, store_of

S = secret("creds", **{"key": "s3cr3t", "url": " https://hooks.example.com/x \n", "token": "tok", "user": "usr",
                       "ca": "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"})


def ref(key: str) -> dict:
    return {"name": "creds", "key": key}


# crd list, one CRD config, expected Alertmanager config, version to render for
CASES = {
    "webhookConfigs": ({"url": "https://example.com/hook", "maxAlerts": 5, "sendResolved": False,
                        "httpConfig": {"basicAuth": {"username": ref("user"), "password": ref("key")},
                                       "tlsConfig": {"ca": {"secret": ref("ca")}, "serverName": "x"}}},
                       {"url": "https://example.com/hook", "max_alerts": 5, "send_resolved": False,
                        "http_config": {"basic_auth": {"username": "usr", "password": "s3cr3t"},
                                        "tls_config": {"ca_file": "/etc/alertmanager/certs/0_team_creds_ca",
                                                       "server_name": "x", "insecure_skip_verify": False}}},
                       "v0.25.0"),
    "emailConfigs": ({"to": "a@example.com", "from": "am@example.com", "smarthost": "smtp.example.com:587",
                      "authUsername": "am", "authPassword": ref("key"), "headers": [{"key": "X-Team", "value": "t"}],
                      "requireTLS": True, "html": ""},
                     {"to": "a@example.com", "from": "am@example.com", "smarthost": "smtp.example.com:587",
                      "auth_username": "am", "auth_password": "s3cr3t", "headers": {"X-Team": "t"}, "require_tls": True,
                      "html": ""},
                     "v0.25.0"),
    "slackConfigs": ({"apiURL": ref("url"), "channel": "#alerts", "title": "t", "sendResolved": True,
                      "fields": [{"title": "a", "value": "b", "short": True}]},
                     {"api_url": "https://hooks.example.com/x", "channel": "#alerts", "title": "t", "send_resolved": True,
                      "fields": [{"title": "a", "value": "b", "short": True}]},
                     "v0.25.0"),
    "pagerdutyConfigs": ({"serviceKey": ref("key"), "url": "https://events.pagerduty.com/v2/enqueue",
                          "details": [{"key": "k", "value": "v"}], "severity": "critical"},
                         {"service_key": "s3cr3t", "url": "https://events.pagerduty.com/v2/enqueue",
                          "details": {"k": "v"}, "severity": "critical"},
                         "v0.25.0"),
    "opsgenieConfigs": ({"apiKey": ref("key"), "apiURL": "https://api.opsgenie.com/", "priority": "P1",
                         "responders": [{"name": "ops", "type": "team"}], "tags": "a,b"},
                        {"api_key": "s3cr3t", "api_url": "https://api.opsgenie.com/", "priority": "P1",
                         "responders": [{"name": "ops", "type": "team"}], "tags": "a,b"},
                        "v0.25.0"),
    "wechatConfigs": ({"apiSecret": ref("key"), "corpID": "corp", "agentID": "1", "toUser": "u"},
                      {"api_secret": "s3cr3t", "corp_id": "corp", "agent_id": "1", "to_user": "u"},
                      "v0.25.0"),
    "victoropsConfigs": ({"apiKey": ref("key"), "routingKey": "rk", "customFields": [{"key": "team", "value": "t"}]},
                         {"api_key": "s3cr3t", "routing_key": "rk", "custom_fields": {"team": "t"}},
                         "v0.25.0"),
    "pushoverConfigs": ({"userKey": ref("user"), "token": ref("token"), "retry": "60s", "expire": "1h", "priority": "2",
                         "sound": "siren"},
                        {"user_key": "usr", "token": "tok", "retry": "1m", "expire": "1h", "priority": "2"},
                        "v0.25.0"),
    "snsConfigs": ({"apiURL": "https://sns.eu-west-1.amazonaws.com", "phoneNumber": "+123",
                    "sigv4": {"region": "eu-west-1", "accessKey": ref("user"), "secretKey": ref("key")}},
                   {"api_url": "https://sns.eu-west-1.amazonaws.com", "phone_number": "+123",
                    "sigv4": {"region": "eu-west-1", "access_key": "usr", "secret_key": "s3cr3t"}},
                   "v0.25.0"),
    "telegramConfigs": ({"botToken": ref("token"), "chatID": 42, "parseMode": "HTML"},
                        {"bot_token": "tok", "chat_id": 42, "parse_mode": "HTML"},
                        "v0.25.0"),
    "discordConfigs": ({"apiURL": ref("url"), "title": "t"},
                       {"webhook_url": "https://hooks.example.com/x", "title": "t"},
                       "v0.25.0"),
    "webexConfigs": ({"roomID": "room", "apiURL": "https://webexapis.com/v1/messages",
                      "httpConfig": {"authorization": {"credentials": ref("token")}}},
                     {"room_id": "room", "api_url": "https://webexapis.com/v1/messages",
                      "http_config": {"authorization": {"type": "Bearer", "credentials": "tok"}}},
                     "v0.25.0"),
    "msteamsConfigs": ({"webhookUrl": ref("url"), "title": "t", "summary": "s"},
                       {"webhook_url": "https://hooks.example.com/x", "title": "t", "summary": "s"},
                       "v0.27.0"),
    "msteamsv2Configs": ({"webhookURL": ref("url"), "text": "x"},
                         {"webhook_url": "https://hooks.example.com/x", "text": "x"},
                         "v0.28.0"),
    "rocketchatConfigs": ({"token": ref("token"), "tokenID": ref("user"), "channel": "#c"},
                          {"token": "tok", "token_id": "usr", "channel": "#c", "short_fields": False, "link_names": False},
                          "v0.28.0"),
}


def test_every_crd_receiver_type_is_covered():
    assert set(CASES) == set(CONVERTERS)


def _render(crd_key: str, cfg: dict, version: str):
    docs = [alertmanager(version), base_secret(SIMPLE_BASE), S,
            amc("cfg", route={"receiver": "r"}, receivers=[{"name": "r", crd_key: [cfg]}])]
    return build_config(docs[0], [docs[3]], [], store_of(docs))


@pytest.mark.parametrize("crd_key", sorted(CASES))
def test_receiver_type(crd_key, tmp_path):
    cfg, expected, version = CASES[crd_key]
    result = _render(crd_key, cfg, version)
    assert result.rejected == [] and result.fatal is None, (result.rejected, result.fatal)
    receiver = result.config["receivers"][-1]
    am_key, _ = CONVERTERS[crd_key]
    assert receiver == {"name": "team/cfg/r", am_key: [expected]}
    assert yaml.safe_load(result.text)["receivers"][-1] == receiver
    if Version(version) <= Version("v0.25.0"):
        proc = amtool_check(result.text, tmp_path)
        assert proc.returncode == 0, proc.stdout + proc.stderr


def test_tls_assets_are_recorded():
    cfg, _, version = CASES["webhookConfigs"]
    result = _render("webhookConfigs", cfg, version)
    assert result.assets == {"0_team_creds_ca": S["stringData"]["ca"]}


@pytest.mark.parametrize("crd_key,cfg,version,field", [
    ("msteamsConfigs", {"webhookUrl": ref("url")}, "v0.25.0", "spec.receivers[0].msteamsConfigs[0]"),
    ("telegramConfigs", {"botToken": ref("token"), "chatID": 1}, "v0.23.0", "spec.receivers[0].telegramConfigs[0]"),
    ("webhookConfigs", {"url": "https://x.example", "payload": "{}"}, "v0.31.0", "spec.receivers[0].webhookConfigs[0].payload"),
    ("snsConfigs", {"topicARN": "t", "useAWSHTTPClient": True}, "v0.32.0", "spec.receivers[0].snsConfigs[0].useAWSHTTPClient"),
    ("slackConfigs", {"messageText": "x"}, "v0.30.0", "spec.receivers[0].slackConfigs[0].messageText"),
    ("emailConfigs", {"to": "a@b", "from": "c@d", "smarthost": "h:25", "threading": {"threadByDate": "Daily"}},
     "v0.29.0", "spec.receivers[0].emailConfigs[0].threading"),
])
def test_version_gates_reject_the_object(crd_key, cfg, version, field):
    result = _render(crd_key, cfg, version)
    assert [p.field for p in result.rejected] == [field]
    assert "need Alertmanager >=" in result.rejected[0].message or "needs Alertmanager >=" in result.rejected[0].message


@pytest.mark.parametrize("crd_key,cfg,version,dropped", [
    ("webhookConfigs", {"url": "https://x.example", "timeout": "10s"}, "v0.27.0", "timeout"),
    ("pushoverConfigs", {"userKey": ref("user"), "token": ref("token"), "ttl": "1h"}, "v0.26.0", "ttl"),
    ("discordConfigs", {"apiURL": ref("url"), "content": "c"}, "v0.27.0", "content"),
])
def test_sanitize_drops_fields_with_a_warning(crd_key, cfg, version, dropped):
    result = _render(crd_key, cfg, version)
    assert result.rejected == []
    am_key, _ = CONVERTERS[crd_key]
    assert dropped not in result.config["receivers"][-1][am_key][0]
    assert any(w.field.endswith(dropped) and "dropped" in w.message for w in result.warnings)


def test_a_receiver_with_several_types_lists_them_in_upstreams_order_whatever_the_input_order():
    from promop.render.alertmanager.common import AMScope, Store
    from promop.render.alertmanager.receivers import ReceiverContext, convert_receiver

    scope = AMScope(Store(), "AlertmanagerConfig", "team", "x", Version("v0.27.0"))
    receiver = {"webhookConfigs": [{"url": "http://a/"}], "name": "r",
                "opsgenieConfigs": [{"apiURL": "http://b/", "apiKey": None}]}
    out = convert_receiver(scope, receiver, "spec.receivers[0]", "team/x/r", ReceiverContext(None))
    assert list(out) == ["name", "opsgenie_configs", "webhook_configs"]
