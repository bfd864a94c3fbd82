"""LIST: selectors, paging, list resourceVersion, cluster-wide lists, partial metadata."""

from __future__ import annotations

import base64
import json

import pytest
from kubernetes.client import ApiException

from .helpers import configmap, raw

PARTIAL_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
PARTIAL = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"


@pytest.fixture
def labelled(core):
    specs = {"a": {"env": "prod", "tier": "web"}, "b": {"env": "qa", "tier": "db"},
             "c": {"env": "dev"}, "d": {}}
    for name, labels in specs.items():
        core.create_namespaced_config_map("default", configmap(name, labels=labels))
    return specs


def names(result) -> list[str]:
    return [item.metadata.name for item in result.items]


@pytest.mark.parametrize("selector, expected", [
    ("env=prod", ["a"]),
    ("env==qa", ["b"]),
    ("env!=prod", ["b", "c", "d"]),
    ("env in (prod, qa)", ["a", "b"]),
    ("env notin (prod,qa)", ["c", "d"]),
    ("tier", ["a", "b"]),
    ("!tier", ["c", "d"]),
    ("env,!tier", ["c"]),
    ("env in (prod,dev),tier!=db", ["a", "c"]),
])
def test_label_selectors(core, labelled, selector, expected):
    assert names(core.list_namespaced_config_map("default", label_selector=selector)) == expected


def test_bad_label_selector_is_bad_request(core):
    with pytest.raises(ApiException) as excinfo:
        core.list_namespaced_config_map("default", label_selector="env in prod")
    assert excinfo.value.status == 400


def test_field_selectors(core, labelled):
    core.create_namespace({"metadata": {"name": "other"}})
    core.create_namespaced_config_map("other", configmap("a"))
    core.create_namespaced_secret("default", {"metadata": {"name": "tls"}, "type":
                                              "kubernetes.io/tls", "stringData": {
                                                  "tls.crt": "c", "tls.key": "k"}})
    core.create_namespaced_secret("default", {"metadata": {"name": "helm"},
                                              "type": "helm.sh/release.v1"})
    everywhere = core.list_config_map_for_all_namespaces(field_selector="metadata.name=a")
    assert [(i.metadata.namespace, i.metadata.name) for i in everywhere.items] == \
        [("default", "a"), ("other", "a")]
    outside = core.list_config_map_for_all_namespaces(
        field_selector="metadata.namespace!=default")
    assert [i.metadata.namespace for i in outside.items] == ["other"]
    assert names(core.list_namespaced_secret("default", field_selector="type!=helm.sh/release.v1")) \
        == ["tls"]
    assert names(core.list_namespaced_secret(
        "default", field_selector="type=kubernetes.io/tls,metadata.name=tls")) == ["tls"]


def test_paging_with_limit_and_continue(core):
    for n in range(7):
        core.create_namespaced_config_map("default", configmap(f"cm-{n}"))
    seen, token, pages = [], None, 0
    while True:
        page = core.list_namespaced_config_map("default", limit=3, _continue=token)
        seen += names(page)
        pages += 1
        token = page.metadata._continue
        if not token:
            break
        assert page.metadata.remaining_item_count == 7 - len(seen)
    assert pages == 3
    assert seen == [f"cm-{n}" for n in range(7)]


def test_list_resource_version_is_the_latest_write(core):
    made = core.create_namespaced_config_map("default", configmap("a"))
    listed = core.list_namespaced_config_map("default")
    assert listed.metadata.resource_version == made.metadata.resource_version
    core.create_namespaced_secret("default", {"metadata": {"name": "s"}})
    assert int(core.list_namespaced_config_map("default").metadata.resource_version) > \
        int(made.metadata.resource_version)


def test_cluster_wide_list_spans_namespaces(core):
    core.create_namespace({"metadata": {"name": "x"}})
    core.create_namespaced_config_map("x", configmap("one"))
    core.create_namespaced_config_map("default", configmap("two"))
    listed = core.list_config_map_for_all_namespaces()
    assert {(i.metadata.namespace, i.metadata.name) for i in listed.items} == \
        {("x", "one"), ("default", "two")}


