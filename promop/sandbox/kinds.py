"""Per-kind rules of the built-in kinds, as kube-apiserver applies them: the defaults its
registry adds on create and update, and the validation that answers 422 Invalid.

Only the rules a controller can trip over are here (ConfigMap/Secret keys and sizes,
`immutable`, Secret encodings and types, Services, StatefulSet/Deployment selectors and
replicas); messages and field paths are upstream's. `RULES` maps a resource key to its rules;
other modules may register more kinds."""

from __future__ import annotations

import base64
import binascii
import copy
import ipaddress
import json
import re
import threading
from dataclasses import dataclass
from typing import Callable

from promop.sandbox.errors import ApiError

Cause = tuple[str, str]  # (field path, message as upstream words it)
Key = tuple[str, str]

MAX_SECRET_SIZE = 1024 * 1024  # corev1.MaxSecretSize, also the ConfigMap limit
_CONFIG_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_IANA_SVC_NAME = re.compile(r"^[-a-z0-9]+$")
SERVICE_TYPES = ("ClusterIP", "NodePort", "LoadBalancer", "ExternalName")
PROTOCOLS = ("TCP", "UDP", "SCTP")
IMMUTABLE_MSG = "field is immutable when `immutable` is set"


def _quote(value) -> str:
    return json.dumps(value) if isinstance(value, str) else str(value)


# -- ConfigMap and Secret ---------------------------------------------------------------------

def config_key_problems(key: str) -> list[str]:
    """apimachinery IsConfigMapKey, also for Secret keys."""
    problems = []
    if len(key) > 253:
        problems.append("must be no more than 253 characters")
    if not _CONFIG_KEY.match(key):
        problems.append("a valid config key must consist of alphanumeric characters, '-', '_' "
                        "or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for "
                        "validation is '[-._a-zA-Z0-9]+')")
    if key == ".":
        problems.append("must not be '.'")
    elif key == "..":
        problems.append("must not be '..'")
    elif key.startswith(".."):
        problems.append("must not start with '..'")
    return problems


def _keys(data: dict, field: str) -> list[Cause]:
    causes = []
    for key in data:
        for problem in config_key_problems(key):
            causes.append((f"{field}[{key}]", f"Invalid value: {_quote(key)}: {problem}"))
    return causes


def _immutable_update(old: dict, new: dict, fields: tuple[str, ...]) -> list[Cause]:
    if not old.get("immutable"):
        return []
    causes = []
    if not new.get("immutable"):
        causes.append(("immutable", f"Forbidden: {IMMUTABLE_MSG}"))
    for field in fields:
        if (old.get(field) or {}) != (new.get(field) or {}):
            causes.append((field, f"Forbidden: {IMMUTABLE_MSG}"))
    return causes


def validate_configmap(obj: dict) -> list[Cause]:
    data, binary = obj.get("data") or {}, obj.get("binaryData") or {}
    causes = _keys(data, "data") + _keys(binary, "binaryData")
    for key in binary:
        if key in data:
            causes.append((f"binaryData[{key}]", f"Invalid value: {_quote(key)}: duplicate of "
                           "key present in data"))
    size = sum(len(k) + len(str(v).encode()) for k, v in data.items()) + \
        sum(len(k) + len(base64.b64decode(v)) for k, v in binary.items())
    if size > MAX_SECRET_SIZE:
        causes.append(("", f"Too long: must have at most {MAX_SECRET_SIZE} bytes"))
    return causes


def decode_base64_fields(rt_kind: str, obj: dict, field: str) -> None:
    """`data` of a Secret and `binaryData` of a ConfigMap are []byte: JSON carries them as
    base64, and anything else fails decoding with 400 before validation, as upstream."""
    values = obj.get(field)
    if values is None:
        return
    if not isinstance(values, dict):
        raise ApiError(400, f'{rt_kind} in version "v1" cannot be handled as a {rt_kind}: '
                            f"json: cannot unmarshal {type(values).__name__} into Go struct "
                            f"field {rt_kind}.{field} of type map[string][]uint8")
    for key, value in values.items():
        if value is None:
            continue
        if not isinstance(value, str):
            raise ApiError(400, f'{rt_kind} in version "v1" cannot be handled as a {rt_kind}: '
                                f"json: cannot unmarshal {type(value).__name__} into Go struct "
                                f"field {rt_kind}.{field} of type []uint8")
        try:
            base64.b64decode(value.replace("\n", "").replace("\r", ""), validate=True)
        except (binascii.Error, ValueError):
            offset = next((n for n, c in enumerate(value)
                           if not (c.isascii() and (c.isalnum() or c in "+/="))), len(value))
            raise ApiError(400, f'{rt_kind} in version "v1" cannot be handled as a {rt_kind}: '
                                f"illegal base64 data at input byte {offset}") from None


