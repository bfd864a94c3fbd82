"""The sandbox's admission chain against a scripted webhook: what kube-apiserver does with each answer
and each field of a webhook configuration (promop/sandbox/admission.py)."""

from __future__ import annotations

import base64
import json
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from promop.certs import CA
from promop.sandbox.admission import rule_matches
from promop.sandbox.errors import ApiError
from promop.sandbox.resources import ResourceType

CM = ResourceType("", "v1", "configmaps", "ConfigMap", True)
NODE = ResourceType("", "v1", "nodes", "Node", False)


class Scripted:
    """An HTTPS webhook answering with `self.answer(request) -> response dict`; records what it got."""

    def __init__(self, tmp_path) -> None:
        ca = CA.create("scripted-ca")
        cert, key = ca.issue("scripted", hosts=["127.0.0.1"])
        (tmp_path / "s.crt").write_bytes(cert)
        (tmp_path / "s.key").write_bytes(key)
        self.bundle = base64.b64encode(ca.cert_pem).decode()
        self.seen: list[dict] = []
        self.release = threading.Event()
        self.answer = lambda request: {"allowed": True}
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(tmp_path / "s.crt", tmp_path / "s.key")
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.seen.append(review)
                response = {"uid": review["request"]["uid"], **outer.answer(review["request"])}
                body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                                   "response": response}).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"https://127.0.0.1:{self.server.server_address[1]}/check"

    def stop(self) -> None:
        self.release.set()
        self.server.shutdown()


@pytest.fixture
def hook(tmp_path):
    s = Scripted(tmp_path)
    yield s
    s.stop()


def _register(sandbox, hook: Scripted, kind: str = "ValidatingWebhookConfiguration", **fields) -> None:
    webhook = {"name": "check.example.com", "clientConfig": {"url": hook.url, "caBundle": hook.bundle},
               "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"],
                          "resources": ["configmaps"]}],
               "sideEffects": "None", "admissionReviewVersions": ["v1"], **fields}
    plural = kind.lower() + "s"
    rt = sandbox.registry.lookup("admissionregistration.k8s.io", "v1", plural)
    sandbox.api.create(rt, "", {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
                                "metadata": {"name": "cfg"}, "webhooks": [webhook]})


def _cm(sandbox, name: str = "c", dry_run: bool = False, **data):
    rt = sandbox.registry.lookup("", "v1", "configmaps")
    return sandbox.api.create(rt, "default", {"apiVersion": "v1", "kind": "ConfigMap",
                                              "metadata": {"name": name}, "data": data}, dry_run=dry_run)


def test_denial_wording_and_status_code(sandbox, hook):
    _register(sandbox, hook)
    hook.answer = lambda r: {"allowed": False, "status": {"code": 403, "message": "no thanks"}}
    with pytest.raises(ApiError) as err:
        _cm(sandbox)
    assert err.value.code == 403
    assert err.value.message == 'admission webhook "check.example.com" denied the request: no thanks'
    hook.answer = lambda r: {"allowed": False}
    with pytest.raises(ApiError) as err:
        _cm(sandbox)
    assert err.value.code == 400
    assert err.value.message == 'admission webhook "check.example.com" denied the request without explanation'


def test_the_review_carries_the_request(sandbox, hook):
    _register(sandbox, hook)
    _cm(sandbox, a="1")
    [review] = hook.seen
    request = review["request"]
    assert review["apiVersion"] == "admission.k8s.io/v1"
    assert request["operation"] == "CREATE" and request["namespace"] == "default" and request["name"] == "c"
    assert request["resource"] == {"group": "", "version": "v1", "resource": "configmaps"}
    assert request["object"]["data"] == {"a": "1"} and request["oldObject"] is None


def test_a_webhook_only_sees_the_operations_it_asked_for(sandbox, hook):
    _register(sandbox, hook, rules=[{"operations": ["UPDATE"], "apiGroups": [""], "apiVersions": ["v1"],
                                     "resources": ["configmaps"]}])
    hook.answer = lambda r: {"allowed": False}
    _cm(sandbox)  # CREATE: not called
    assert hook.seen == []


def test_v1_refuses_side_effects_and_dry_run_skips_such_webhooks(sandbox, hook):
    with pytest.raises(ApiError) as err:
        _register(sandbox, hook, sideEffects="Some")
    assert err.value.code == 422 and 'webhooks[0].sideEffects: Unsupported value: "Some"' in err.value.message
    # a configuration stored through admissionregistration v1beta1 may still say Some: dry runs refuse it
    _register(sandbox, hook)
    key = ("admissionregistration.k8s.io", "validatingwebhookconfigurations")
    stored = json.loads(json.dumps(sandbox.store.get(key, "", "cfg")))
    stored["webhooks"][0]["sideEffects"] = "Some"
    sandbox.store.put(key, stored, sandbox.store.get(key, "", "cfg"))
    with pytest.raises(ApiError) as err:
        _cm(sandbox, dry_run=True)
    assert err.value.message == 'admission webhook "check.example.com" does not support dry run'
    assert hook.seen == []
    _cm(sandbox)  # not a dry run: called and allowed
    assert len(hook.seen) == 1 and hook.seen[0]["request"]["dryRun"] is False