def test_partial_object_metadata_list_and_get(core):
    core.create_namespaced_secret("default", {"metadata": {"name": "s", "labels": {"a": "b"}},
                                              "stringData": {"password": "secret"}})
    listed = raw(core.list_namespaced_secret("default", _preload_content=False,
                                             _headers={"Accept": PARTIAL_LIST}))
    assert listed["kind"] == "PartialObjectMetadataList"
    assert listed["apiVersion"] == "meta.k8s.io/v1"
    assert listed["metadata"]["resourceVersion"]
    [item] = listed["items"]
    assert item["kind"] == "PartialObjectMetadata"
    assert item["metadata"]["labels"] == {"a": "b"}
    assert "data" not in item
    got = raw(core.read_namespaced_secret("s", "default", _preload_content=False,
                                          _headers={"Accept": PARTIAL}))
    assert got["kind"] == "PartialObjectMetadata" and set(got) == {"kind", "apiVersion",
                                                                    "metadata"}
    # falls back to full objects when the client lists JSON first
    full = raw(core.read_namespaced_secret("s", "default", _preload_content=False,
                                           _headers={"Accept": "application/json, " + PARTIAL}))
    assert full["kind"] == "Secret"


def test_bad_numeric_parameters_are_bad_requests(api_client, sandbox):
    pool = api_client.rest_client.pool_manager
    for query in ("limit=ten", "limit=-1", "watch=true&timeoutSeconds=soon"):
        response = pool.request("GET", f"{sandbox.url}/api/v1/configmaps?{query}")
        assert response.status == 400, query


def _page_all(list_page, **kwargs) -> list:
    """Every item over all pages of `limit`; `between(items_so_far)` runs after each page."""
    between = kwargs.pop("between", None)
    seen, token = [], None
    while True:
        page = list_page(_continue=token, **kwargs)
        seen += page.items
        token = page.metadata._continue
        if not token:
            return seen
        if between:
            between(seen)


def test_paging_while_objects_come_and_go_shows_the_first_pages_snapshot(core):
    """A continue token is a snapshot (issue 18 §4): writes between pages do not show, every
    page carries the first page's resourceVersion."""
    for ns in ("a-before", "z-after"):
        core.create_namespace({"metadata": {"name": ns}})
        core.create_namespaced_config_map(ns, configmap("cm-050"))
    existing = [f"cm-{n:03d}" for n in range(0, 100, 2)]
    for name in existing:
        core.create_namespaced_config_map("default", configmap(name))
    deleted, created_ahead = set(), set()

    def churn(seen) -> None:
        cursor = seen[-1].metadata.name
        ahead = [n for n in existing if n > cursor and n not in deleted]
        behind = [n for n in existing if n < cursor and n not in deleted]
        for name in (ahead[:1] + behind[:1]):  # one not yet listed, one already listed
            core.delete_namespaced_config_map(name, "default")
            deleted.add(name)
        behind, ahead = f"{seen[0].metadata.name}-b{len(seen)}", f"{cursor}-n"
        for name in (behind, ahead):
            core.create_namespaced_config_map("default", configmap(name))
        assert behind < cursor < ahead
        created_ahead.add(ahead)

    items = _page_all(core.list_namespaced_config_map, namespace="default", limit=7,
                      between=churn)
    names = [i.metadata.name for i in items]
    assert {i.metadata.namespace for i in items} == {"default"}
    assert names == existing  # as of the first page: deleted ones included, new ones not
    assert len(deleted) > 10 and created_ahead  # the churn did happen


def test_cluster_wide_paging_crosses_namespaces_in_order(core):
    expected = []
    for ns in ("b", "a", "c"):
        core.create_namespace({"metadata": {"name": ns}})
        for n in range(5):
            core.create_namespaced_config_map(ns, configmap(f"x{n}"))
            expected.append((ns, f"x{n}"))
    items = _page_all(core.list_config_map_for_all_namespaces, limit=4)
    assert [(i.metadata.namespace, i.metadata.name) for i in items] == sorted(expected)


def test_selector_pages_fill_up_and_carry_no_remaining_count(core):
    for n in range(20):
        core.create_namespaced_config_map("default", configmap(
            f"cm-{n:02d}", labels={"parity": "even" if n % 2 == 0 else "odd"}))
    page = core.list_namespaced_config_map("default", label_selector="parity=odd", limit=3)
    assert [i.metadata.name for i in page.items] == ["cm-01", "cm-03", "cm-05"]
    assert page.metadata._continue and page.metadata.remaining_item_count is None
    items = _page_all(core.list_namespaced_config_map, namespace="default",
                      label_selector="parity=odd", limit=3)
    assert [i.metadata.name for i in items] == [f"cm-{n:02d}" for n in range(1, 20, 2)]
    # the last page is exactly full: no continue token when nothing else matches
    last = core.list_namespaced_config_map("default", label_selector="parity=odd", limit=5,
                                           _continue=core.list_namespaced_config_map(
                                               "default", label_selector="parity=odd",
                                               limit=5).metadata._continue)
    assert [i.metadata.name for i in last.items][-1] == "cm-19" and not last.metadata._continue


