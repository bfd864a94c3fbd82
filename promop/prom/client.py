"""A small client for the Prometheus HTTP API (`/api/v1/...`).

One `PrometheusClient` per Prometheus, shared by threads: it keeps a pooled
`requests.Session`. Failures raise `PromError`, whose message names the
request (the PromQL, or the series matchers) and carries Prometheus' own
`errorType` and `error`, so a user can act on it without reading our code.
Retries cover what a retry can fix: connection failures and 5xx answers.
A 4xx (a bad query) or a 422 (an execution error) is never retried.
"""

from __future__ import annotations

import logging
import os
import random
import threading
import time as _time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Callable, Iterator, Mapping, Sequence

import orjson
import requests
from requests.adapters import HTTPAdapter

from promop.prom.stream import StreamDecodeError, iter_data_batches
from promop.prom.results import (
    Matrix, QueryResult, Sample, Scalar, SeriesColumns, Vector, decode_range_body, decode_result,
)

log = logging.getLogger("promop.prom")

TimeArg = float | int | datetime | None


class PromError(Exception):
    """A Prometheus API call that failed.

    `request` names what was asked (`query "sum(up)"`, `series [...]`),
    `status` is the HTTP code (0 when no answer arrived), `error_type` is
    Prometheus' `errorType` (`bad_data`, `execution`, `timeout`, ...) or one
    of ours (`connection`, `timeout`, `bad_response`), `message` is
    Prometheus' `error` text or the transport's.
    """

    def __init__(self, request: str, message: str, *, status: int = 0, error_type: str = "",
                 url: str = "") -> None:
        self.request = request
        self.message = message
        self.status = status
        self.error_type = error_type
        self.url = url
        self.retry_after: float | None = None  # a 5xx's Retry-After, in seconds
        where = f" (HTTP {status} from {url})" if status else (f" ({url})" if url else "")
        kind = f"{error_type}: " if error_type else ""
        super().__init__(f"prometheus {request} failed{where}: {kind}{message}")


class PromConnectionError(PromError):
    """No usable answer: connection refused/reset, DNS, TLS, or a timeout."""


@dataclass
class ClientOptions:
    """How to reach a Prometheus. Everything but `url` is optional."""

    url: str
    verb: str = "GET"                      # GET or POST for query/query_range/series
    timeout: float = 30.0                  # seconds per attempt (HTTP read, and Prometheus' own `timeout`)
    connect_timeout: float = 5.0
    retries: int = 2                       # extra attempts after the first
    backoff: float = 0.2                   # first retry delay, doubled each time, with jitter
    max_backoff: float = 5.0
    bearer_token: str | None = None
    bearer_token_file: str | None = None   # re-read when it changes (token rotation)
    basic_auth: tuple[str, str] | None = None
    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    insecure_skip_verify: bool = False
    headers: Mapping[str, str] = field(default_factory=dict)
    pool_size: int = 32


def format_time(t: TimeArg) -> str | None:
    """Prometheus accepts float Unix seconds; datetimes must be timezone-aware."""
    if t is None:
        return None
    if isinstance(t, datetime):
        if t.tzinfo is None:
            raise ValueError(f"naive datetime {t!r}: give a timezone (e.g. datetime.now(timezone.utc))")
        t = t.timestamp()
    return f"{float(t):.3f}"


def format_duration(seconds: float) -> str:
    """A step or timeout as Prometheus reads it: float seconds."""
    text = f"{float(seconds):.3f}".rstrip("0").rstrip(".")
    return text or "0"


