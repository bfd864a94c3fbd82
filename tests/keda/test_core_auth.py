"""TriggerAuthentication / ClusterTriggerAuthentication into authParams (reference §1.6)."""

from __future__ import annotations

import base64

from promop.keda.auth import auth_namespace, pod_identity_provider, resolve_auth_params
from promop.keda.fallback import modifiers_fallback_value
from promop.keda.prometheus import build_request, parse_trigger
from promop.keda.spec import parse_scaled_object

SECRETS = {("team", "prom"): {"data": {"token": base64.b64encode(b"s3cr3t").decode(),
                                       "user": base64.b64encode(b"alice").decode()}},
           ("keda", "prom"): {"data": {"token": base64.b64encode(b"cluster").decode()}}}


def read_secret(ns, name):
    return SECRETS.get((ns, name))


def read_env(name, container):
    return {"PROM_PASS": "pw"}.get(name) if container in (None, "app") else None


def test_secret_and_env_become_auth_params_and_reach_the_request():
    spec = {"secretTargetRef": [{"parameter": "bearerToken", "name": "prom", "key": "token"}],
            "env": [{"parameter": "password", "name": "PROM_PASS"}]}
    params = resolve_auth_params(spec, "team", read_secret, read_env)
    assert params == {"bearerToken": "s3cr3t", "password": "pw"}
    trigger = parse_trigger({"serverAddress": "http://p", "query": "q", "threshold": "1", "authModes": "bearer"}, params)
    from datetime import datetime, timezone
    assert build_request(trigger, datetime.now(timezone.utc)).headers["Authorization"] == "Bearer s3cr3t"


def test_cluster_trigger_authentication_reads_the_cluster_object_namespace():
    assert auth_namespace("ClusterTriggerAuthentication", "team", "keda") == "keda"
    assert auth_namespace("TriggerAuthentication", "team", "keda") == "team"
    spec = {"secretTargetRef": [{"parameter": "bearerToken", "name": "prom", "key": "token"}]}
    assert resolve_auth_params(spec, auth_namespace("ClusterTriggerAuthentication", "team", "keda"),
                               read_secret, read_env) == {"bearerToken": "cluster"}


def test_missing_secret_key_or_env_is_a_warning_and_left_out():
    warnings: list[str] = []
    spec = {"secretTargetRef": [{"parameter": "bearerToken", "name": "prom", "key": "nope"},
                                {"parameter": "username", "name": "gone", "key": "user"}],
            "env": [{"parameter": "password", "name": "PROM_PASS", "containerName": "sidecar"}]}
    assert resolve_auth_params(spec, "team", read_secret, read_env, warnings=warnings) == {}
    assert len(warnings) == 3 and all("PROM_PASS" in w or "secret team/" in w for w in warnings)
    assert not any("s3cr3t" in w for w in warnings)


def test_secret_overwrites_env_for_the_same_parameter():
    spec = {"env": [{"parameter": "username", "name": "PROM_PASS"}],
            "secretTargetRef": [{"parameter": "username", "name": "prom", "key": "user"}]}
    assert resolve_auth_params(spec, "team", read_secret, read_env) == {"username": "alice"}


def test_config_map_target_ref():
    spec = {"configMapTargetRef": [{"parameter": "ca", "name": "cm", "key": "ca.crt"}]}
    got = resolve_auth_params(spec, "team", read_secret, read_env,
                              read_config_map=lambda ns, name: {"data": {"ca.crt": "PEM"}} if name == "cm" else None)
    assert got == {"ca": "PEM"}


def test_pod_identity_provider():
    assert pod_identity_provider(None) == "none"
    assert pod_identity_provider({"podIdentity": {"provider": "azure-workload"}}) == "azure-workload"
    warnings: list[str] = []
    resolve_auth_params({"podIdentity": {"provider": "aws"}}, "team", read_secret, read_env, warnings=warnings)
    assert warnings and "podIdentity" in warnings[0]


def test_modifiers_fallback_value():
    so = parse_scaled_object({"metadata": {"name": "a"}, "spec": {
        "scaleTargetRef": {"name": "w"}, "fallback": {"failureThreshold": 1, "replicas": 4, "behavior": "scalingModifiers"},
        "advanced": {"scalingModifiers": {"formula": "x ?? nil", "target": "2.5"}},
        "triggers": [{"type": "prometheus", "name": "x", "metadata": {}}]}})
    assert modifiers_fallback_value(None, so) == 10.0
    assert modifiers_fallback_value(3.0, so) == 3.0