SECRET_TYPE_KEYS = {
    "kubernetes.io/tls": ("tls.crt", "tls.key"),
    "kubernetes.io/dockercfg": (".dockercfg",),
    "kubernetes.io/dockerconfigjson": (".dockerconfigjson",),
    "kubernetes.io/ssh-auth": ("ssh-privatekey",),
}


def validate_secret(obj: dict) -> list[Cause]:
    data = obj.get("data") or {}
    causes = _keys(data, "data")
    size = sum(len(k) + len(base64.b64decode(v or "")) for k, v in data.items())
    if size > MAX_SECRET_SIZE:
        causes.append(("data", f"Too long: must have at most {MAX_SECRET_SIZE} bytes"))
    kind = obj.get("type") or "Opaque"
    for key in SECRET_TYPE_KEYS.get(kind, ()):
        if key not in data:
            causes.append((f"data[{key}]", "Required value"))
    if kind == "kubernetes.io/basic-auth" and not (data.get("username") or data.get("password")):
        causes += [("data[username]", "Required value"), ("data[password]", "Required value")]
    if kind == "kubernetes.io/service-account-token":
        annotation = "kubernetes.io/service-account.name"
        if not ((obj["metadata"].get("annotations") or {}).get(annotation)):
            causes.append((f"metadata.annotations[{annotation}]", "Required value"))
    if kind == "kubernetes.io/dockerconfigjson" and ".dockerconfigjson" in data:
        try:
            json.loads(base64.b64decode(data[".dockerconfigjson"]))
        except ValueError as exc:
            causes.append(("data[.dockerconfigjson]", f"Invalid value: \"<secret contents "
                           f"redacted>\": {exc}"))
    return causes


def validate_secret_update(old: dict, new: dict) -> list[Cause]:
    causes = _immutable_update(old, new, ("data",))
    if (old.get("type") or "Opaque") != (new.get("type") or "Opaque"):
        causes.append(("type", f"Invalid value: {_quote(new.get('type'))}: field is immutable"))
    return causes


def default_secret(obj: dict, old: dict | None) -> None:
    string_data = obj.pop("stringData", None) or {}
    if string_data:
        data = dict(obj.get("data") or {})
        for key, value in string_data.items():
            data[key] = base64.b64encode(str(value).encode()).decode()
        obj["data"] = data
    obj["type"] = obj.get("type") or "Opaque"


# -- Service ----------------------------------------------------------------------------------