class PrometheusClient:
    """Instant and range queries, series and label values against one Prometheus."""

    def __init__(self, url: str | None = None, *, options: ClientOptions | None = None,
                 sleep: Callable[[float], None] = _time.sleep, **kwargs: Any) -> None:
        if options is None:
            if url is None:
                raise TypeError("PrometheusClient needs a url or options")
            options = ClientOptions(url=url, **kwargs)
        elif url is not None or kwargs:
            raise TypeError("give either options or url/keyword options, not both")
        verb = options.verb.upper()
        if verb not in ("GET", "POST"):
            raise ValueError(f"verb must be GET or POST, not {options.verb!r}")
        if options.bearer_token and options.bearer_token_file:
            raise ValueError("give bearer_token or bearer_token_file, not both")
        if (options.bearer_token or options.bearer_token_file) and options.basic_auth:
            raise ValueError("give bearer token or basic auth, not both")
        if bool(options.cert_file) != bool(options.key_file):
            raise ValueError("a client certificate needs both cert_file and key_file")
        self.options = options
        self.verb = verb
        self.base = options.url.rstrip("/")
        self._sleep = sleep
        self._session = requests.Session()
        adapter = HTTPAdapter(pool_connections=4, pool_maxsize=options.pool_size, max_retries=0)
        self._session.mount("http://", adapter)
        self._session.mount("https://", adapter)
        self._session.headers.update(options.headers)
        if options.basic_auth:
            self._session.auth = tuple(options.basic_auth)
        # The environment (proxies, CA bundle) is read once here rather than on every request, which
        # costs requests ~1 ms with a large environment; the values are then passed per request.
        self._session.trust_env = False
        self._proxies = requests.utils.get_environ_proxies(self.base)
        env_ca = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE")
        self._verify: bool | str = False if options.insecure_skip_verify else (options.ca_file or env_ca or True)
        if options.cert_file:
            self._session.cert = (options.cert_file, options.key_file)
        self._token_lock = threading.Lock()
        self._token_cache: tuple[float, str] | None = None

    # -- public API ---------------------------------------------------------

    def query(self, query: str, time: TimeArg = None, *, timeout: float | None = None) -> QueryResult:
        """An instant query: a Vector (list of Sample), Scalar, String or Matrix."""
        params = {"query": query}
        if time is not None:
            params["time"] = format_time(time)
        params["timeout"] = format_duration(timeout or self.options.timeout)
        what = f"query {query!r}"
        data = self._call("/api/v1/query", params, what, timeout=timeout, verb=self.verb)
        return self._decode(data, what)

    def query_vector(self, query: str, time: TimeArg = None, *, timeout: float | None = None) -> Vector:
        """An instant query whose answer must be a vector (a scalar becomes one unlabelled sample)."""
        result = self.query(query, time, timeout=timeout)
        if isinstance(result, Scalar):
            return [Sample({}, result.value, result.timestamp)]
        if not isinstance(result, list) or (result and not hasattr(result[0], "value")):
            raise PromError(f"query {query!r}", f"expected a vector, got {type(result).__name__}",
                            error_type="bad_response", url=self.base)
        return result

    def query_range(self, query: str, start: TimeArg, end: TimeArg, step: float, *,
                    timeout: float | None = None) -> Matrix:
        """A range query: one RangeSeries per series, points in time order."""
        data, what = self._range_data(query, start, end, step, timeout)
        result = self._decode(data, what)
        if not isinstance(result, list):
            raise PromError(what, f"expected a matrix, got {type(result).__name__}",
                            error_type="bad_response", url=self.base)
        return result  # type: ignore[return-value]

    def query_range_columns(self, query: str, start: TimeArg, end: TimeArg, step: float, *,
                            timeout: float | None = None) -> list[SeriesColumns]:
        """A range query as SeriesColumns (labels, times and values as float arrays): query_range's
        numbers without a Python list or float kept per point, for readers of long histories."""
        body, what = self._range_data(query, start, end, step, timeout, raw=True)
        try:
            doc, series = decode_range_body(body)
        except orjson.JSONDecodeError:
            raise PromError(what, f"answer is not JSON: {body[:200]!r}", status=200, error_type="bad_response",
                            url=self.base) from None
        except (ValueError, KeyError, TypeError, IndexError, AttributeError) as exc:
            raise PromError(what, f"cannot decode the result: {exc}", error_type="bad_response",
                            url=self.base) from None
        if doc.get("status") != "success":
            raise PromError(what, doc.get("error") or "status is not success", status=200,
                            error_type=doc.get("errorType") or "", url=self.base)
        for w in doc.get("warnings") or ():
            log.warning("prometheus warning request=%s warning=%s", what, w)
        return series

    def series(self, matches: str | Sequence[str], start: TimeArg = None, end: TimeArg = None, *,
               timeout: float | None = None) -> list[dict[str, str]]:
        """Label sets of the series that match any of `matches` (series selectors)."""
        return orjson.loads(self.series_bytes(matches, start, end, timeout=timeout))["data"] or []

    def series_bytes(self, matches: str | Sequence[str], start: TimeArg = None, end: TimeArg = None, *,
                     timeout: float | None = None) -> bytes:
        """The raw body of a successful `/api/v1/series` answer, for callers that decode
        large answers their own way (the adapter keeps only what its rules need)."""
        matches = [matches] if isinstance(matches, str) else list(matches)
        if not matches:
            raise ValueError("series needs at least one match[] selector")
        params: list[tuple[str, str]] = [("match[]", m) for m in matches]
        params += _time_params(start, end)
        what = f"series {matches!r}"
        return self._call("/api/v1/series", params, what, timeout=timeout, verb=self.verb, raw=True)

    def iter_series(self, matches: str | Sequence[str], start: TimeArg = None, end: TimeArg = None, *,
                    timeout: float | None = None, batch_bytes: int = 1 << 20) -> Iterator[list[dict[str, str]]]:
        """Label sets matching `matches`, in batches decoded as the answer arrives.

        Memory stays near one batch (about `batch_bytes` of JSON) plus what the
        caller keeps, whatever the size of the answer.
        """
        matches = [matches] if isinstance(matches, str) else list(matches)
        if not matches:
            raise ValueError("series needs at least one match[] selector")
        params: list[tuple[str, str]] = [("match[]", m) for m in matches]
        params += _time_params(start, end)
        what = f"series {matches!r}"
        resp = self._call("/api/v1/series", params, what, timeout=timeout, verb=self.verb, stream=True)
        try:
            yield from iter_data_batches(resp.iter_content(chunk_size=256 * 1024), batch_bytes)
        except StreamDecodeError as exc:
            raise PromError(what, str(exc), status=200, error_type="bad_response", url=self.base) from None
        except (requests.exceptions.ConnectionError, requests.exceptions.ChunkedEncodingError) as exc:
            raise PromConnectionError(what, f"answer cut short: {_transport_message(exc)}",
                                      error_type="connection", url=self.base) from None
        finally:
            resp.close()

    def label_values(self, label: str, matches: str | Sequence[str] | None = None,
                     start: TimeArg = None, end: TimeArg = None, *, timeout: float | None = None) -> list[str]:
        """Values of `label`, optionally only on series matching `matches`."""
        params = [("match[]", m) for m in _as_list(matches)] + _time_params(start, end)
        what = f"label values of {label!r}"
        path = "/api/v1/label/" + requests.utils.quote(label, safe="") + "/values"
        return self._call(path, params, what, timeout=timeout, verb="GET") or []

    def label_names(self, matches: str | Sequence[str] | None = None, start: TimeArg = None,
                    end: TimeArg = None, *, timeout: float | None = None) -> list[str]:
        params = [("match[]", m) for m in _as_list(matches)] + _time_params(start, end)
        return self._call("/api/v1/labels", params, "label names", timeout=timeout, verb=self.verb) or []

    def close(self) -> None:
        self._session.close()

    def __enter__(self) -> "PrometheusClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals ----------------------------------------------------------

    def _range_data(self, query: str, start: TimeArg, end: TimeArg, step: float,
                    timeout: float | None, raw: bool = False) -> tuple[Any, str]:
        if step <= 0:
            raise ValueError(f"step must be positive, got {step}")
        params = {
            "query": query,
            "start": format_time(start),
            "end": format_time(end),
            "step": format_duration(step),
            "timeout": format_duration(timeout or self.options.timeout),
        }
        what = f"range query {query!r}"
        return self._call("/api/v1/query_range", params, what, timeout=timeout, verb=self.verb, raw=raw), what

    def _decode(self, data: dict, what: str) -> QueryResult:
        try:
            return decode_result(data)
        except (ValueError, KeyError, TypeError, IndexError) as exc:
            raise PromError(what, f"cannot decode the result: {exc}", error_type="bad_response",
                            url=self.base) from None

    def _auth_header(self) -> dict[str, str]:
        token = self.options.bearer_token
        path = self.options.bearer_token_file
        if path:
            try:
                mtime = os.stat(path).st_mtime_ns
            except OSError as exc:
                raise PromError("authentication", f"cannot read bearer token file {path}: {exc.strerror}",
                                error_type="config") from None
            with self._token_lock:
                if self._token_cache is None or self._token_cache[0] != mtime:
                    with open(path, encoding="utf-8") as f:
                        self._token_cache = (mtime, f.read().strip())
                token = self._token_cache[1]
        return {"Authorization": f"Bearer {token}"} if token else {}

    def _call(self, path: str, params: Any, what: str, *, timeout: float | None, verb: str,
              raw: bool = False, stream: bool = False) -> Any:
        url = self.base + path
        read_timeout = (timeout or self.options.timeout) + 1.0  # let Prometheus' own timeout answer first
        attempts = self.options.retries + 1
        last: PromError | None = None
        for attempt in range(attempts):
            if attempt:
                self._sleep(self._delay(attempt, last))
            try:
                headers = self._auth_header()
                if verb == "POST":
                    resp = self._session.post(url, data=params, headers=headers, verify=self._verify,
                                              proxies=self._proxies,
                                              timeout=(self.options.connect_timeout, read_timeout), stream=stream)
                else:
                    resp = self._session.get(url, params=params, headers=headers, verify=self._verify,
                                             proxies=self._proxies,
                                             timeout=(self.options.connect_timeout, read_timeout), stream=stream)
            except requests.exceptions.ReadTimeout:
                # The query itself is slow: another attempt would only be as slow.
                raise PromConnectionError(what, f"no answer within {read_timeout:g}s",
                                          error_type="timeout", url=url) from None
            except requests.exceptions.SSLError as exc:
                # A certificate problem does not go away on retry.
                raise PromConnectionError(what, _transport_message(exc), error_type="tls", url=url) from None
            except (requests.exceptions.ConnectionError, requests.exceptions.ChunkedEncodingError) as exc:
                last = PromConnectionError(what, _transport_message(exc), error_type="connection", url=url)
                continue
            except requests.exceptions.RequestException as exc:
                raise PromConnectionError(what, str(exc), error_type="connection", url=url) from None
            if resp.status_code == 200:
                if stream:
                    return resp
                if raw:
                    return resp.content
                try:
                    body = orjson.loads(resp.content)
                except orjson.JSONDecodeError:
                    raise PromError(what, f"answer is not JSON: {_snippet(resp)}", status=200,
                                    error_type="bad_response", url=url) from None
                if body.get("status") != "success":
                    raise PromError(what, body.get("error") or "status is not success", status=200,
                                    error_type=body.get("errorType") or "", url=url)
                for w in body.get("warnings") or ():
                    log.warning("prometheus warning request=%s warning=%s", what, w)
                return body.get("data")
            err = _error_from(resp, what, url)
            if resp.status_code >= 500:
                err.retry_after = _retry_after(resp)
                last = err
                continue
            raise err
        assert last is not None
        if attempts > 1:
            last.args = (f"{last.args[0]} (after {attempts} attempts)",)
        raise last

    def _delay(self, attempt: int, last: PromError | None) -> float:
        hinted = last.retry_after if last is not None else None
        if hinted is not None:
            return min(hinted, self.options.max_backoff)
        base = min(self.options.backoff * (2 ** (attempt - 1)), self.options.max_backoff)
        return base * (0.5 + random.random() / 2)


