"""The prometheus trigger (reference §3): metadata parse rules, the request, and every row of the
response table (§3.4) for both ignoreNullValues values. Expected values and texts come from the
reference and KEDA's prometheus_scaler.go, never from our own output."""

from __future__ import annotations

import base64
import math
from datetime import datetime, timedelta, timezone
from urllib.parse import parse_qsl, urlsplit

import pytest

from promop.keda.prometheus import (
    TriggerConfigError, TriggerError, build_request, cache_key, decode_response, go_parse_float, parse_threshold,
    parse_trigger,
)

BASE = {"serverAddress": "http://prometheus:9090", "query": "sum(rate(http_requests_total[2m]))", "threshold": "100"}


def trig(ignore: bool = True, **extra):
    return parse_trigger({**BASE, "ignoreNullValues": "true" if ignore else "false", **extra}, {})


def vector(*samples) -> bytes:
    import json
    return json.dumps({"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": {}, "value": list(s)} for s in samples]}}).encode()


# --- §3.4, one test per row, both ignoreNullValues values -------------------------------------------

@pytest.mark.parametrize("ignore", [True, False])
@pytest.mark.parametrize("status", [199, 300, 302, 400, 404, 500, 503])
def test_http_status_outside_2xx_is_an_error(ignore, status):
    with pytest.raises(TriggerError, match=f"prometheus query api returned error. status: {status}$"):
        decode_response(trig(ignore), status, vector([1, "5"]))


@pytest.mark.parametrize("status", [200, 201, 204, 299])
def test_any_2xx_status_is_read(status):
    assert decode_response(trig(), status, vector([1, "5"])) == 5


@pytest.mark.parametrize("ignore", [True, False])
@pytest.mark.parametrize("body", [b"not json", b"<html>", b"", b"[1,2]", b'"x"',
                                  # a scalar result: [ts, "v"] does not fit the []struct result
                                  b'{"data":{"resultType":"scalar","result":[1700000000,"5"]}}',
                                  b'{"data":{"resultType":"string","result":[1700000000,"x"]}}',
                                  b'{"status":1,"data":{"result":[]}}',
                                  b'{"data":{"result":{"a":1}}}',
                                  b'{"data":[]}',
                                  b'{"data":{"result":[{"metric":"x","value":[1,"2"]}]}}',
                                  b'{"data":{"result":[{"value":{"a":"b"}}]}}'])
def test_unmarshal_errors_are_errors(ignore, body):
    with pytest.raises(TriggerError):
        decode_response(trig(ignore), 200, body)


@pytest.mark.parametrize("body", [b"{}", b'{"data":{"result":[]}}', b'{"status":"success","data":{}}',
                                  b"null", b'{"data":null}', b'{"data":{"result":null}}'])
def test_empty_vector_is_zero_when_ignoring_nulls(body):
    value = decode_response(trig(True), 200, body)
    assert value == 0 and not math.copysign(1, value) < 0


@pytest.mark.parametrize("body", [b"{}", b'{"data":{"result":[]}}', b"null"])
def test_empty_vector_is_an_error_when_not_ignoring_nulls(body):
    with pytest.raises(TriggerError, match="^prometheus metrics 'prometheus' target may be lost, the result is empty$"):
        decode_response(trig(False), 200, body)


@pytest.mark.parametrize("ignore", [True, False])
def test_several_series_is_an_error(ignore):
    t = trig(ignore)
    with pytest.raises(TriggerError) as exc:
        decode_response(t, 200, vector([1, "1"], [1, "2"]))
    assert str(exc.value) == f"prometheus query {BASE['query']} returned multiple elements"


MATRIX = b'{"data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"5"],[2,"6"]]}]}}'


@pytest.mark.parametrize("body", [MATRIX, b'{"data":{"result":[{"value":[]}]}}', b'{"data":{"result":[{}]}}',
                                  b'{"data":{"result":[null]}}'])
def test_matrix_or_empty_value_is_zero_when_ignoring_nulls(body):
    assert decode_response(trig(True), 200, body) == 0


@pytest.mark.parametrize("body", [MATRIX, b'{"data":{"result":[{"value":[]}]}}'])
def test_matrix_or_empty_value_is_an_error_when_not_ignoring_nulls(body):
    with pytest.raises(TriggerError, match="^prometheus metrics 'prometheus' target may be lost, the value list is empty$"):
        decode_response(trig(False), 200, body)


@pytest.mark.parametrize("ignore", [True, False])
def test_value_with_one_entry_is_an_error(ignore):
    with pytest.raises(TriggerError) as exc:
        decode_response(trig(ignore), 200, vector([1]))
    assert str(exc.value) == f"prometheus query {BASE['query']} didn't return enough values"


