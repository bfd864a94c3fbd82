"""The flags of running beside other operators, parsed as `promop run` parses them (upstream's names):
accepted values land in Options, refused ones are one line and exit 2."""

from __future__ import annotations

import subprocess
import sys

import pytest
from operator_testlib import ROOT

from promop.cli import build_parser
from promop.host.flags import OptionsError
from promop.operator.options import from_args


def options(*argv: str):
    return from_args(build_parser().parse_args(["run", *argv]))


def test_defaults_are_upstreams():
    o = options()
    assert (o.controller_id, o.repair_policy, o.prometheus_instance_namespaces, o.prometheus_instance_selector) == (
        "", "none", (), "")
    assert o.thanos_ruler_instance_namespaces == () and o.thanos_ruler_instance_selector == ""
    assert o.alertmanager.instance_selector == "" and o.alertmanager.kubelet_sync_period == 180.0
    assert o.alertmanager.kubelet_endpoints is True and o.alertmanager.kubelet_endpointslice is False
    assert o.alertmanager.kubelet_http_metrics is True and o.alertmanager.kubelet_node_address_priority == "internal"
    tls = o.web_tls
    assert (tls.enabled, tls.cert_file, tls.key_file, tls.client_ca_file, tls.min_version) == (
        False, "/etc/tls/private/tls.crt", "/etc/tls/private/tls.key", "/etc/tls/private/tls-ca.crt", "VersionTLS13")


def test_accepted_values_reach_the_options():
    o = options("--controller-id=blue", "--repair-policy-for-statefulsets=delete",
                "--prometheus-instance-namespaces=a, b,a", "--prometheus-instance-selector=team in (x,y),!canary",
                "--thanos-ruler-instance-namespaces=t", "--thanos-ruler-instance-selector=ruler=yes",
                "--alertmanager-instance-selector=tier=a", "--alertmanager-instance-namespaces=m",
                "--kubelet-service=kube-system/kubelet", "--kubelet-endpoints=false", "--kubelet-endpointslice",
                "--kubelet-sync-period=1h30m", "--kubelet-http-metrics=false",
                "--kubelet-node-address-priority=external", "--kubelet-selector=kubernetes.io/os=linux")
    assert o.controller_id == "blue" and o.repair_policy == "delete"
    assert o.prometheus_instance_namespaces == ("a", "b")
    assert o.prometheus_instance_selector == "team in (x,y),!canary"
    assert o.thanos_ruler_instance_namespaces == ("t",) and o.thanos_ruler_instance_selector == "ruler=yes"
    am = o.alertmanager
    assert am.instance_selector == "tier=a" and am.instance_namespaces == ("m",)
    assert (am.kubelet_endpoints, am.kubelet_endpointslice, am.kubelet_http_metrics) == (False, True, False)
    assert am.kubelet_sync_period == 5400.0 and am.kubelet_node_address_priority == "external"
    assert am.kubelet_selector == "kubernetes.io/os=linux"


def test_prometheus_instance_namespaces_win_over_the_deny_list():
    o = options("--deny-namespaces=a", "--prometheus-instance-namespaces=a")
    assert o.prometheus_namespace_allowed("a") and not o.prometheus_namespace_allowed("b")
    assert not o.namespace_allowed("a")  # monitors keep following --deny-namespaces
    assert options("--namespaces=x").prometheus_namespace_allowed("x")


@pytest.mark.parametrize("argv", [
    ("--web.enable-tls", "--web.cert-file=/c", "--web.key-file=/k"),
    ("--web.enable-tls=true", "--web.tls-cert-file=/c", "--web.tls-private-key-file=/k"),  # the aliases
])
def test_tls_flags_and_their_aliases(argv):
    o = options(*argv, "--web.tls-min-version=VersionTLS12",
                "--web.tls-cipher-suites=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256")
    assert (o.web_tls.enabled, o.web_tls.cert_file, o.web_tls.key_file) == (True, "/c", "/k")
    assert o.web_tls.min_version == "VersionTLS12"
    assert o.web_tls.cipher_suites == ("TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",)


REFUSED = [
    (["--repair-policy-for-statefulsets=restart"], "--repair-policy-for-statefulsets: invalid value 'restart'"),
    (["--prometheus-instance-selector=a in (x"], "--prometheus-instance-selector: unable to parse requirement"),
    (["--thanos-ruler-instance-selector=a=b=c"], "--thanos-ruler-instance-selector:"),
    (["--alertmanager-instance-selector=x in"], "--alertmanager-instance-selector:"),
    (["--kubelet-selector=,="], "--kubelet-selector:"),
    (["--kubelet-node-address-priority=hostname"], "--kubelet-node-address-priority: invalid value 'hostname'"),
    (["--kubelet-sync-period=3x"], "--kubelet-sync-period: '3x' is not a positive duration"),
    (["--kubelet-sync-period=0s"], "--kubelet-sync-period: '0s' is not a positive duration"),
    (["--kubelet-endpoints=maybe"], "--kubelet-endpoints: 'maybe' is not true or false"),
    (["--kubelet-service=a/b", "--kubelet-endpoints=false"], "at least one must be managed"),
    (["--web.enable-tls=yes please"], "--web.enable-tls: 'yes please' is not true or false"),
    (["--web.enable-tls", "--web.tls-min-version=VersionTLS11"], "TLS version 'TLS 1.1' isn't supported"),
    (["--web.enable-tls", "--web.tls-min-version=TLS13"], "unknown tls version 'TLS13'"),
    (["--web.enable-tls", "--web.tls-cipher-suites=TLS_FOO"], "cipher suite TLS_FOO not supported"),
    (["--web.enable-tls", "--web.cert-file=", "--web.key-file="], "a client CA is configured"),
]


@pytest.mark.parametrize("argv,message", REFUSED, ids=[" ".join(a) for a, _ in REFUSED])
def test_refused_values_name_the_flag(argv, message):
    with pytest.raises(OptionsError) as info:
        options(*argv)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_tls_values_are_only_checked_when_tls_is_enabled():
    assert options("--web.tls-min-version=VersionTLS10").web_tls.enabled is False


def test_a_refused_value_is_one_line_and_exit_2():
    for argv in (["--repair-policy-for-statefulsets=bogus"], ["--kubelet-endpoints=maybe"],
                 ["--prometheus-instance-selector=a in (x"]):
        p = subprocess.run([sys.executable, "-m", "promop", "run", *argv], capture_output=True, text=True,
                           cwd=ROOT, timeout=60)
        assert p.returncode == 2, p.stderr
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("promop run: " + argv[0].split("=")[0]), p.stderr