def _as_list(matches: str | Sequence[str] | None) -> list[str]:
    if matches is None:
        return []
    return [matches] if isinstance(matches, str) else list(matches)


def _time_params(start: TimeArg, end: TimeArg) -> list[tuple[str, str]]:
    out = []
    if start is not None:
        out.append(("start", format_time(start)))
    if end is not None:
        out.append(("end", format_time(end)))
    return out  # type: ignore[return-value]


def _snippet(resp: requests.Response) -> str:
    text = resp.text.strip().replace("\n", " ")
    return (text[:200] + "...") if len(text) > 200 else (text or "(empty body)")


def _error_from(resp: requests.Response, what: str, url: str) -> PromError:
    try:
        body = orjson.loads(resp.content)
        if isinstance(body, dict) and body.get("error"):
            return PromError(what, body["error"], status=resp.status_code,
                             error_type=body.get("errorType") or "", url=url)
    except orjson.JSONDecodeError:
        pass
    return PromError(what, _snippet(resp), status=resp.status_code, url=url)


def _retry_after(resp: requests.Response) -> float | None:
    value = resp.headers.get("Retry-After")
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        return None


def _transport_message(exc: Exception) -> str:
    # requests nests urllib3's reason deep inside; the innermost reason is the readable one.
    reason: Any = exc
    for _ in range(4):
        inner = getattr(reason, "reason", None) or (reason.args[0] if getattr(reason, "args", None) else None)
        if inner is None or inner is reason or isinstance(inner, str):
            break
        reason = inner
    text = str(reason)
    return text if len(text) < 300 else text[:300] + "..."