@pytest.mark.parametrize("ignore", [True, False])
def test_json_null_sample_is_minus_one_without_error(ignore):
    t = trig(ignore)
    value = decode_response(t, 200, vector([1, None]))
    assert value == -1
    assert not t.is_active(value)       # activity false with the default activationThreshold 0


@pytest.mark.parametrize("text", ["+Inf", "-Inf", "NaN", "Inf", "inf", "-infinity", "nan", "+INF"])
def test_non_finite_is_zero_when_ignoring_nulls(text):
    assert decode_response(trig(True), 200, vector([1, text])) == 0


@pytest.mark.parametrize("text,shown", [("+Inf", "+Inf"), ("-Inf", "-Inf"), ("NaN", "NaN"), ("Infinity", "+Inf")])
def test_non_finite_is_an_error_when_not_ignoring_nulls(text, shown):
    with pytest.raises(TriggerError, match=f"^prometheus query returns {shown.replace('+', '[+]')}$"):
        decode_response(trig(False), 200, vector([1, text]))


@pytest.mark.parametrize("ignore", [True, False])
@pytest.mark.parametrize("text", ["abc", "", "1,5", "5 ", "0x", "1e", "--1"])
def test_unparseable_sample_is_an_error(ignore, text):
    with pytest.raises(TriggerError, match="strconv.ParseFloat"):
        decode_response(trig(ignore), 200, vector([1, text]))


@pytest.mark.parametrize("ignore", [True, False])
def test_negative_value_is_returned_raw(ignore):
    # clamping to 0 is for the HPA (quantities); activity reads the raw value
    assert decode_response(trig(ignore), 200, vector([1, "-3.5"])) == -3.5


@pytest.mark.parametrize("ignore", [True, False])
@pytest.mark.parametrize("text,value", [("2", 2.0), ("0", 0.0), ("1e3", 1000.0), ("0.25", 0.25), ("1.5E-3", 0.0015),
                                        ("0x1p-2", 0.25), ("+7", 7.0)])
def test_normal_value(ignore, text, value):
    assert decode_response(trig(ignore), 200, vector([1700000000.5, text])) == value


@pytest.mark.parametrize("ignore", [True, False])
def test_non_string_sample_is_an_error_not_a_crash(ignore):
    with pytest.raises(TriggerError):
        decode_response(trig(ignore), 200, vector([1, 5]))


def test_status_and_result_type_are_ignored():
    body = b'{"status":"error","data":{"resultType":"whatever","result":[{"metric":{"a":"b"},"value":[1,"3"]}]}}'
    assert decode_response(trig(), 200, body) == 3


def test_field_names_match_case_insensitively_as_in_go():
    assert decode_response(trig(), 200, b'{"Data":{"Result":[{"Value":[1,"4"]}]}}') == 4


def test_go_parse_float_range():
    with pytest.raises(TriggerError, match="value out of range"):
        go_parse_float("1e400")


# --- §3.1 metadata ---------------------------------------------------------------------------------

def test_defaults():
    t = parse_trigger(BASE, {})
    assert (t.threshold, t.activation_threshold, t.ignore_null_values, t.unsafe_ssl, t.timeout_s) == (100, 0, True, False, 3.0)
    assert t.namespace == "" and t.custom_headers == [] and t.query_parameters == [] and t.auth_modes == ()


@pytest.mark.parametrize("key", ["serverAddress", "query", "threshold"])
def test_required(key):
    meta = {k: v for k, v in BASE.items() if k != key}
    with pytest.raises(TriggerConfigError, match=f'missing required parameter "{key}" in \\[triggerMetadata\\]'):
        parse_trigger(meta, {})


@pytest.mark.parametrize("key", ["serverAddress", "query"])
def test_blank_counts_as_missing(key):
    with pytest.raises(TriggerConfigError, match=f'missing required parameter "{key}"'):
        parse_trigger({**BASE, key: "   "}, {})


def test_error_text_is_keda_s():
    with pytest.raises(TriggerConfigError) as exc:
        parse_trigger({**BASE, "threshold": "one"}, {})
    assert str(exc.value).startswith("error parsing prometheus metadata: error parsing prometheus metadata: "
                                     'unable to set param "threshold" value "one": ')


@pytest.mark.parametrize("text,value", [("100.50", 100.5), ("1e3", 1000.0), ("-2", -2.0), ("0", 0.0), (" 7 ", 7.0),
                                        ("1E+2", 100.0)])
def test_threshold_json_number(text, value):
    assert parse_trigger({**BASE, "threshold": text}, {}).threshold == value
    assert parse_threshold({"threshold": text}) == value


