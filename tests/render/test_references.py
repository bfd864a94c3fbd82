"""references(): the Secrets/ConfigMaps a render reads, for the operator to fetch."""

from __future__ import annotations

from promop.render import ObjectRef, RenderCache, RenderInputs, references

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


def _monitor(name, secret_name, rv="1", labels=None, namespace="apps"):
    sm = service_monitor(name, labels=labels or {"team": "web"}, namespace=namespace, endpoints=[{
        "port": "web", "bearerTokenSecret": {"name": secret_name, "key": "t"}}])
    sm["metadata"].update(uid=f"uid-{name}", resourceVersion=rv)
    return sm


def _ns(name, rv="1", **labels):
    return {"metadata": {"name": name, "uid": f"ns-{name}", "resourceVersion": rv, "labels": labels}}


def test_references_with_cache_equal_without_and_follow_changes(monkeypatch):
    import promop.render.pipeline as pipeline

    prom = prometheus_obj(serviceMonitorSelector={"matchLabels": {"team": "web"}},
                          serviceMonitorNamespaceSelector={"matchLabels": {"scraped": "yes"}})
    sms = [_monitor(f"m{i}", f"s{i}") for i in range(5)]
    namespaces = [_ns("apps", scraped="yes"), _ns("monitoring")]
    cache = RenderCache()

    def both(inputs):
        cached = references(inputs, cache)
        assert cached == references(inputs)
        return cached

    inputs = RenderInputs(prometheus=prom, service_monitors=sms, namespaces=namespaces)
    assert both(inputs) == {ObjectRef("Secret", "apps", f"s{i}") for i in range(5)}

    # warm: neither the selection nor any unchanged monitor is walked again
    walked = []
    real_refs = pipeline._object_refs
    monkeypatch.setattr(pipeline, "_object_refs", lambda obj: (walked.append(obj), real_refs(obj))[1])
    monkeypatch.setattr(pipeline, "select", lambda *a, **k: (_ for _ in ()).throw(AssertionError("selection redone")))
    references(inputs, cache)
    assert walked == []
    monkeypatch.undo()

    # a changed monitor (new resourceVersion) is walked again
    sms[1] = _monitor("m1", "other", rv="2")
    assert ObjectRef("Secret", "apps", "other") in both(inputs)
    # a monitor that stops matching, and a namespace that stops matching, drop their references
    sms[2] = _monitor("m2", "s2", rv="2", labels={"team": "db"})
    assert ObjectRef("Secret", "apps", "s2") not in both(inputs)
    inputs.namespaces = [_ns("apps", rv="2"), _ns("monitoring")]
    assert both(inputs) == set()
