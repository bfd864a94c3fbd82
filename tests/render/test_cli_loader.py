"""The YAML loader behind `promop render`/`explain`: documents, lists, defaults, errors."""

from __future__ import annotations

import re

import pytest

from promop.render.loader import LoadError, deterministic_uid, load


def test_multi_document_lists_defaults_and_recursion(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "one.yaml").write_text("""
kind: ServiceMonitor
metadata: {name: sm}
---
---
kind: Deployment
metadata: {name: web, namespace: apps}
""")
    (tmp_path / "a" / "b" / "two.yml").write_text("""
kind: List
items:
- {kind: Namespace, metadata: {name: apps}}
- {kind: PrometheusRule, metadata: {name: r, namespace: apps, uid: given}}
""")
    (tmp_path / "a" / "notes.md").write_text("# not read")
    loaded = load([tmp_path])
    (sm,) = loaded.of("ServiceMonitor")
    assert sm["metadata"] == {"name": "sm", "namespace": "default",
                              "uid": deterministic_uid("ServiceMonitor", "default", "sm")}
    (ns,) = loaded.of("Namespace")
    assert "namespace" not in ns["metadata"]  # cluster-scoped
    (rule,) = loaded.of("PrometheusRule")
    assert rule["metadata"]["uid"] == "given"
    assert loaded.skipped == [f"Deployment apps/web in {tmp_path / 'a' / 'one.yaml'}"]
    assert loaded.sources[("PrometheusRule", "apps", "r")] == str(tmp_path / "a" / "b" / "two.yml")


def test_uids_are_stable_and_distinct():
    assert deterministic_uid("ServiceMonitor", "a", "b") == deterministic_uid("ServiceMonitor", "a", "b")
    assert deterministic_uid("ServiceMonitor", "a", "b") != deterministic_uid("PodMonitor", "a", "b")
    assert deterministic_uid("ServiceMonitor", "a", "b") != deterministic_uid("ServiceMonitor", "a-b", "")


def test_syntax_error_names_file_line_and_column(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: Prometheus\nmetadata:\n  name: [x\n")
    with pytest.raises(LoadError, match=rf"^{bad}:4:1: YAML syntax error: "):
        load([bad])


def test_documents_that_are_not_objects_are_rejected_and_the_rest_is_read(tmp_path):
    path = tmp_path / "values.yaml"
    path.write_text("- just\n- a list\n---\nreplicas: 3\n---\nhello\n---\n"
                    "kind: ServiceMonitor\nmetadata: {name: ok}\nspec: {}\n")
    loaded = load([path])
    assert loaded.rejected == [
        f"document {path}#1: not a Kubernetes object: a YAML list, where a mapping with apiVersion, kind and "
        "metadata belongs",
        f"document {path}#2: not a Kubernetes object: no kind",
        f"document {path}#3: not a Kubernetes object: a YAML string, where a mapping with apiVersion, kind and "
        "metadata belongs",
    ]
    assert [o["metadata"]["name"] for o in loaded.of("ServiceMonitor")] == ["ok"]


def test_input_object_without_a_name_is_rejected_alone(tmp_path):
    path = tmp_path / "x.yaml"
    path.write_text("kind: ServiceMonitor\nspec: {}\n---\nkind: ServiceMonitor\nmetadata: {namespace: a}\n---\n"
                    "kind: Deployment\nspec: {}\n---\nkind: PodMonitor\nmetadata: {name: p}\n")
    loaded = load([path])
    assert loaded.rejected == [
        f"ServiceMonitor {path}#1: metadata is missing or not a mapping; set metadata.name",
        f"ServiceMonitor {path}#2: metadata.name is missing; every object needs a name",
    ]
    assert loaded.skipped == [f"Deployment in {path}#3"]
    assert [o["metadata"]["name"] for o in loaded.of("PodMonitor")] == ["p"]


def test_unknown_monitoring_kind_is_rejected_other_groups_are_skipped(tmp_path):
    path = tmp_path / "x.yaml"
    path.write_text("apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitr\nmetadata: {name: a}\n---\n"
                    "apiVersion: monitoring.coreos.com/v1\nkind: Probe\nmetadata: {name: b}\n---\n"
                    "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: c}\n")
    loaded = load([path])
    [line] = loaded.rejected
    assert line.startswith(f"ServiceMonitr {path}#1: unknown kind in monitoring.coreos.com/v1; the kinds are "
                           "Prometheus, ServiceMonitor, PodMonitor, PrometheusRule, Alertmanager, "
                           "AlertmanagerConfig, ThanosRuler, PrometheusAgent, Probe, ScrapeConfig")
    assert loaded.skipped == [f"Deployment /c in {path}"]
    assert [o["metadata"]["name"] for o in loaded.of("Probe")] == ["b"]


def test_excluded_folders_are_not_read(tmp_path):
    (tmp_path / "out" / "x").mkdir(parents=True)
    (tmp_path / "sm.yaml").write_text("kind: ServiceMonitor\nmetadata: {name: a}\n")
    (tmp_path / "out" / "x" / "sm.yaml").write_text("kind: ServiceMonitor\nmetadata: {name: b}\n")
    assert len(load([tmp_path]).of("ServiceMonitor")) == 2
    assert [o["metadata"]["name"] for o in load([tmp_path], exclude=[tmp_path / "out"]).of("ServiceMonitor")] == ["a"]


def test_unreadable_and_missing_files(tmp_path):
    with pytest.raises(LoadError, match="no such file or directory"):
        load([tmp_path / "missing"])
    binary = tmp_path / "bin.yaml"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(LoadError, match=rf"^{binary}: cannot read"):
        load([binary])
