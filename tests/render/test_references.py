"""references(): the Secrets/ConfigMaps a render reads, for the operator to fetch."""

from __future__ import annotations

from promop.render import ObjectRef, RenderInputs, references

from .helpers import prometheus_obj, service_monitor


def test_references_cover_prometheus_and_selected_monitors_only():
    prom = prometheus_obj(
        serviceMonitorSelector={"matchLabels": {"team": "web"}},
        additionalScrapeConfigs={"name": "extra", "key": "k"},
        remoteWrite=[{"url": "http://x", "authorization": {"credentials": {"name": "rw", "key": "t"}}}],
    )
    selected = service_monitor("a", labels={"team": "web"}, namespace="apps", endpoints=[{
        "port": "web",
        "basicAuth": {"username": {"name": "ba", "key": "u"}, "password": {"name": "ba", "key": "p"}},
        "tlsConfig": {"ca": {"configMap": {"name": "ca", "key": "c"}}, "keySecret": {"name": "tls", "key": "k"}},
        "proxyConnectHeader": {"X-Auth": [{"name": "hdr", "key": "v"}]},
    }])
    unselected = service_monitor("b", endpoints=[{"port": "w", "bearerTokenSecret": {"name": "nope", "key": "t"}}])
    refs = references(RenderInputs(prometheus=prom, service_monitors=[selected, unselected]))
    assert refs == {
        ObjectRef("Secret", "monitoring", "extra"), ObjectRef("Secret", "monitoring", "rw"),
        ObjectRef("Secret", "apps", "ba"), ObjectRef("ConfigMap", "apps", "ca"),
        ObjectRef("Secret", "apps", "tls"), ObjectRef("Secret", "apps", "hdr"),
    }
