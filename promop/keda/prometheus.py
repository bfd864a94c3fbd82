"""KEDA's `prometheus` trigger without the HTTP: metadata parsing, the request, and the response.

Why pure: the controller's shared result cache, the metrics endpoint and `promop keda explain`
all need the same three steps, and the response rules (§3.4 of the reference) are the part a
drop-in must reproduce exactly, case by case, so they are tested here without a network.

    parse_trigger(metadata, auth_params, pod_identity="none") -> PrometheusTrigger   (TriggerConfigError)
    build_request(trigger, now) -> QueryRequest
    decode_response(trigger, status, body) -> float                                  (TriggerError)
    cache_key(trigger) -> tuple

The texts of the errors are KEDA's (`pkg/scalers/prometheus_scaler.go`, `scalersconfig/typed_config.go`,
`authentication/authentication_types.go`), so events and logs read as they do under KEDA.
"""

from __future__ import annotations

import base64
import json
import math
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from urllib.parse import quote_plus

from gotime.duration import DurationError, parse_duration
from promop.keda.spec import parse_bool

DEFAULT_TIMEOUT_MS = 3000       # KEDA_HTTP_DEFAULT_TIMEOUT
AUTH_MODES = ("apiKey", "basic", "tls", "bearer", "custom", "oauth")
EXCLUSIVE_AUTH_MODES = ("bearer", "basic", "oauth")
_PREFIX = "error parsing prometheus metadata: "


class TriggerConfigError(ValueError):
    """The trigger's metadata or authentication is wrong (KEDA fails to build the scaler)."""


class TriggerError(Exception):
    """A query failed or its answer is unusable (KEDA's scaler error: counts as a failure for fallback)."""


@dataclass(slots=True)
class PrometheusTrigger:
    server_address: str
    query: str
    threshold: float
    activation_threshold: float = 0.0
    namespace: str = ""
    custom_headers: list[tuple[str, str]] = field(default_factory=list)
    query_parameters: list[tuple[str, str]] = field(default_factory=list)
    ignore_null_values: bool = True
    unsafe_ssl: bool = False
    timeout_s: float = DEFAULT_TIMEOUT_MS / 1000
    auth_modes: tuple[str, ...] = ()
    bearer_token: str = ""
    username: str = ""
    password: str = ""
    cert: str = ""
    key: str = ""
    ca: str = ""
    custom_auth_header: str = ""
    custom_auth_value: str = ""

    def is_active(self, value: float) -> bool:
        """KEDA's activity: the raw value (before clamping) strictly above activationThreshold."""
        return value > self.activation_threshold


@dataclass(slots=True)
class QueryRequest:
    url: str
    headers: dict[str, str]
    timeout_s: float
    verify_tls: bool = True
    client_cert: tuple[str, str] | None = None   # (cert PEM, key PEM): the caller writes them to files
    ca: str | None = None                        # CA bundle PEM to trust instead of the system's


# --- metadata ----------------------------------------------------------------------------------------

def _value(metadata: dict, auth_params: dict, name: str, order: tuple[str, ...] = ("meta",)) -> str | None:
    """typed_config's lookup: the first source (trigger metadata, authParams) with a non-blank value, trimmed."""
    for source in order:
        raw = (metadata if source == "meta" else auth_params).get(name)
        if raw is not None and str(raw).strip():
            return str(raw).strip()
    return None


