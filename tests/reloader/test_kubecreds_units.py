"""reloader/kubecreds.py: the API credentials the reloader uses without the kubernetes package."""
from __future__ import annotations

import base64
import os
import subprocess
import sys

import pytest
import yaml

from reloader import kubecreds


def _kubeconfig(tmp_path, user: dict, cluster: dict | None = None) -> str:
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "other", "cluster": {"server": "https://wrong:1"}},
                     {"name": "k", "cluster": cluster or {"server": "https://10.0.0.1:6443/"}}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
        "users": [{"name": "u", "user": user}]}))
    return str(path)


def test_in_cluster_reads_the_service_account_and_rereads_a_rotated_token(tmp_path, monkeypatch):
    (tmp_path / "token").write_text("first\n")
    (tmp_path / "ca.crt").write_text("CA")
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "fd00::1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    creds = kubecreds.in_cluster(str(tmp_path))
    assert creds is not None
    assert creds.host == "https://[fd00::1]:443" and creds.ca_file == str(tmp_path / "ca.crt") and creds.verify
    assert creds.headers() == {"Authorization": "Bearer first"}
    (tmp_path / "token").write_text("second")
    monkeypatch.setattr(kubecreds, "TOKEN_REREAD_SECONDS", 0.0)
    assert creds.headers() == {"Authorization": "Bearer second"}


def test_not_in_a_pod_without_the_service_host(tmp_path, monkeypatch):
    (tmp_path / "token").write_text("t")
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    assert kubecreds.in_cluster(str(tmp_path)) is None


def test_kubeconfig_current_context_token_and_ca_file_relative_to_it(tmp_path):
    creds = kubecreds.from_kubeconfig(_kubeconfig(tmp_path, {"token": "abc"},
                                                  {"server": "https://10.0.0.1:6443/", "certificate-authority": "ca.pem"}))
    assert creds.host == "https://10.0.0.1:6443"
    assert creds.ca_file == str(tmp_path / "ca.pem")
    assert creds.headers() == {"Authorization": "Bearer abc"}


def test_kubeconfig_inline_client_certificate_and_insecure(tmp_path):
    user = {"client-certificate-data": base64.b64encode(b"CERT").decode(),
            "client-key-data": base64.b64encode(b"KEY").decode()}
    creds = kubecreds.from_kubeconfig(_kubeconfig(tmp_path, user, {"server": "https://h:1",
                                                                   "insecure-skip-tls-verify": True}))
    assert not creds.verify
    assert open(creds.cert_file, "rb").read() == b"CERT" and open(creds.key_file, "rb").read() == b"KEY"
    assert creds.headers() == {}


def test_kubeconfig_token_file_and_basic_auth(tmp_path):
    (tmp_path / "tok").write_text("from-file\n")
    assert kubecreds.from_kubeconfig(_kubeconfig(tmp_path, {"tokenFile": "tok"})).headers() == {
        "Authorization": "Bearer from-file"}
    basic = kubecreds.from_kubeconfig(_kubeconfig(tmp_path, {"username": "a", "password": "b"})).headers()
    assert basic == {"Authorization": "Basic " + base64.b64encode(b"a:b").decode()}


@pytest.mark.parametrize("content, message", [
    ("current-context: nope\ncontexts: []\n", "no context named 'nope'"),
    ("- a list\n", "not a mapping"),
    ("a: [unclosed\n", "not valid YAML"),
])
def test_bad_kubeconfigs_say_what_is_wrong(tmp_path, content, message):
    path = tmp_path / "kubeconfig"
    path.write_text(content)
    with pytest.raises(kubecreds.CredentialsError, match=message.replace("[", r"\[")):
        kubecreds.from_kubeconfig(str(path))


def test_the_reloader_never_imports_the_kubernetes_package(tmp_path):
    """The reloader's image has no `kubernetes` package: loading credentials must not need it."""
    path = _kubeconfig(tmp_path, {"token": "abc"})
    code = ("import sys; from reloader import kubeapi, cli; kubeapi.load_api(sys.argv[1]); "
            "assert 'kubernetes' not in sys.modules, 'kubernetes imported'")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    subprocess.run([sys.executable, "-c", code, path], check=True, env=env, timeout=60)
