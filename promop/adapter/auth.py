"""Authentication and authorization as an aggregated API server does them.

The kube-apiserver (the aggregator) proxies requests with its front-proxy
client certificate and names the user in `X-Remote-User`/`X-Remote-Group`.
We trust those headers only on a connection whose client certificate the
requestheader CA (from `kube-system/extension-apiserver-authentication`)
signed, and whose CN is allowed. A bearer token instead is checked with a
TokenReview. Each request is then authorized with a SubjectAccessReview,
cached briefly (10 s, like the apiserver's delegated authorizer).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Mapping

log = logging.getLogger("promop.adapter")

AUTH_CONFIGMAP = ("kube-system", "extension-apiserver-authentication")


class AuthError(Exception):
    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message

    def body(self) -> dict:
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": self.message, "reason": self.reason, "code": self.code}


@dataclass(frozen=True)
class User:
    name: str
    groups: tuple[str, ...] = ()
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()


@dataclass(frozen=True)
class RequestAttributes:
    verb: str
    path: str = ""
    group: str = ""
    version: str = ""
    namespace: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    resource_request: bool = False


@dataclass
class RequestHeaderConfig:
    """The front proxy's settings (requestheader-* in the auth ConfigMap, or flags)."""

    client_ca: str = ""                       # PEM
    allowed_names: list[str] = field(default_factory=list)
    username_headers: list[str] = field(default_factory=lambda: ["X-Remote-User"])
    group_headers: list[str] = field(default_factory=lambda: ["X-Remote-Group"])
    extra_prefixes: list[str] = field(default_factory=lambda: ["X-Remote-Extra-"])

    @classmethod
    def from_configmap(cls, data: Mapping[str, str]) -> "RequestHeaderConfig":
        def lst(key: str, default: list[str]) -> list[str]:
            raw = data.get(key)
            if not raw:
                return default
            try:
                value = json.loads(raw)
                return [str(v) for v in value] if isinstance(value, list) else default
            except ValueError:
                return default
        base = cls()
        return cls(client_ca=data.get("requestheader-client-ca-file", ""),
                   allowed_names=lst("requestheader-allowed-names", []),
                   username_headers=lst("requestheader-username-headers", base.username_headers),
                   group_headers=lst("requestheader-group-headers", base.group_headers),
                   extra_prefixes=lst("requestheader-extra-headers-prefix", base.extra_prefixes))


def _subject_cn(cert: Mapping[str, Any]) -> str:
    for rdn in cert.get("subject") or ():
        for key, value in rdn:
            if key == "commonName":
                return value
    return ""


class Authenticator:
    def __init__(self, requestheader: RequestHeaderConfig, kube: Any = None, cache_ttl: float = 10.0) -> None:
        self.rh = requestheader
        self.kube = kube
        self.cache_ttl = cache_ttl
        self._tokens: dict[str, tuple[float, User | None]] = {}
        self._lock = threading.Lock()

    def authenticate(self, cert: Mapping[str, Any] | None, headers: Any) -> User:
        if cert:  # verified by the TLS layer against the requestheader CA
            cn = _subject_cn(cert)
            if self.rh.allowed_names and cn not in self.rh.allowed_names:
                raise AuthError(401, "Unauthorized", f"Unauthorized: client certificate CN {cn!r} is not among "
                                                     f"requestheader-allowed-names {self.rh.allowed_names}")
            name = next((headers.get(h) for h in self.rh.username_headers if headers.get(h)), "")
            if not name:
                raise AuthError(401, "Unauthorized", "Unauthorized: front-proxy request without a user header "
                                                     f"({', '.join(self.rh.username_headers)})")
            groups: list[str] = []
            for h in self.rh.group_headers:
                groups += list(headers.get_all(h) or [])
            extra: dict[str, list[str]] = {}
            for key in headers.keys():
                for prefix in self.rh.extra_prefixes:
                    if key.lower().startswith(prefix.lower()):
                        extra.setdefault(key[len(prefix):].lower(), []).append(headers.get(key))
            return User(name, tuple(groups), tuple((k, tuple(v)) for k, v in sorted(extra.items())))
        auth = headers.get("Authorization") or ""
        if auth.startswith("Bearer ") and self.kube is not None:
            return self._token(auth[7:].strip())
        raise AuthError(401, "Unauthorized", "Unauthorized: no front-proxy client certificate signed by the "
                                             "requestheader CA, and no bearer token")

    def _token(self, token: str) -> User:
        now = time.monotonic()
        with self._lock:
            hit = self._tokens.get(token)
        if hit and hit[0] > now:
            user = hit[1]
        else:
            from promop.kube.resources import Resource

            res = Resource("authentication.k8s.io", "v1", "tokenreviews", False, "TokenReview")
            try:
                review = self.kube.create(res, {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                                                "spec": {"token": token}})
            except Exception as exc:
                log.error("TokenReview failed: %s", exc)
                raise AuthError(401, "Unauthorized", "Unauthorized: the token could not be reviewed") from None
            status = review.get("status") or {}
            user = None
            if status.get("authenticated"):
                u = status.get("user") or {}
                user = User(u.get("username", ""), tuple(u.get("groups") or ()))
            with self._lock:
                if len(self._tokens) > 10_000:
                    self._tokens.clear()
                self._tokens[token] = (now + self.cache_ttl, user)
        if user is None:
            raise AuthError(401, "Unauthorized", "Unauthorized: the bearer token is not valid")
        return user


