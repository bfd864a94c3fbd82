"""End to end: the operator reads the Secrets a Prometheus's cloud authentication names (remote write
sigv4 keys, Azure OAuth client secret) so the live config carries their values, follows their
changes, and drops only the entry whose key is missing, with a Warning Event naming the field."""

from __future__ import annotations

import base64

import pytest
from operator_testlib import NS, config, eventually, prometheus

from promop.kube.resources import EVENTS, NAMESPACES, PROMETHEUSES, SECRETS

UUID = "00000000-a12b-3cd4-e56f-000000000000"


@pytest.fixture
def ns(kube):
    kube.create(NAMESPACES, {"metadata": {"name": NS}})
    return NS


def _b64(s: str) -> str:
    return base64.b64encode(s.encode()).decode()


def _remote_write(kube) -> list:
    return (config(kube) or {}).get("remote_write") or []


def test_cloud_auth_secrets_reach_the_config(kube, start_operator, ns):
    start_operator()
    kube.create(SECRETS, {"metadata": {"name": "aws", "namespace": NS},
                          "data": {"ak": _b64("AKIA1"), "sk": _b64("one")}})
    kube.create(PROMETHEUSES, prometheus(version="v3.13.2", remoteWrite=[
        {"url": "http://aws.example/write", "sigv4": {"region": "eu-west-1", "accessKey": {"name": "aws", "key": "ak"},
                                                      "secretKey": {"name": "aws", "key": "sk"}}},
        {"url": "http://azure.example/write", "azureAd": {"cloud": "AzurePublic", "oauth": {
            "clientId": UUID, "tenantId": UUID, "clientSecret": {"name": "azure", "key": "secret"}}}},
    ]))
    sigv4 = {"url": "http://aws.example/write", "sigv4": {"region": "eu-west-1", "access_key": "AKIA1",
                                                           "secret_key": "one"}}
    # the Azure Secret does not exist yet: only that entry is left out, and a Warning Event says why
    eventually(lambda: _remote_write(kube) == [sigv4], 20, "the sigv4 keys inlined, the azure entry dropped")

    def events() -> list:
        return [e for e in kube.list(EVENTS, NS)["items"] if e["involvedObject"]["kind"] == "Prometheus"
                and "azureAd.oauth.clientSecret" in e["message"]]
    eventually(events, 20, "a Warning Event naming the missing clientSecret")
    assert events()[0]["type"] == "Warning" and "Secret team/azure not found" in events()[0]["message"]

    kube.create(SECRETS, {"metadata": {"name": "azure", "namespace": NS}, "data": {"secret": _b64("az1")}})
    eventually(lambda: len(_remote_write(kube)) == 2, 20, "the azure entry once its Secret exists")
    assert _remote_write(kube)[1]["azuread"]["oauth"]["client_secret"] == "az1"

    secret = kube.get(SECRETS, "aws", NS)
    secret["data"]["sk"] = _b64("two")
    kube.update(SECRETS, secret, NS)
    eventually(lambda: _remote_write(kube)[0]["sigv4"]["secret_key"] == "two", 20, "the Secret change in the config")