class ClusterIPs:
    """Allocates Service cluster IPs from 10.96.0.0/12 (kubeadm's default range), as the
    apiserver's allocator does, skipping .1 (the kubernetes Service's)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.network = ipaddress.ip_network("10.96.0.0/12")
        self.next = 10
        self.used: set[str] = set()

    def allocate(self) -> str:
        with self.lock:
            while True:
                address = str(self.network[self.next])
                self.next += 1
                if address not in self.used:
                    self.used.add(address)
                    return address

    def claim(self, address: str) -> bool:
        with self.lock:
            if address in self.used:
                return False
            self.used.add(address)
            return True

    def release(self, address: str | None) -> None:
        with self.lock:
            self.used.discard(address or "")


def _headless(spec: dict) -> bool:
    return spec.get("clusterIP") == "None"


def default_service(obj: dict, old: dict | None, ips: ClusterIPs) -> None:
    """The apiserver's Service defaults, and for an update what its REST layer copies from the
    stored object when the request leaves it out (clusterIP(s), ipFamilies, nodePorts)."""
    spec = obj.setdefault("spec", {})
    spec.setdefault("type", "ClusterIP")
    if spec["type"] == "ExternalName":
        return
    spec.setdefault("sessionAffinity", "None")
    old_spec = (old or {}).get("spec") or {}
    if old is not None and old_spec.get("type", "ClusterIP") != "ExternalName":
        for field in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"):
            if field not in spec and field in old_spec:
                spec[field] = copy.deepcopy(old_spec[field])
    if not spec.get("clusterIP") and spec.get("clusterIPs"):
        spec["clusterIP"] = spec["clusterIPs"][0]
    if "clusterIPs" not in spec and spec.get("clusterIP"):
        spec["clusterIPs"] = [spec["clusterIP"]]
    spec.setdefault("ipFamilies", ["IPv4"])
    spec.setdefault("ipFamilyPolicy", "SingleStack")
    spec.setdefault("internalTrafficPolicy", "Cluster")
    if spec["type"] in ("NodePort", "LoadBalancer"):
        spec.setdefault("externalTrafficPolicy", "Cluster")
    for port in spec.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
            if "targetPort" not in port and "port" in port:
                port["targetPort"] = port["port"]
    obj.setdefault("status", {"loadBalancer": {}})


def allocate_service_ip(obj: dict, ips: ClusterIPs) -> list[Cause]:
    """On create: allocate a cluster IP, or claim the requested one (422 if taken)."""
    spec = obj.get("spec") or {}
    if spec.get("type") == "ExternalName" or _headless(spec):
        if _headless(spec):
            spec["clusterIPs"] = ["None"]
        return []
    wanted = spec.get("clusterIP")
    if wanted:
        try:
            ipaddress.ip_address(wanted)
        except ValueError:
            return [("spec.clusterIPs[0]", f"Invalid value: {_quote(wanted)}: must be a valid "
                     "IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)")]
        if not ips.claim(wanted):
            return [("spec.clusterIPs", f"Invalid value: [{_quote(wanted)}]: failed to allocate "
                     f"IP {wanted}: provided IP is already allocated")]
    else:
        spec["clusterIP"] = ips.allocate()
    spec["clusterIPs"] = [spec["clusterIP"]]
    return []


def validate_service(obj: dict) -> list[Cause]:
    spec = obj.get("spec") or {}
    causes: list[Cause] = []
    # the name's DNS-1035 rule is promop.sandbox.validation's, with every kind's name rule
    kind = spec.get("type", "ClusterIP")
    if kind not in SERVICE_TYPES:
        causes.append(("spec.type", f"Unsupported value: {_quote(kind)}: supported values: "
                       + ", ".join(f'"{t}"' for t in SERVICE_TYPES)))
    ports = spec.get("ports") or []
    if not ports and not _headless(spec) and kind != "ExternalName":
        causes.append(("spec.ports", "Required value"))
    names: set[str] = set()
    for n, port in enumerate(ports):
        path = f"spec.ports[{n}]"
        if not isinstance(port, dict):
            causes.append((path, "Invalid value: must be an object"))
            continue
        port_name = port.get("name") or ""
        if len(ports) > 1 and not port_name:
            causes.append((f"{path}.name", "Required value"))
        elif port_name:
            if len(port_name) > 63 or not _DNS1123_LABEL.match(port_name):
                causes.append((f"{path}.name", f"Invalid value: {_quote(port_name)}: a lowercase "
                               "RFC 1123 label must consist of lower case alphanumeric "
                               "characters or '-', and must start and end with an alphanumeric "
                               "character"))
            if port_name in names:
                causes.append((f"{path}.name", f"Duplicate value: {_quote(port_name)}"))
            names.add(port_name)
        number = port.get("port")
        if not isinstance(number, int) or isinstance(number, bool) or not 1 <= number <= 65535:
            causes.append((f"{path}.port", f"Invalid value: {number}: must be between 1 and "
                           "65535, inclusive"))
        protocol = port.get("protocol", "TCP")
        if protocol not in PROTOCOLS:
            causes.append((f"{path}.protocol", f"Unsupported value: {_quote(protocol)}: "
                           'supported values: "SCTP", "TCP", "UDP"'))
        target = port.get("targetPort")
        if isinstance(target, int) and not isinstance(target, bool) and \
                not 1 <= target <= 65535:
            causes.append((f"{path}.targetPort", f"Invalid value: {target}: must be between 1 "
                           "and 65535, inclusive"))
        elif isinstance(target, str) and (len(target) > 15 or
                                          not _IANA_SVC_NAME.match(target)):
            causes.append((f"{path}.targetPort", f"Invalid value: {_quote(target)}: must "
                           "contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)"))
    return causes


def validate_service_update(old: dict, new: dict) -> list[Cause]:
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    if "ExternalName" in (old_spec.get("type"), new_spec.get("type")):
        return []
    before, after = old_spec.get("clusterIPs") or [], new_spec.get("clusterIPs") or []
    if before and (not after or after[0] != before[0]):
        shown = "[]string{" + ", ".join(_quote(a) for a in after) + "}" if after else \
            "[]string(nil)"
        return [("spec.clusterIPs[0]", f"Invalid value: {shown}: may not change once set")]
    return []


# -- workloads --------------------------------------------------------------------------------

def _label_selector_matches(selector: dict, labels: dict) -> bool:
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions") or []:
        key, op = expression.get("key"), expression.get("operator")
        values = expression.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


def _go_map(labels: dict) -> str:
    return "map[string]string{" + ", ".join(f"{_quote(k)}:{_quote(v)}"
                                            for k, v in sorted(labels.items())) + "}"


def validate_workload(obj: dict) -> list[Cause]:
    return _validate_workload(obj, (obj.get("kind") or "deployment").lower())


def _validate_workload(obj: dict, kind: str) -> list[Cause]:
    """apps/v1 StatefulSet and Deployment: a selector that matches the template's labels,
    non-negative replicas, and a template with named containers that have images."""
    spec = obj.get("spec") or {}
    causes: list[Cause] = []
    replicas = spec.get("replicas")
    if isinstance(replicas, int) and not isinstance(replicas, bool) and replicas < 0:
        causes.append(("spec.replicas", f"Invalid value: {replicas}: must be greater than or "
                       "equal to 0"))
    selector = spec.get("selector")
    labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    if not selector:
        causes.append(("spec.selector", "Required value"))
    elif not (selector.get("matchLabels") or selector.get("matchExpressions")):
        causes.append(("spec.selector", f"Invalid value: {_quote(json.dumps(selector))}: "
                       f"empty selector is invalid for {kind}"))
    elif not _label_selector_matches(selector, labels):
        causes.append(("spec.template.metadata.labels", f"Invalid value: {_go_map(labels)}: "
                       "`selector` does not match template `labels`"))
    containers = ((spec.get("template") or {}).get("spec") or {}).get("containers")
    if not containers:
        causes.append(("spec.template.spec.containers", "Required value"))
    for n, container in enumerate(containers or []):
        path = f"spec.template.spec.containers[{n}]"
        if not isinstance(container, dict):
            continue
        if not container.get("name"):
            causes.append((f"{path}.name", "Required value"))
        if not container.get("image"):
            causes.append((f"{path}.image", "Required value"))
    return causes


def validate_deployment_update(old: dict, new: dict) -> list[Cause]:
    before = (old.get("spec") or {}).get("selector")
    after = (new.get("spec") or {}).get("selector")
    if before != after:
        return [("spec.selector", f"Invalid value: {json.dumps(after)}: field is immutable")]
    return []


def _default_container(container: dict) -> None:
    container.setdefault("terminationMessagePath", "/dev/termination-log")
    container.setdefault("terminationMessagePolicy", "File")
    image = container.get("image") or ""
    tagged = ":" in image.rsplit("/", 1)[-1] or "@" in image
    latest = image.rsplit("/", 1)[-1].endswith(":latest")
    container.setdefault("imagePullPolicy", "Always" if latest or not tagged
                         else "IfNotPresent")
    container.setdefault("resources", {})
    for port in container.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        found = container.get(probe)
        if isinstance(found, dict):
            found.setdefault("timeoutSeconds", 1)
            found.setdefault("periodSeconds", 10)
            found.setdefault("successThreshold", 1)
            found.setdefault("failureThreshold", 3)
            if isinstance(found.get("httpGet"), dict):
                found["httpGet"].setdefault("path", "/")
                found["httpGet"].setdefault("scheme", "HTTP")
    for env in container.get("env") or []:
        ref = ((env or {}).get("valueFrom") or {}).get("fieldRef")
        if isinstance(ref, dict):
            ref.setdefault("apiVersion", "v1")


def default_pod_template(template: dict) -> None:
    """SetDefaults_PodSpec and friends: what a real apiserver adds to a workload's template."""
    metadata = template.setdefault("metadata", {})
    metadata.setdefault("creationTimestamp", None)
    spec = template.setdefault("spec", {})
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    for field in ("containers", "initContainers"):
        for container in spec.get(field) or []:
            if isinstance(container, dict):
                _default_container(container)
    for volume in spec.get("volumes") or []:
        if not isinstance(volume, dict):
            continue
        for source in ("secret", "configMap", "projected", "downwardAPI"):
            if isinstance(volume.get(source), dict):
                volume[source].setdefault("defaultMode", 420)