class Authorizer:
    """A SubjectAccessReview per distinct (user, request), cached for `ttl` seconds."""

    def __init__(self, kube: Any, allow_ttl: float = 10.0, deny_ttl: float = 10.0) -> None:
        self.kube = kube
        self.allow_ttl = allow_ttl
        self.deny_ttl = deny_ttl
        self._cache: dict[tuple, tuple[float, bool, str]] = {}
        self._lock = threading.Lock()
        self.reviews = 0

    def authorize(self, user: User | None, attrs: RequestAttributes) -> None:
        if user is None:
            user = User("system:anonymous", ("system:unauthenticated",))
        key = (user, attrs)
        now = time.monotonic()
        with self._lock:
            hit = self._cache.get(key)
        if hit is None or hit[0] <= now:
            allowed, reason = self._review(user, attrs)
            with self._lock:
                if len(self._cache) > 10_000:
                    self._cache.clear()
                self._cache[key] = (now + (self.allow_ttl if allowed else self.deny_ttl), allowed, reason)
        else:
            _, allowed, reason = hit
        if not allowed:
            raise AuthError(403, "Forbidden", forbidden_message(user, attrs, reason))

    def _review(self, user: User, attrs: RequestAttributes) -> tuple[bool, str]:
        from promop.kube.resources import Resource

        spec: dict[str, Any] = {"user": user.name, "groups": list(user.groups)}
        if user.extra:
            spec["extra"] = {k: list(v) for k, v in user.extra}
        if attrs.resource_request:
            ra = {"verb": attrs.verb, "group": attrs.group, "version": attrs.version, "resource": attrs.resource}
            for k in ("namespace", "subresource", "name"):
                if getattr(attrs, k):
                    ra[k] = getattr(attrs, k)
            spec["resourceAttributes"] = ra
        else:
            spec["nonResourceAttributes"] = {"path": attrs.path, "verb": attrs.verb}
        res = Resource("authorization.k8s.io", "v1", "subjectaccessreviews", False, "SubjectAccessReview")
        self.reviews += 1
        try:
            out = self.kube.create(res, {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                                         "spec": spec})
        except Exception as exc:
            log.error("SubjectAccessReview failed: %s", exc)
            return False, f"the SubjectAccessReview could not be made: {exc}"
        status = out.get("status") or {}
        return bool(status.get("allowed")) and not status.get("denied"), status.get("reason", "")


def forbidden_message(user: User, attrs: RequestAttributes, reason: str) -> str:
    if attrs.resource_request:
        res = attrs.resource + (f"/{attrs.subresource}" if attrs.subresource else "")
        where = f' in the namespace "{attrs.namespace}"' if attrs.namespace else ""
        obj = f'{attrs.resource}.{attrs.group} "{attrs.name}"' if attrs.name else f"{attrs.resource}.{attrs.group}"
        msg = (f'{obj} is forbidden: User "{user.name}" cannot {attrs.verb} resource "{res}" '
               f'in API group "{attrs.group}"{where}')
    else:
        msg = f'forbidden: User "{user.name}" cannot {attrs.verb} path "{attrs.path}"'
    return msg + (f": {reason}" if reason else "")