@pytest.mark.parametrize("change,cause", [
    ({"name": "short.name"}, 'webhooks[0].name: Invalid value: "short.name": should be a domain with at least three'),
    ({"clientConfig": {"url": "http://127.0.0.1:1/x"}}, "webhooks[0].clientConfig.url: Invalid value"),
    ({"clientConfig": {}}, "webhooks[0].clientConfig: Required value: exactly one of url or service"),
    ({"admissionReviewVersions": []}, "webhooks[0].admissionReviewVersions: Required value"),
    ({"timeoutSeconds": 31}, "webhooks[0].timeoutSeconds: Invalid value: 31"),
    ({"failurePolicy": "Sometimes"}, 'webhooks[0].failurePolicy: Unsupported value: "Sometimes"'),
])
def test_a_bad_configuration_is_refused(sandbox, hook, change, cause):
    with pytest.raises(ApiError) as err:
        _register(sandbox, hook, **change)
    assert err.value.code == 422 and cause in err.value.message, err.value.message


def test_configuration_defaults(sandbox, hook):
    _register(sandbox, hook, kind="MutatingWebhookConfiguration")
    rt = sandbox.registry.lookup("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations")
    [stored] = sandbox.api.get(rt, "", "cfg")["webhooks"]
    assert (stored["failurePolicy"], stored["timeoutSeconds"], stored["reinvocationPolicy"],
            stored["matchPolicy"]) == ("Fail", 10, "Never", "Equivalent")
    assert stored["rules"][0]["scope"] == "*" and stored["namespaceSelector"] == {}


def test_timeout_with_fail_and_with_ignore(sandbox, hook):
    hook.answer = lambda r: (hook.release.wait(30), {"allowed": False})[1]
    _register(sandbox, hook, timeoutSeconds=1)
    with pytest.raises(ApiError) as err:
        _cm(sandbox)
    assert err.value.code == 500 and 'failed calling webhook "check.example.com"' in err.value.message
    sandbox.api.delete(sandbox.registry.lookup("admissionregistration.k8s.io", "v1",
                                               "validatingwebhookconfigurations"), "", "cfg", {})
    _register(sandbox, hook, timeoutSeconds=1, failurePolicy="Ignore")
    assert _cm(sandbox)["metadata"]["name"] == "c"


def test_mutating_patch_and_warnings(sandbox, hook):
    _register(sandbox, hook, kind="MutatingWebhookConfiguration")
    ops = [{"op": "add", "path": "/data/added", "value": "yes"}]
    hook.answer = lambda r: {"allowed": True, "patchType": "JSONPatch", "warnings": ["be careful"],
                             "patch": base64.b64encode(json.dumps(ops).encode()).decode()}
    sandbox.api.begin_request()
    stored = _cm(sandbox, a="1")
    assert stored["data"] == {"a": "1", "added": "yes"}
    assert sandbox.api.take_warnings() == ["be careful"]


def test_a_mutation_is_validated_again(sandbox, hook):
    _register(sandbox, hook, kind="MutatingWebhookConfiguration")
    ops = [{"op": "add", "path": "/data/bad key", "value": "x"}]  # not a valid ConfigMap key
    hook.answer = lambda r: {"allowed": True, "patchType": "JSONPatch",
                             "patch": base64.b64encode(json.dumps(ops).encode()).decode()}
    with pytest.raises(ApiError) as err:
        _cm(sandbox)
    assert err.value.code == 422


def test_a_response_for_another_request_is_a_failure(sandbox, hook):
    _register(sandbox, hook)
    hook.answer = lambda r: {"uid": "someone-else", "allowed": True}
    with pytest.raises(ApiError) as err:
        _cm(sandbox)
    assert err.value.code == 500 and "expected response.uid" in err.value.message


def test_namespace_selector_reads_the_namespace_labels(sandbox, hook):
    _register(sandbox, hook, namespaceSelector={"matchLabels": {"checked": "yes"}})
    hook.answer = lambda r: {"allowed": False}
    _cm(sandbox)  # default has no such label
    ns = sandbox.registry.lookup("", "v1", "namespaces")
    current = sandbox.api.get(ns, "", "default")
    sandbox.api.update(ns, "", "default", {**current, "metadata": {**current["metadata"], "labels": {
        **current["metadata"].get("labels", {}), "checked": "yes"}}})
    with pytest.raises(ApiError):
        _cm(sandbox, name="d")


@pytest.mark.parametrize("rule,rt,operation,sub,expected", [
    ({"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]}, CM, "CREATE", "", True),
    ({"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]}, CM, "UPDATE", "status", False),
    ({"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*/*"]}, CM, "UPDATE", "status", True),
    ({"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["configmaps/status"]}, CM,
     "UPDATE", "", False),
    ({"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}, CM,
     "UPDATE", "", False),
    ({"operations": ["CREATE"], "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["configmaps"]}, CM,
     "CREATE", "", False),
    ({"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v2"], "resources": ["configmaps"]}, CM,
     "CREATE", "", False),
    ({"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"], "scope": "Cluster"}, CM,
     "CREATE", "", False),
    ({"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"], "scope": "Cluster"}, NODE,
     "CREATE", "", True),
    ({"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"], "scope": "Namespaced"},
     NODE, "CREATE", "", False),
])
def test_rule_matching(rule, rt, operation, sub, expected):
    assert rule_matches(rule, rt, operation, sub) is expected