def default_statefulset(obj: dict, old: dict | None) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("replicas", 1)
    spec.setdefault("podManagementPolicy", "OrderedReady")
    spec.setdefault("revisionHistoryLimit", 10)
    strategy = spec.setdefault("updateStrategy", {"type": "RollingUpdate"})
    if strategy.get("type", "RollingUpdate") == "RollingUpdate":
        strategy.setdefault("type", "RollingUpdate")
        strategy.setdefault("rollingUpdate", {}).setdefault("partition", 0)
    spec.setdefault("persistentVolumeClaimRetentionPolicy",
                    {"whenDeleted": "Retain", "whenScaled": "Retain"})
    if isinstance(spec.get("template"), dict):
        default_pod_template(spec["template"])
    for claim in spec.get("volumeClaimTemplates") or []:
        if isinstance(claim, dict):
            claim.setdefault("apiVersion", "v1")
            claim.setdefault("kind", "PersistentVolumeClaim")
            claim.setdefault("metadata", {}).setdefault("creationTimestamp", None)
            claim.setdefault("spec", {}).setdefault("volumeMode", "Filesystem")
            claim.setdefault("status", {"phase": "Pending"})


def default_deployment(obj: dict, old: dict | None) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("replicas", 1)
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)
    strategy = spec.setdefault("strategy", {"type": "RollingUpdate"})
    if strategy.get("type", "RollingUpdate") == "RollingUpdate":
        strategy.setdefault("type", "RollingUpdate")
        rolling = strategy.setdefault("rollingUpdate", {})
        rolling.setdefault("maxUnavailable", "25%")
        rolling.setdefault("maxSurge", "25%")
    if isinstance(spec.get("template"), dict):
        default_pod_template(spec["template"])