@pytest.mark.parametrize("token", [
    "not-base64!", base64.urlsafe_b64encode(b'{"rv": 1}').decode(),
    base64.urlsafe_b64encode(b'{"start": [1, 2]}').decode(),
    base64.urlsafe_b64encode(b'{"start": ["default"]}').decode()])
def test_invalid_continue_tokens_are_bad_requests(core, token):
    with pytest.raises(ApiException) as excinfo:
        core.list_namespaced_config_map("default", limit=2, _continue=token)
    assert excinfo.value.status == 400


def test_pages_show_every_write_after_random_creates_updates_and_deletes(core):
    """Pages are slices of a sorted entry list kept beside the keys: after any mix of writes,
    the paged LIST equals a GET of every live object, in (namespace, name) order."""
    import random

    rng = random.Random(7)
    live: dict[str, str] = {}
    for step in range(150):
        name = f"r{rng.randrange(40):02d}"
        if name in live and rng.random() < 0.3:
            core.delete_namespaced_config_map(name, "default")
            del live[name]
        elif name in live:
            live[name] = str(step)
            core.patch_namespaced_config_map(name, "default", {"data": {"step": str(step)}})
        else:
            live[name] = str(step)
            core.create_namespaced_config_map("default", configmap(name, step=str(step)))
    seen, token = [], None
    while True:
        page = core.list_namespaced_config_map("default", limit=6, _continue=token)
        seen += [(item.metadata.name, item.data["step"]) for item in page.items if item.metadata.name.startswith("r")]
        token = page.metadata.var_continue
        if not token:
            break
    assert seen == sorted(live.items())


def test_pages_carry_the_first_pages_resource_version(core):
    for n in range(5):
        core.create_namespaced_config_map("default", configmap(f"cm-{n}"))
    first = core.list_namespaced_config_map("default", limit=2)
    core.patch_namespaced_config_map("cm-3", "default", {"data": {"changed": "yes"}})
    core.delete_namespaced_config_map("cm-4", "default")
    second = core.list_namespaced_config_map("default", limit=10,
                                             _continue=first.metadata._continue)
    assert second.metadata.resource_version == first.metadata.resource_version
    assert [i.metadata.name for i in second.items] == ["cm-2", "cm-3", "cm-4"]
    assert not second.items[1].data  # the patch came later


def test_resource_version_match_exact(core):
    made = core.create_namespaced_config_map("default", configmap("a", v="1"))
    rv = made.metadata.resource_version
    core.patch_namespaced_config_map("a", "default", {"data": {"v": "2"}})
    core.create_namespaced_config_map("default", configmap("b"))
    exact = core.list_namespaced_config_map("default", resource_version=rv,
                                            resource_version_match="Exact")
    assert exact.metadata.resource_version == rv
    assert [(i.metadata.name, i.data["v"]) for i in exact.items] == [("a", "1")]
    newer = core.list_namespaced_config_map("default", resource_version=rv,
                                            resource_version_match="NotOlderThan")
    assert [i.metadata.name for i in newer.items] == ["a", "b"]
    with pytest.raises(ApiException) as excinfo:
        core.list_namespaced_config_map("default", resource_version="99999",
                                        resource_version_match="Exact")
    assert excinfo.value.status == 504
    assert json.loads(excinfo.value.body)["details"]["causes"][0]["reason"] == \
        "ResourceVersionTooLarge"


def test_compaction_expires_continue_tokens_and_old_versions(core, sandbox):
    for n in range(4):
        core.create_namespaced_config_map("default", configmap(f"cm-{n}"))
    first = core.list_namespaced_config_map("default", limit=2)
    rv = first.metadata.resource_version
    core.create_namespaced_config_map("default", configmap("later"))
    sandbox.faults.compact()
    with pytest.raises(ApiException) as excinfo:
        core.list_namespaced_config_map("default", limit=2, _continue=first.metadata._continue)
    assert excinfo.value.status == 410
    assert json.loads(excinfo.value.body)["reason"] == "Expired"
    with pytest.raises(ApiException) as excinfo:
        core.list_namespaced_config_map("default", resource_version=rv,
                                        resource_version_match="Exact")
    assert excinfo.value.status == 410
