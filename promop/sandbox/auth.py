"""Optional authentication and RBAC (`Sandbox(authorization="rbac")`): bearer tokens (401
without a known one), ServiceAccount tokens from `serviceaccounts/<name>/token`, and
Roles/ClusterRoles with their bindings evaluated as the apiserver's RBAC authorizer does
(403 Forbidden, worded as upstream).

The sandbox's own token (`ADMIN_TOKEN`, in its kubeconfig and `api_client()`) is a member of
`system:masters`: everything is allowed. Discovery and health paths need only a known token
(upstream's `system:discovery` and `system:public-info-viewer` roles)."""

from __future__ import annotations

import secrets
import threading
from dataclasses import dataclass

from promop.sandbox.errors import ApiError

ADMIN_TOKEN = "sandbox"
MASTERS = "system:masters"
ROLES = ("rbac.authorization.k8s.io", "roles")
CLUSTER_ROLES = ("rbac.authorization.k8s.io", "clusterroles")
ROLE_BINDINGS = ("rbac.authorization.k8s.io", "rolebindings")
CLUSTER_ROLE_BINDINGS = ("rbac.authorization.k8s.io", "clusterrolebindings")
SERVICE_ACCOUNTS = ("", "serviceaccounts")


@dataclass(frozen=True)
class User:
    name: str
    groups: tuple[str, ...]
    service_account: tuple[str, str, str] | None = None  # (namespace, name, uid)


ADMIN = User("sandbox-admin", (MASTERS, "system:authenticated"))


@dataclass(frozen=True)
class Attributes:
    verb: str
    group: str
    resource: str
    subresource: str
    namespace: str
    name: str


def unauthorized() -> ApiError:
    return ApiError(401, "Unauthorized", reason="Unauthorized")


class Authenticator:
    """Bearer tokens: the admin token, and ServiceAccount tokens it issued (valid while the
    ServiceAccount exists with the same uid)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.tokens: dict[str, User] = {ADMIN_TOKEN: ADMIN}

    def issue(self, namespace: str, name: str, uid: str) -> str:
        token = "sandbox-sa-" + secrets.token_urlsafe(24)
        user = User(f"system:serviceaccount:{namespace}:{name}",
                    ("system:serviceaccounts", f"system:serviceaccounts:{namespace}",
                     "system:authenticated"), (namespace, name, uid))
        with self.lock:
            self.tokens[token] = user
        return token

    def authenticate(self, header: str | None, store) -> User:
        if not header or not header.startswith("Bearer "):
            raise unauthorized()
        with self.lock:
            user = self.tokens.get(header[len("Bearer "):].strip())
        if user is None:
            raise unauthorized()
        if user.service_account is not None:
            namespace, name, uid = user.service_account
            account = store.get(SERVICE_ACCOUNTS, namespace, name)
            if account is None or account["metadata"]["uid"] != uid:
                raise unauthorized()  # the ServiceAccount was deleted: its tokens die with it
        return user


def _subject_matches(subject: dict, user: User, binding_namespace: str) -> bool:
    kind = subject.get("kind")
    if kind == "User":
        return subject.get("name") == user.name
    if kind == "Group":
        return subject.get("name") in user.groups
    if kind == "ServiceAccount" and user.service_account is not None:
        return (subject.get("namespace") or binding_namespace) == user.service_account[0] and \
            subject.get("name") == user.service_account[1]
    return False


def _rule_allows(rule: dict, attrs: Attributes) -> bool:
    verbs = rule.get("verbs") or []
    if "*" not in verbs and attrs.verb not in verbs:
        return False
    groups = rule.get("apiGroups") or []
    if "*" not in groups and attrs.group not in groups:
        return False
    resource = attrs.resource + (f"/{attrs.subresource}" if attrs.subresource else "")
    resources = rule.get("resources") or []
    if not ("*" in resources or resource in resources or
            (attrs.subresource and f"*/{attrs.subresource}" in resources)):
        return False
    names = rule.get("resourceNames") or []
    return not names or (bool(attrs.name) and attrs.name in names)


def _role_rules(store, role_ref: dict, namespace: str) -> list[dict]:
    kind, name = role_ref.get("kind"), role_ref.get("name", "")
    if kind == "ClusterRole":
        role = store.get(CLUSTER_ROLES, "", name)
    elif kind == "Role":
        role = store.get(ROLES, namespace, name)
    else:
        role = None
    return (role or {}).get("rules") or []


def allowed(store, user: User, attrs: Attributes) -> bool:
    if MASTERS in user.groups:
        return True
    for binding, _raw in store.items(CLUSTER_ROLE_BINDINGS, None):
        if any(_subject_matches(s, user, "") for s in binding.get("subjects") or []):
            if any(_rule_allows(r, attrs)
                   for r in _role_rules(store, binding.get("roleRef") or {}, "")):
                return True
    if attrs.namespace:
        for binding, _raw in store.items(ROLE_BINDINGS, attrs.namespace):
            if any(_subject_matches(s, user, attrs.namespace)
                   for s in binding.get("subjects") or []):
                if any(_rule_allows(r, attrs) for r in _role_rules(
                        store, binding.get("roleRef") or {}, attrs.namespace)):
                    return True
    return False


def forbidden(user: User, attrs: Attributes) -> ApiError:
    resource = attrs.resource + (f"/{attrs.subresource}" if attrs.subresource else "")
    where = f'in the namespace "{attrs.namespace}"' if attrs.namespace else "at the cluster scope"
    qualified = f"{attrs.resource}.{attrs.group}" if attrs.group else attrs.resource
    subject = f'{qualified} "{attrs.name}"' if attrs.name else qualified
    details = {"name": attrs.name, "group": attrs.group, "kind": attrs.resource}
    if not attrs.name:
        del details["name"]
    if not attrs.group:
        del details["group"]
    return ApiError(403, f'{subject} is forbidden: User "{user.name}" cannot {attrs.verb} '
                         f'resource "{resource}" in API group "{attrs.group}" {where}',
                    reason="Forbidden", details=details)
