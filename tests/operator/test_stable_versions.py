"""StableVersions: status-only changes keep the resourceVersion the render cache knows (issue 32).

The oracle is the renderer itself: a render of the views must equal a render of the objects as
the informer holds them, and after a status-only change it must find every fragment cached."""

from __future__ import annotations

import copy

from promop.operator.options import Options
from promop.operator.stable_versions import StableVersions
from promop.render import RenderCache, render
from promop.render.model import RenderInputs


def sm(i: int, rv: int = 1, **extra) -> dict:
    obj = {"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
           "metadata": {"name": f"sm-{i}", "namespace": "web", "uid": f"uid-{i}", "resourceVersion": str(rv),
                        "generation": 1, "labels": {"team": "a"}},
           "spec": {"selector": {"matchLabels": {"app": f"a{i}"}}, "endpoints": [{"port": "web"}]}}
    obj.update(extra)
    return obj


def with_status(obj: dict, rv: int, bindings: list) -> dict:
    new = copy.deepcopy(obj)
    new["metadata"]["resourceVersion"] = str(rv)
    new["status"] = {"bindings": bindings}
    return new


def test_status_only_change_keeps_the_version_and_shows_the_new_status():
    sv = StableVersions()
    first = sv.views("ServiceMonitor", [sm(1)])[0]
    assert first["metadata"]["resourceVersion"] == "1"
    changed = with_status(sm(1), 7, [{"name": "p"}])
    changed["metadata"]["managedFields"] = [{"manager": "promop"}]
    view = sv.views("ServiceMonitor", [changed])[0]
    assert view["metadata"]["resourceVersion"] == "1"
    assert view["status"] == {"bindings": [{"name": "p"}]} and view["spec"] == changed["spec"]
    assert changed["metadata"]["resourceVersion"] == "7"  # the cached object itself is never modified
    assert sv.views("ServiceMonitor", [changed])[0] is view  # stable while nothing changes


def test_any_other_change_hands_over_the_object_itself():
    sv = StableVersions()
    sv.views("ServiceMonitor", [sm(1)])
    spec = sm(1, rv=2)
    spec["spec"]["endpoints"][0]["port"] = "metrics"
    assert sv.views("ServiceMonitor", [spec])[0] is spec
    labels = copy.deepcopy(spec)
    labels["metadata"].update(resourceVersion="3", labels={"team": "b"})
    assert sv.views("ServiceMonitor", [labels])[0] is labels
    annotated = copy.deepcopy(labels)
    annotated["metadata"].update(resourceVersion="4", annotations={"x": "y"})
    assert sv.views("ServiceMonitor", [annotated])[0] is annotated
    top = with_status(annotated, 5, [])
    top["extra"] = 1
    assert sv.views("ServiceMonitor", [top])[0] is top


def test_kinds_are_apart_deleted_objects_are_forgotten_and_objects_without_uid_pass():
    sv = StableVersions()
    sv.views("ServiceMonitor", [sm(1)])
    # a PodMonitor with the same uid is another entry
    assert sv.views("PodMonitor", [with_status(sm(1), 9, [])])[0]["metadata"]["resourceVersion"] == "9"
    sv.views("ServiceMonitor", [])  # sm-1 deleted
    recreated = with_status(sm(1), 12, [])
    assert sv.views("ServiceMonitor", [recreated])[0] is recreated
    bare = {"metadata": {"name": "x", "namespace": "web"}, "spec": {}}
    assert sv.views("ServiceMonitor", [bare]) == [bare]


def test_render_of_views_equals_render_of_objects_and_reuses_every_fragment():
    prom = {"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus",
            "metadata": {"name": "p", "namespace": "web", "uid": "p-uid", "resourceVersion": "1", "generation": 1},
            "spec": {"serviceMonitorSelector": {}}}
    options = Options().render_options()
    objs = [sm(i) for i in range(5)]
    sv, cache = StableVersions(), RenderCache()

    def inputs(monitors):
        return RenderInputs(prometheus=prom, service_monitors=monitors, options=options,
                            namespaces=[{"metadata": {"name": "web"}}])

    render(inputs(sv.views("ServiceMonitor", objs)), cache=cache)
    misses = cache.misses
    # a status as the apiserver stores it (it validates /status writes against the CRD schema)
    binding = {"group": "monitoring.coreos.com", "resource": "prometheuses", "name": "p", "namespace": "web"}
    after = [with_status(o, 100 + i, [binding]) for i, o in enumerate(objs)]
    cached = render(inputs(sv.views("ServiceMonitor", after)), cache=cache)
    assert cache.misses == misses  # nothing rendered again
    plain = render(inputs(after))  # no cache, the objects as they are
    assert not plain.rejected and len(plain.jobs) == 5
    assert cached.config_text == plain.config_text and cached.config_secret == plain.config_secret