def _json_float(text: str) -> float:
    """encoding/json into a float64: a JSON number (`100.50`, `1e3`, `-2`); `null` leaves 0."""
    if text == "null":
        return 0.0
    match = re.match(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?", text)
    if match is None or not match.group(0) or match.group(0) == "-":
        if text.startswith('"') or text in ("true", "false") or text[:1] in "[{":
            kind = {"\"": "string", "t": "bool", "f": "bool", "[": "array", "{": "object"}[text[0]]
            raise ValueError(f"json: cannot unmarshal {kind} into Go value of type float64")
        bad = text[1:2] if text.startswith("-") and len(text) > 1 else text[:1]
        if text == "-":
            raise ValueError("unexpected end of JSON input")
        where = "in numeric literal" if text.startswith("-") else "looking for beginning of value"
        raise ValueError(f"invalid character {_go_char(bad)} {where}")
    rest = text[match.end():]
    if rest:
        if rest[0] in ".eE" and (len(rest) == 1 or not rest[1].isdigit() and rest[1] not in "+-"):
            if len(rest) == 1:
                raise ValueError("unexpected end of JSON input")
            raise ValueError(f"invalid character {_go_char(rest[1])} after decimal point in numeric literal"
                             if rest[0] == "." else f"invalid character {_go_char(rest[1])} in exponent of numeric literal")
        raise ValueError(f"invalid character {_go_char(rest[0])} after top-level value")
    value = float(match.group(0))
    if math.isinf(value):
        raise ValueError(f"json: cannot unmarshal number {text} into Go value of type float64")
    return value


def _go_char(ch: str) -> str:
    return "'\\''" if ch == "'" else f"'{ch}'"


def _pairs(text: str) -> list[tuple[str, str]]:
    """`k1=v1,k2=v2` as typed_config splits a map: on `,`, then on `=`; each part trimmed."""
    out: dict[str, str] = {}
    for entry in text.split(","):
        entry = entry.strip()
        kv = entry.split("=")
        if len(kv) != 2:
            raise ValueError(f'expected format key=value, got "{entry}"')
        out[kv[0].strip()] = kv[1].strip()
    return list(out.items())


def _timeout_ms(text: str) -> float:
    """`timeout`: a Go duration (`30s`, `1m`) or an integer count of milliseconds; never negative."""
    if re.fullmatch(r"[+-]?[0-9]+", text):
        ms = float(int(text))
    else:
        try:
            ms = parse_duration(text) / 1e6
        except DurationError as exc:
            raise ValueError(str(exc)) from None
    if ms < 0:
        raise ValueError("timeout must be greater than or equal to 0")
    return ms


def _set(errors: list[str], name: str, text: str, parse):
    try:
        return parse(text)
    except ValueError as exc:
        errors.append(f'unable to set param "{name}" value "{text}": {exc}')
        return None


def _required(errors: list[str], metadata: dict, name: str) -> str | None:
    value = _value(metadata, {}, name)
    if value is None:
        errors.append(f'missing required parameter "{name}" in [triggerMetadata]')
    return value


def parse_trigger(metadata: dict, auth_params: dict | None = None, pod_identity: str = "none",
                  default_timeout_ms: int = DEFAULT_TIMEOUT_MS) -> PrometheusTrigger:
    """The trigger's `metadata` (strings) and the resolved authParams into a PrometheusTrigger, with
    KEDA's parse rules (§3.1/§3.2). Every problem is reported at once, as typed_config joins them;
    raises TriggerConfigError("error parsing prometheus metadata: ...")."""
    auth_params = auth_params or {}
    errors: list[str] = []
    server = _required(errors, metadata, "serverAddress")
    query = _required(errors, metadata, "query")
    threshold_text = _required(errors, metadata, "threshold")
    threshold = _set(errors, "threshold", threshold_text, _json_float) if threshold_text is not None else None
    trigger = PrometheusTrigger(server_address=server or "", query=query or "", threshold=threshold or 0.0,
                                timeout_s=default_timeout_ms / 1000)
    optional = (
        ("activationThreshold", "activation_threshold", _json_float),
        ("namespace", "namespace", str),
        ("customHeaders", "custom_headers", _pairs),
        ("queryParameters", "query_parameters", _pairs),
        ("ignoreNullValues", "ignore_null_values", parse_bool_error),
        ("unsafeSsl", "unsafe_ssl", parse_bool_error),
    )
    for key, attr, parse in optional:
        text = _value(metadata, auth_params, key)
        if text is not None:
            value = _set(errors, key, text, parse)
            if value is not None:
                setattr(trigger, attr, value)
    timeout = _value(metadata, auth_params, "timeout")
    if timeout is not None:
        ms = _set(errors, "timeout", timeout, _timeout_ms)
        if ms:
            trigger.timeout_s = ms / 1000
    _parse_auth(trigger, metadata, auth_params, errors)
    if not errors and trigger.auth_modes and pod_identity not in ("", "none"):
        errors.append("pod identity cannot be enabled with other auth types")
    if errors:
        raise TriggerConfigError(_PREFIX + _PREFIX + "; ".join(errors))
    return trigger


def parse_bool_error(text: str) -> bool:
    return parse_bool(text)


def _parse_auth(trigger: PrometheusTrigger, metadata: dict, auth_params: dict, errors: list[str]) -> None:
    """authentication.Config: `authModes` (or `authMode`) from the metadata or the authParams, the enum,
    the exclusive set {bearer, basic, oauth}, then what each mode requires (Config.Validate)."""
    order = ("meta", "auth")
    text = _value(metadata, auth_params, "authModes", order) or _value(metadata, auth_params, "authMode", order)
    if text is None:
        trigger.ca = _value({}, auth_params, "ca", ("auth",)) or ""
        return
    modes = [m.strip() for m in text.split(",")]
    if any(m not in AUTH_MODES for m in modes):
        errors.append(f'parameter "authModes" value "{text}" must be one of [{" ".join(AUTH_MODES)}]')
        return
    if sum(m in EXCLUSIVE_AUTH_MODES for m in modes) > 1:
        errors.append(f'parameter "authModes" value "{text}" must contain only one of [{" ".join(EXCLUSIVE_AUTH_MODES)}]')
        return
    trigger.auth_modes = tuple(modes)
    get = lambda name: _value({}, auth_params, name, ("auth",)) or ""  # noqa: E731
    trigger.bearer_token = get("bearerToken") or get("token")
    trigger.username, trigger.password = get("username"), get("password")
    trigger.cert, trigger.key, trigger.ca = get("cert"), get("key"), get("ca")
    trigger.custom_auth_header, trigger.custom_auth_value = get("customAuthHeader"), get("customAuthValue")
    required = (
        ("bearer", not trigger.bearer_token, "bearer token is required when bearer auth is enabled"),
        ("basic", not trigger.username, "username is required when basic auth is enabled"),
        ("tls", not (trigger.cert and trigger.key), "cert and key are required when tls auth is enabled"),
        ("oauth", not (get("oauthTokenURI") and get("clientID") and get("clientSecret")),
         "oauthTokenURI, clientID and clientSecret are required when oauth is enabled"),
        ("custom", not (trigger.custom_auth_header and trigger.custom_auth_value),
         "customAuthHeader and customAuthValue are required when custom auth is enabled"),
        ("apiKey", not _value(metadata, auth_params, "apiKey", order),
         "apiKey is required when apiKey auth is enabled"),
    )
    for mode, missing, message in required:
        if mode in modes and missing:
            errors.append(message)
            return


# --- request -----------------------------------------------------------------------------------------

def go_query_escape(text: str) -> str:
    """Go's url.QueryEscape: space as `+`, everything but unreserved characters percent-encoded."""
    return quote_plus(text, safe="-_.~")


def build_request(trigger: PrometheusTrigger, now: datetime) -> QueryRequest:
    """KEDA's instant query (§3.3): `GET <server>/api/v1/query?query=<escaped>&time=<now, UTC RFC 3339,
    seconds>`, then `&namespace=<raw>` and the escaped queryParameters; customHeaders first, then the one
    auth header (bearer > basic > custom) overwriting a custom header of the same name."""
    stamp = now.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    url = f"{trigger.server_address}/api/v1/query?query={go_query_escape(trigger.query)}&time={stamp}"
    if trigger.namespace:
        url += f"&namespace={trigger.namespace}"
    for key, value in trigger.query_parameters:
        url += f"&{go_query_escape(key)}={go_query_escape(value)}"
    headers: dict[str, str] = {}
    for name, value in trigger.custom_headers:
        headers[_canonical_header(name)] = value
    modes = trigger.auth_modes
    if "bearer" in modes:
        headers["Authorization"] = f"Bearer {trigger.bearer_token}"
    elif "basic" in modes:
        token = base64.b64encode(f"{trigger.username}:{trigger.password}".encode()).decode()
        headers["Authorization"] = f"Basic {token}"
    elif "custom" in modes:
        headers[_canonical_header(trigger.custom_auth_header)] = trigger.custom_auth_value
    tls = "tls" in modes
    return QueryRequest(url=url, headers=headers, timeout_s=trigger.timeout_s, verify_tls=not trigger.unsafe_ssl,
                        client_cert=(trigger.cert, trigger.key) if tls else None,
                        ca=(trigger.ca or None) if modes else None)


def _canonical_header(name: str) -> str:
    """Go's http.CanonicalHeaderKey (`x-scope-orgid` -> `X-Scope-Orgid`), so a custom header and the
    auth header of the same name collide as they do in Go's Header map."""
    if not name or not all(c.isalnum() or c in "!#$%&'*+-.^_`|~" for c in name):
        return name
    return "-".join(part[:1].upper() + part[1:].lower() for part in name.split("-"))


def cache_key(trigger: PrometheusTrigger) -> tuple:
    """What makes two triggers' queries the same request (the shared result cache's key): the server,
    the query, the namespace, the extra parameters and headers, and the auth identity. The threshold
    and activationThreshold are not part of it: they only read the value."""
    return (trigger.server_address, trigger.query, trigger.namespace, tuple(trigger.query_parameters),
            tuple(trigger.custom_headers), trigger.auth_modes, trigger.bearer_token, trigger.username,
            trigger.password, trigger.cert, trigger.key, trigger.ca, trigger.custom_auth_header,
            trigger.custom_auth_value, trigger.unsafe_ssl, trigger.timeout_s, trigger.ignore_null_values)


# --- response ----------------------------------------------------------------------------------------

def decode_response(trigger: PrometheusTrigger, status: int, body: bytes) -> float:
    """The value of one instant-query answer, exactly as KEDA's ExecutePromQuery reads it (§3.4).
    Returns the raw value (-1 for a JSON null, 0 for what ignoreNullValues ignores); raises TriggerError.
    The caller clamps for the HPA (quantities.clamp_metric) and tests activity on the raw value."""
    if status < 200 or status > 299:
        raise TriggerError(f"prometheus query api returned error. status: {status}")
    result = _go_unmarshal(body)
    if not result:
        if trigger.ignore_null_values:
            return 0.0
        raise TriggerError("prometheus metrics 'prometheus' target may be lost, the result is empty")
    if len(result) > 1:
        raise TriggerError(f"prometheus query {trigger.query} returned multiple elements")
    value = result[0]
    if not value:
        if trigger.ignore_null_values:
            return 0.0
        raise TriggerError("prometheus metrics 'prometheus' target may be lost, the value list is empty")
    if len(value) < 2:
        raise TriggerError(f"prometheus query {trigger.query} didn't return enough values")
    sample = value[1]
    v = -1.0
    if sample is not None:
        if not isinstance(sample, str):
            # KEDA: an unchecked type assertion (a panic); here a plain error
            raise TriggerError(f"prometheus query {trigger.query} returned a non-string sample value {json.dumps(sample)}")
        v = go_parse_float(sample)
    if math.isinf(v) or math.isnan(v):
        if trigger.ignore_null_values:
            return 0.0
        raise TriggerError(f"prometheus query returns {go_float_f(v)}")
    return v


def go_float_f(v: float) -> str:
    """Go's %f of a non-finite float: `+Inf`, `-Inf`, `NaN`."""
    return "NaN" if math.isnan(v) else ("+Inf" if v > 0 else "-Inf")


def _field(obj: dict, name: str):
    """encoding/json's field match: exact name preferred, else case-insensitive; the last duplicate wins."""
    found = None
    for key, value in obj.items():
        if key.lower() == name.lower():
            found = (key, value)
    return found


def _type_name(value) -> str:
    return {dict: "object", list: "array", str: "string", bool: "bool"}.get(type(value), "number")


def _go_unmarshal(body: bytes) -> list[list]:
    """`json.Unmarshal(body, &promQueryResult)`: data.result as a list of `value` arrays. Raises TriggerError
    where Go's decoder errors: invalid JSON, or a type mismatch anywhere in the typed fields."""
    try:
        doc = json.loads(body, parse_constant=lambda name: _bad_constant(name))
    except (ValueError, UnicodeDecodeError) as exc:
        raise TriggerError(f"invalid prometheus response: {exc}") from None

    def expect(value, kind: str, where: str):
        if value is not None and _type_name(value) != kind:
            raise TriggerError(f"json: cannot unmarshal {_type_name(value)} into Go struct field "
                               f"promQueryResult.{where} of type {_GO_TYPES[kind]}")
        return value

    if doc is None:
        return []
    if not isinstance(doc, dict):
        raise TriggerError(f"json: cannot unmarshal {_type_name(doc)} into Go value of type scalers.promQueryResult")
    status = _field(doc, "status")
    if status:
        expect(status[1], "string", "status")
    data = _field(doc, "data")
    data = expect(data[1], "object", "data") if data else None
    if not data:
        return []
    kind = _field(data, "resultType")
    if kind:
        expect(kind[1], "string", "data.resultType")
    result = _field(data, "result")
    result = expect(result[1], "array", "data.result") if result else None
    out = []
    for item in result or []:
        expect(item, "object", "data.result")
        item = item or {}
        metric = _field(item, "metric")
        if metric:
            expect(metric[1], "object", "data.result.metric")
        value = _field(item, "value")
        value = expect(value[1], "array", "data.result.value") if value else None
        out.append(value or [])
    return out


_GO_TYPES = {"string": "string", "object": "struct { ... }", "array": "[]interface {}"}


def _bad_constant(name: str):
    raise ValueError(f"invalid character '{name[0]}' looking for beginning of value")


_GO_FLOAT = re.compile(
    r"[+-]?(?:(?:[0-9](?:_?[0-9])*)?(?:\.(?:[0-9](?:_?[0-9])*)?)?(?:[eE][+-]?[0-9](?:_?[0-9])*)?"
    r"|0[xX](?:_?[0-9a-fA-F])*(?:\.(?:[0-9a-fA-F](?:_?[0-9a-fA-F])*)?)?[pP][+-]?[0-9](?:_?[0-9])*)")


def go_parse_float(text: str) -> float:
    """strconv.ParseFloat(text, 64): decimal and hex floats, `Inf`/`Infinity`/`NaN` in any case with an
    optional sign; anything else is TriggerError with Go's message. Out of range: ±Inf (Go returns
    ±Inf with ErrRange: an error)."""
    low = text.lower()
    bare = low[1:] if low[:1] in "+-" else low
    if bare in ("inf", "infinity"):
        return -math.inf if low.startswith("-") else math.inf
    if low == "nan":
        return math.nan
    if not text or not _GO_FLOAT.fullmatch(text) or not any(c.isdigit() for c in text.split("e")[0].split("E")[0]
                                                                 .split("p")[0].split("P")[0]):
        raise TriggerError(f'strconv.ParseFloat: parsing {json.dumps(text)}: invalid syntax')
    clean = text.replace("_", "")
    try:
        value = float.fromhex(clean) if clean.lstrip("+-")[:2].lower() == "0x" else float(clean)
    except (ValueError, OverflowError):
        raise TriggerError(f'strconv.ParseFloat: parsing {json.dumps(text)}: invalid syntax') from None
    if math.isinf(value):
        raise TriggerError(f'strconv.ParseFloat: parsing {json.dumps(text)}: value out of range')
    return value


def parse_threshold(metadata: dict) -> float:
    """Only `threshold` (the HPA target), with the same rule and error text as parse_trigger."""
    text = _value(metadata, {}, "threshold")
    if text is None:
        raise TriggerConfigError(_PREFIX + _PREFIX + 'missing required parameter "threshold" in [triggerMetadata]')
    try:
        return _json_float(text)
    except ValueError as exc:
        raise TriggerConfigError(_PREFIX + _PREFIX + f'unable to set param "threshold" value "{text}": {exc}') from None