@pytest.mark.parametrize("text", ["one", ".5", "+5", "5.", "05", "1e", "0x10", "5x", '"5"', "true", "1_000", "NaN", "Inf"])
def test_threshold_not_a_json_number(text):
    with pytest.raises(TriggerConfigError, match='unable to set param "threshold"'):
        parse_trigger({**BASE, "threshold": text}, {})


def test_activation_threshold():
    assert parse_trigger({**BASE, "activationThreshold": "2.5"}, {}).activation_threshold == 2.5
    with pytest.raises(TriggerConfigError, match='"activationThreshold"'):
        parse_trigger({**BASE, "activationThreshold": "x"}, {})


def test_activity_is_strictly_above_activation_threshold():
    t = parse_trigger({**BASE, "activationThreshold": "10"}, {})
    assert not t.is_active(10) and t.is_active(10.0001) and not t.is_active(-1)


@pytest.mark.parametrize("text,value", [("true", True), ("false", False), ("1", True), ("0", False), ("t", True),
                                        ("F", False), ("TRUE", True), ("False", False)])
def test_ignore_null_values_parse_bool(text, value):
    assert parse_trigger({**BASE, "ignoreNullValues": text}, {}).ignore_null_values is value


@pytest.mark.parametrize("text", ["xxxx", "yes", "no", "tRUE", "2"])
def test_ignore_null_values_rejects_non_bool(text):
    with pytest.raises(TriggerConfigError, match='unable to set param "ignoreNullValues"'):
        parse_trigger({**BASE, "ignoreNullValues": text}, {})


def test_unsafe_ssl():
    assert parse_trigger({**BASE, "unsafeSsl": "true"}, {}).unsafe_ssl is True
    assert build_request(parse_trigger({**BASE, "unsafeSsl": "true"}, {}), NOW).verify_tls is False
    with pytest.raises(TriggerConfigError, match='"unsafeSsl"'):
        parse_trigger({**BASE, "unsafeSsl": "maybe"}, {})


@pytest.mark.parametrize("text,seconds", [("30s", 30.0), ("1500", 1.5), ("1m", 60.0), ("250ms", 0.25), ("0", 3.0)])
def test_timeout(text, seconds):
    assert parse_trigger({**BASE, "timeout": text}, {}).timeout_s == seconds


@pytest.mark.parametrize("text", ["-5", "-1s", "abc", "5x", "1.5"])
def test_timeout_rejects(text):
    with pytest.raises(TriggerConfigError, match='unable to set param "timeout"'):
        parse_trigger({**BASE, "timeout": text}, {})


def test_custom_headers_format():
    t = parse_trigger({**BASE, "customHeaders": " X-Scope-OrgID = tenant1 , a=b"}, {})
    assert t.custom_headers == [("X-Scope-OrgID", "tenant1"), ("a", "b")]


@pytest.mark.parametrize("text", ["a=b=c", "a", "a=b,", "a=b,,c=d"])
def test_custom_headers_need_exactly_one_equal_sign(text):
    with pytest.raises(TriggerConfigError, match="expected format key=value"):
        parse_trigger({**BASE, "customHeaders": text}, {})
    with pytest.raises(TriggerConfigError, match="expected format key=value"):
        parse_trigger({**BASE, "queryParameters": text}, {})


def test_several_errors_are_reported_together():
    with pytest.raises(TriggerConfigError) as exc:
        parse_trigger({"threshold": "x"}, {})
    text = str(exc.value)
    assert '"serverAddress"' in text and '"query"' in text and '"threshold" value "x"' in text and "\n" not in text


# --- §3.2 auth ---------------------------------------------------------------------------------------

def test_bearer():
    t = parse_trigger({**BASE, "authModes": "bearer"}, {"bearerToken": "tok"})
    assert build_request(t, NOW).headers["Authorization"] == "Bearer tok"


def test_bearer_token_alias():
    t = parse_trigger({**BASE, "authModes": "bearer"}, {"token": "tok2"})
    assert build_request(t, NOW).headers["Authorization"] == "Bearer tok2"


def test_auth_modes_from_auth_params_and_auth_mode_key():
    t = parse_trigger(BASE, {"authModes": "bearer", "bearerToken": "tok"})
    assert t.auth_modes == ("bearer",)
    t = parse_trigger({**BASE, "authMode": "basic"}, {"username": "u"})
    assert t.auth_modes == ("basic",)


@pytest.mark.parametrize("modes,params,message", [
    ("bearer", {}, "bearer token is required when bearer auth is enabled"),
    ("basic", {"password": "p"}, "username is required when basic auth is enabled"),
    ("tls", {"cert": "c"}, "cert and key are required when tls auth is enabled"),
    ("tls", {"key": "k"}, "cert and key are required when tls auth is enabled"),
    ("custom", {"customAuthHeader": "X"}, "customAuthHeader and customAuthValue are required when custom auth is enabled"),
    ("custom", {"customAuthValue": "v"}, "customAuthHeader and customAuthValue are required when custom auth is enabled"),
])
def test_required_auth_params(modes, params, message):
    with pytest.raises(TriggerConfigError, match=message):
        parse_trigger({**BASE, "authModes": modes}, params)