# -- the table --------------------------------------------------------------------------------

@dataclass
class KindRules:
    """What the apiserver does for one kind beyond the generic metadata checks."""

    validate: Callable[[dict], list[Cause]] | None = None
    validate_update: Callable[[dict, dict], list[Cause]] | None = None
    default: Callable[[dict, dict | None], None] | None = None
    # fields the kind's field selectors support besides metadata.name/metadata.namespace
    selectable: tuple[str, ...] = ()


EVENT_FIELDS = ("involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
                "involvedObject.uid", "involvedObject.apiVersion",
                "involvedObject.resourceVersion", "involvedObject.fieldPath", "reason",
                "reportingComponent", "source", "type")

def validate_cluster_role_binding(obj: dict) -> list[Cause]:
    """rbac validation: a ClusterRoleBinding has no namespace to stand in for a ServiceAccount
    subject's, so the subject must name one (a RoleBinding's may leave it empty)."""
    return [(f"subjects[{i}].namespace", "Required value")
            for i, s in enumerate(obj.get("subjects") or [])
            if isinstance(s, dict) and s.get("kind") == "ServiceAccount" and not s.get("namespace")]


RULES: dict[Key, KindRules] = {
    ("", "configmaps"): KindRules(validate_configmap,
                                  lambda o, n: _immutable_update(o, n, ("data", "binaryData"))),
    ("", "secrets"): KindRules(validate_secret, validate_secret_update, default_secret,
                               ("type",)),
    ("", "services"): KindRules(validate_service, validate_service_update,
                                selectable=("spec.clusterIP", "spec.type")),
    ("apps", "statefulsets"): KindRules(validate_workload, None, default_statefulset),
    ("apps", "daemonsets"): KindRules(validate_workload),
    ("apps", "deployments"): KindRules(validate_workload, validate_deployment_update,
                                       default_deployment),
    ("apps", "replicasets"): KindRules(selectable=("status.replicas",)),
    ("", "pods"): KindRules(selectable=(
        "spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
        "spec.hostNetwork", "status.phase", "status.podIP", "status.podIPs",
        "status.nominatedNodeName")),
    ("", "events"): KindRules(selectable=EVENT_FIELDS),
    ("events.k8s.io", "events"): KindRules(selectable=(
        "reason", "regarding.kind", "regarding.namespace", "regarding.name", "regarding.uid",
        "regarding.apiVersion", "regarding.resourceVersion", "regarding.fieldPath",
        "reportingController", "type")),
    ("", "namespaces"): KindRules(selectable=("status.phase",)),
    ("", "nodes"): KindRules(selectable=("spec.unschedulable",)),
    ("", "replicationcontrollers"): KindRules(selectable=("status.replicas",)),
    ("rbac.authorization.k8s.io", "clusterrolebindings"): KindRules(validate_cluster_role_binding),
}


def rules(key: Key) -> KindRules | None:
    return RULES.get(key)


def selectable_fields(key: Key) -> tuple[str, ...]:
    found = RULES.get(key)
    return ("metadata.name", "metadata.namespace") + (found.selectable if found else ())
