"""Authentication and authorization as an aggregated API server does them.

The kube-apiserver (the aggregator) proxies requests with its front-proxy
client certificate and names the user in `X-Remote-User`/`X-Remote-Group`.
We trust those headers only on a connection whose client certificate the
requestheader CA (from `kube-system/extension-apiserver-authentication`)
signed, and whose CN is allowed. A client certificate signed by the client CA
(`--client-ca-file`, or `client-ca-file` in that ConfigMap) is a user itself:
CN the name, O the groups, headers ignored. The TLS layer trusts both CAs, so
which one signed a certificate is checked here, on its signature. A bearer
token instead is checked with a TokenReview. Each request is then authorized with a SubjectAccessReview,
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


def with_authenticated_group(user: User) -> User:
    """`system:authenticated` added to an authenticated user's groups, as the generic apiserver's
    AuthenticatedGroupAdder does after every authenticator: kube-aggregator's own discovery requests
    arrive as system:kube-aggregator with no group (its legacy fallback), and RBAC grants discovery
    paths to system:authenticated (system:discovery), so without it the SubjectAccessReview denies."""
    if user.name == "system:anonymous" or any(g in ("system:authenticated", "system:unauthenticated")
                                               for g in user.groups):
        return user
    return User(user.name, (*user.groups, "system:authenticated"), user.extra)


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


def _subject(cert: Mapping[str, Any], key: str) -> list[str]:
    return [value for rdn in cert.get("subject") or () for k, value in rdn if k == key]


def _subject_cn(cert: Mapping[str, Any]) -> str:
    return next(iter(_subject(cert, "commonName")), "")


def issued_by(der: bytes, ca_pem: str) -> bool:
    """Whether one of the CAs in `ca_pem` signed the certificate `der` (directly)."""
    from cryptography import x509
    from cryptography.exceptions import InvalidSignature

    if not ca_pem:
        return False
    cert = x509.load_der_x509_certificate(der)
    for ca in x509.load_pem_x509_certificates(ca_pem.encode()):
        try:
            cert.verify_directly_issued_by(ca)
            return True
        except (ValueError, TypeError, InvalidSignature):  # another issuer name, signature or key type
            continue
    return False


class Authenticator:
    def __init__(self, requestheader: RequestHeaderConfig, kube: Any = None, cache_ttl: float = 10.0,
                 client_ca: str = "") -> None:
        self.rh = requestheader
        self.client_ca = client_ca          # PEM: certificates it signed are users (CN, O)
        self.kube = kube
        self.cache_ttl = cache_ttl
        self._tokens: dict[str, tuple[float, User | None]] = {}
        self._issuers: dict[tuple[bytes, str, str], tuple[bool, bool]] = {}
        self._lock = threading.Lock()

    def _which_ca(self, der: bytes) -> tuple[bool, bool]:
        """(signed by the requestheader CA, signed by the client CA), cached per certificate and CAs."""
        key = (der, self.rh.client_ca, self.client_ca)
        hit = self._issuers.get(key)
        if hit is None:
            hit = (issued_by(der, self.rh.client_ca), issued_by(der, self.client_ca))
            with self._lock:
                if len(self._issuers) > 1000:
                    self._issuers.clear()
                self._issuers[key] = hit
        return hit

    def authenticate(self, cert: Mapping[str, Any] | None, headers: Any, der: bytes | None = None) -> User:
        """The user of a request. `cert` is the peer certificate the TLS layer verified against the CAs
        it trusts, `der` the same certificate's bytes (to tell which CA signed it)."""
        if cert:
            if der is None:   # only the TLS layer's word: it trusts just the front proxy's CA then
                front, client = not self.client_ca, False
            else:
                front, client = self._which_ca(der)
            if front:   # like the apiserver's union: the front proxy first, then the client CA
                try:
                    return self._front_proxy(cert, headers)
                except AuthError:
                    if not client:
                        raise
            if client:
                return self._client_cert(cert)
            raise AuthError(401, "Unauthorized", "Unauthorized: the client certificate is signed neither by the "
                                                 "requestheader CA nor by the client CA")
        auth = headers.get("Authorization") or ""
        if auth.startswith("Bearer ") and self.kube is not None:
            return self._token(auth[7:].strip())
        raise AuthError(401, "Unauthorized", "Unauthorized: no front-proxy client certificate signed by the "
                                             "requestheader CA, and no bearer token")

    def _front_proxy(self, cert: Mapping[str, Any], headers: Any) -> User:
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

    @staticmethod
    def _client_cert(cert: Mapping[str, Any]) -> User:
        """x509 client-certificate login: CN is the user, each O a group (the apiserver's convention)."""
        cn = _subject_cn(cert)
        if not cn:
            raise AuthError(401, "Unauthorized", "Unauthorized: the client certificate has no common name (CN)")
        return User(cn, tuple(_subject(cert, "organizationName")))

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