def test_basic_password_optional():
    t = parse_trigger({**BASE, "authModes": "basic"}, {"username": "user"})
    assert build_request(t, NOW).headers["Authorization"] == "Basic " + base64.b64encode(b"user:").decode()


def test_unknown_auth_mode():
    with pytest.raises(TriggerConfigError, match='value "digest" must be one of'):
        parse_trigger({**BASE, "authModes": "digest"}, {})


@pytest.mark.parametrize("modes", ["bearer,basic", "basic, oauth", "bearer,oauth"])
def test_exclusive_auth_modes(modes):
    with pytest.raises(TriggerConfigError, match="must contain only one of \\[bearer basic oauth\\]"):
        parse_trigger({**BASE, "authModes": modes}, {"bearerToken": "t", "username": "u"})


def test_tls_with_bearer_and_ca():
    t = parse_trigger({**BASE, "authModes": "tls, bearer"}, {"cert": "C", "key": "K", "ca": "A", "bearerToken": "t"})
    r = build_request(t, NOW)
    assert r.client_cert == ("C", "K") and r.ca == "A" and r.headers["Authorization"] == "Bearer t"


def test_pod_identity_with_auth_modes():
    with pytest.raises(TriggerConfigError, match="pod identity cannot be enabled with other auth types"):
        parse_trigger({**BASE, "authModes": "bearer"}, {"bearerToken": "t"}, pod_identity="azure-workload")
    parse_trigger({**BASE, "authModes": "bearer"}, {"bearerToken": "t"}, pod_identity="none")


@pytest.mark.parametrize("modes,params,header,value", [
    ("bearer", {"bearerToken": "t"}, "Authorization", "Bearer t"),
    ("custom", {"customAuthHeader": "X-Token", "customAuthValue": "v"}, "X-Token", "v"),
    ("bearer,custom", {"bearerToken": "t", "customAuthHeader": "Authorization", "customAuthValue": "v"},
     "Authorization", "Bearer t"),
])
def test_auth_header_overwrites_custom_headers(modes, params, header, value):
    t = parse_trigger({**BASE, "authModes": modes, "customHeaders": f"{header}=from-custom,other=1"}, params)
    headers = build_request(t, NOW).headers
    assert headers[header] == value and headers["Other"] == "1"


# --- §3.3 request ------------------------------------------------------------------------------------

NOW = datetime(2026, 3, 4, 5, 6, 7, 891011, tzinfo=timezone.utc)


def test_url_shape_time_and_escaping():
    t = parse_trigger({**BASE, "query": 'sum(rate(x{job="a b"}[1m])) > 0 & 1+1', "namespace": "team/a&b",
                       "queryParameters": "dedup=true, partial response=a&b"}, {})
    url = build_request(t, NOW).url
    assert url.startswith("http://prometheus:9090/api/v1/query?query=")
    assert "query=sum%28rate%28x%7Bjob%3D%22a+b%22%7D%5B1m%5D%29%29+%3E+0+%26+1%2B1&" in url
    assert "&time=2026-03-04T05:06:07Z" in url
    assert url.endswith("&namespace=team/a&b&dedup=true&partial+response=a%26b")


def test_time_is_utc_seconds():
    later = datetime(2026, 3, 4, 7, 6, 7, 999999, tzinfo=timezone(timedelta(hours=2)))
    assert "&time=2026-03-04T05:06:07Z" in build_request(parse_trigger(BASE, {}), later).url


def test_no_namespace_no_parameters():
    url = build_request(parse_trigger(BASE, {}), NOW).url
    assert [k for k, _ in parse_qsl(urlsplit(url).query)] == ["query", "time"]


def test_timeout_in_request():
    assert build_request(parse_trigger({**BASE, "timeout": "7s"}, {}), NOW).timeout_s == 7.0


def test_cache_key_ignores_threshold_but_not_auth_or_query():
    a = parse_trigger(BASE, {})
    assert cache_key(a) == cache_key(parse_trigger({**BASE, "threshold": "5", "activationThreshold": "3"}, {}))
    assert cache_key(a) != cache_key(parse_trigger({**BASE, "query": "up"}, {}))
    assert cache_key(a) != cache_key(parse_trigger({**BASE, "namespace": "x"}, {}))
    b1 = parse_trigger({**BASE, "authModes": "bearer"}, {"bearerToken": "1"})
    b2 = parse_trigger({**BASE, "authModes": "bearer"}, {"bearerToken": "2"})
    assert cache_key(b1) != cache_key(b2)
