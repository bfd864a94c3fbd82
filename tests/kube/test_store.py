"""Store: keys, indices kept exact through updates/deletes/replace, late indexers, thread safety."""

from __future__ import annotations

import threading

import pytest

from promop.kube.store import NAMESPACE_INDEX, Store, Tombstone, object_key


def cm(name, ns="default", rv="1", **labels):
    return {"metadata": {"name": name, "namespace": ns, "resourceVersion": rv, "labels": labels}}


def by_app(obj):
    app = obj["metadata"].get("labels", {}).get("app")
    return [app] if app else []


def test_keys_for_namespaced_cluster_scoped_and_tombstones():
    assert object_key(cm("a", "ns1")) == "ns1/a"
    assert object_key({"metadata": {"name": "node1"}}) == "node1"
    assert object_key(Tombstone("ns1/a", cm("a", "ns1"))) == "ns1/a"
    with pytest.raises(ValueError, match="no metadata.name"):
        object_key({"metadata": {}})


def test_add_get_update_delete_and_namespace_index():
    s = Store()
    a, b, c = cm("a", "x"), cm("b", "x"), cm("c", "y")
    for o in (a, b, c):
        assert s.add(o) is None
    assert s.get("x/a") is a and s.get_by_key("x/b") is b and s.get(c) is c
    assert sorted(s.keys()) == ["x/a", "x/b", "y/c"] and len(s) == 3 and "y/c" in s
    assert sorted(o["metadata"]["name"] for o in s.by_index(NAMESPACE_INDEX, "x")) == ["a", "b"]
    a2 = cm("a", "x", rv="2")
    assert s.update(a2) is a
    assert s.get("x/a") is a2
    assert s.delete("x/b") is b
    assert s.delete("x/b") is None
    assert s.index_keys(NAMESPACE_INDEX, "x") == ["x/a"]
    s.delete(a2)
    # emptied index values disappear instead of lingering as empty sets
    assert sorted(s.index_values(NAMESPACE_INDEX)) == ["y"]


def test_put_many_returns_previous_objects_and_keeps_every_index_exact():
    s = Store({"app": by_app})
    old_a = cm("a", "x", app="web")
    s.add(old_a)
    new_a, b, c = cm("a", "x", rv="2", app="db"), cm("b", "x", app="web"), cm("c", "y")
    assert s.put_many([(object_key(o), o) for o in (new_a, b, c)]) == [old_a, None, None]
    assert s.get("x/a") is new_a and len(s) == 3
    assert sorted(s.index_keys(NAMESPACE_INDEX, "x")) == ["x/a", "x/b"]
    assert s.index_keys(NAMESPACE_INDEX, "y") == ["y/c"]
    assert s.index_keys("app", "db") == ["x/a"]
    assert s.index_keys("app", "web") == ["x/b"], "the replaced object left its old index value"


def test_put_all_into_an_empty_store_equals_put_many():
    objs = [cm("a", "x"), cm("b", "x"), cm("c", "y"), cm("node", None)]
    keys = [object_key(o) for o in objs]
    fast, slow = Store(), Store()
    assert fast.put_all(keys, objs) == [None] * 4
    slow.put_many(zip(keys, objs))
    assert fast.items() == slow.items()
    for ns in ("x", "y"):
        assert sorted(fast.index_keys(NAMESPACE_INDEX, ns)) == sorted(slow.index_keys(NAMESPACE_INDEX, ns))
    assert sorted(fast.index_values(NAMESPACE_INDEX)) == ["x", "y"]


def test_put_all_with_repeated_keys_or_custom_indexers_takes_the_exact_path():
    a1, a2 = cm("a", "x"), cm("a", "x", rv="2")
    s = Store()
    assert s.put_all(["x/a", "x/a"], [a1, a2]) == [None, a1]  # the later one replaced the earlier
    assert s.get("x/a") is a2 and len(s) == 1
    indexed = Store({"app": by_app})
    assert indexed.put_all(["x/b"], [cm("b", "x", app="web")]) == [None]
    assert indexed.index_keys("app", "web") == ["x/b"]


def test_objects_are_shared_not_copied():
    s = Store()
    o = cm("a")
    s.add(o)
    assert s.get("default/a") is o
    assert s.list()[0] is o


def test_custom_index_follows_label_changes():
    s = Store({"app": by_app})
    s.add(cm("a", app="web"))
    s.add(cm("b", app="web"))
    s.add(cm("c", app="db"))
    assert sorted(s.index_keys("app", "web")) == ["default/a", "default/b"]
    s.update(cm("a", rv="2", app="db"))
    assert s.index_keys("app", "web") == ["default/b"]
    assert sorted(s.index_keys("app", "db")) == ["default/a", "default/c"]
    s.update(cm("b", rv="2"))  # label removed
    assert "web" not in s.index_values("app")
    assert s.by_index("app", "nothing") == []


def test_add_indexers_on_a_populated_store_and_clashes():
    s = Store()
    s.add(cm("a", app="web"))
    s.add(cm("b", ns="other", app="web"))
    s.add_indexers({"app": by_app})
    assert sorted(s.index_keys("app", "web")) == ["default/a", "other/b"]
    with pytest.raises(ValueError, match="already exist"):
        s.add_indexers({"app": by_app})
    with pytest.raises(KeyError, match="no index 'missing'"):
        s.by_index("missing", "x")


def test_multi_valued_index():
    s = Store({"keys": lambda o: sorted(o.get("data", {}))})
    s.add({"metadata": {"name": "a", "namespace": "n"}, "data": {"k1": "", "k2": ""}})
    s.add({"metadata": {"name": "b", "namespace": "n"}, "data": {"k2": ""}})
    assert sorted(s.index_keys("keys", "k2")) == ["n/a", "n/b"]
    s.update({"metadata": {"name": "a", "namespace": "n"}, "data": {"k3": ""}})
    assert s.index_keys("keys", "k1") == [] and s.index_keys("keys", "k2") == ["n/b"]


def test_replace_rebuilds_everything():
    s = Store({"app": by_app})
    s.add(cm("old", app="web"))
    s.replace([cm("n1", app="db"), cm("n2", ns="z")])
    assert sorted(s.keys()) == ["default/n1", "z/n2"]
    assert s.index_keys("app", "web") == []
    assert s.index_keys("app", "db") == ["default/n1"]
    assert sorted(s.index_values(NAMESPACE_INDEX)) == ["default", "z"]


def test_concurrent_writers_keep_indices_consistent():
    s = Store({"app": by_app})

    def writer(t):
        for i in range(300):
            name = f"o{i % 50}"
            if i % 7 == 0:
                s.delete(f"default/{name}")
            else:
                s.add(cm(name, rv=str(i), app=f"a{(i + t) % 3}"))

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # every index entry points at a cached object whose index value matches, and vice versa
    expected = {}
    for key, obj in s.items():
        for v in by_app(obj):
            expected.setdefault(v, set()).add(key)
    assert {v: set(s.index_keys("app", v)) for v in s.index_values("app")} == expected
    assert set(s.index_keys(NAMESPACE_INDEX, "default")) == set(s.keys())
