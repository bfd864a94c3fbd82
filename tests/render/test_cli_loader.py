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


def test_documents_that_are_not_objects_are_skipped(tmp_path):
    path = tmp_path / "values.yaml"
    path.write_text("- just\n- a list\n---\nreplicas: 3\n")
    assert load([path]).skipped == [f"{path} (document 1): not a Kubernetes object (no kind)",
                                    f"{path} (document 2): not a Kubernetes object (no kind)"]


def test_input_object_without_a_name_is_an_error(tmp_path):
    path = tmp_path / "x.yaml"
    path.write_text("kind: ServiceMonitor\nspec: {}\n")
    with pytest.raises(LoadError, match=re.escape(f"{path} (document 1): ServiceMonitor has no metadata.name")):
        load([path])


def test_unreadable_and_missing_files(tmp_path):
    with pytest.raises(LoadError, match="no such file or directory"):
        load([tmp_path / "missing"])
    binary = tmp_path / "bin.yaml"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(LoadError, match=rf"^{binary}: cannot read"):
        load([binary])
