"""External metrics of KEDA ScaledObjects, forwarded to the autoscaler's internal endpoint.

KEDA needs its own metrics server and so conflicts with prometheus-adapter: one APIService per
group (KEDA #470). `promop adapter --keda-metrics-url` serves both on one APIService: a request
whose labelSelector names `scaledobject.keda.sh/name` goes to the ScaledObject controller (which
holds the scale loops' state and the shared query cache, as KEDA's operator does on :9666);
every other request is answered by the adapter's own externalRules.
"""

from __future__ import annotations

from urllib.parse import quote

import orjson
import requests

from promop.labelselector import SelectorError, parse

SO_LABEL = "scaledobject.keda.sh/name"


class KedaForwardError(Exception):
    """The answer to send: HTTP `code` and an apiserver-style `reason`/message."""

    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason


def names_scaled_object(label_selector: str | None) -> bool:
    """True when the selector mentions the ScaledObject label at all: the request is KEDA's."""
    return bool(label_selector) and SO_LABEL in label_selector


def scaled_object_name(label_selector: str | None) -> str:
    """The ScaledObject named by an exact-match requirement on `scaledobject.keda.sh/name`
    (KEDA's RequiresExactMatch), or KEDA's own error."""
    try:
        reqs = parse(label_selector).requirements
    except SelectorError as exc:
        raise KedaForwardError(400, "BadRequest", f"invalid labelSelector {label_selector!r}: {exc}") from None
    for req in reqs:
        if req.key == SO_LABEL and req.operator in ("=", "==", "in") and len(req.values) == 1:
            return list(req.values)[0]
    raise KedaForwardError(500, "InternalError", "scaledObject name is not specified")


class KedaForwarder:
    """GETs `<url>/keda/v1/namespaces/<ns>/scaledobjects/<so>/metrics/<metric>` on the controller."""

    def __init__(self, url: str | None, timeout: float = 10.0) -> None:
        self.url = (url or "").rstrip("/")
        self.timeout = timeout
        self._session = requests.Session()

    def external(self, namespace: str, metric: str, label_selector: str | None) -> dict:
        name = scaled_object_name(label_selector)
        if not self.url:
            raise KedaForwardError(503, "ServiceUnavailable",
                                   f"external metric {metric} of ScaledObject {namespace}/{name}: this adapter serves "
                                   "no KEDA ScaledObjects; start it with --keda-metrics-url=http://<promop "
                                   "autoscaler>:9666")
        path = (f"/keda/v1/namespaces/{quote(namespace, safe='')}/scaledobjects/{quote(name, safe='')}"
                f"/metrics/{quote(metric, safe='')}")
        try:
            resp = self._session.get(self.url + path, timeout=self.timeout)
        except requests.RequestException as exc:
            raise KedaForwardError(503, "ServiceUnavailable",
                                   f"the ScaledObject controller at {self.url} did not answer: {exc}") from None
        try:
            body = orjson.loads(resp.content)
        except orjson.JSONDecodeError:
            body = None
        if resp.status_code == 200 and isinstance(body, dict):
            return body
        message = body.get("message") if isinstance(body, dict) else None
        raise KedaForwardError(resp.status_code if resp.status_code >= 400 else 502,
                               "NotFound" if resp.status_code == 404 else "InternalError",
                               message or f"the ScaledObject controller answered HTTP {resp.status_code}")

    def close(self) -> None:
        self._session.close()
