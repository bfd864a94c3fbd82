"""crd_schema finds a kind's schema by parsing only the files that name it, with the same answer as
parsing every file: JSON or YAML, quoted or not, and a full scan when the quick look finds nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from promop.schema import crds
from promop.schema.crds import SchemaNotFound, crd_schema, load_crds


def _crd(kind: str, group: str = "example.com", marker: str = "") -> dict:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{kind.lower()}s.{group}"},
            "spec": {"group": group, "names": {"kind": kind, "plural": f"{kind.lower()}s"},
                     "versions": [{"name": "v1", "storage": True, "served": True,
                                   "schema": {"openAPIV3Schema": {"type": "object", "description": marker}}}]}}


def test_every_shipped_kind_gets_the_schema_a_full_parse_gives() -> None:
    for crd in load_crds():
        spec = crd["spec"]
        for version in spec["versions"]:
            want = version["schema"]["openAPIV3Schema"]
            assert crd_schema(spec["names"]["kind"], version["name"], spec["group"]) == want


def test_only_the_files_naming_the_kind_are_parsed(tmp_path: Path) -> None:
    import shutil

    for path in crds._files(str(crds._default_folder())):  # a copy: a folder of its own in the caches
        shutil.copy(path, tmp_path)
    before = crds._load_file.cache_info().misses
    crd_schema("ServiceMonitor", "v1", "monitoring.coreos.com", tmp_path)
    assert crds._load_file.cache_info().misses == before + 1, "parsed more than the one file defining the kind"
    crds._load_file(str(tmp_path / "monitoring.coreos.com_servicemonitors.yaml"))
    assert crds._load_file.cache_info().misses == before + 1, "the file parsed was not the ServiceMonitor CRD's"


@pytest.mark.parametrize("style", ["yaml", "yaml-quoted", "json"])
def test_found_in_any_writing_of_the_kind_line(tmp_path: Path, style: str) -> None:
    (tmp_path / "a_other.yaml").write_text(json.dumps(_crd("Other", marker="mentions Widget in prose")))
    crd = _crd("Widget", marker="the widget")
    if style == "json":
        text = json.dumps(crd, indent=1)
    else:
        import yaml

        text = yaml.safe_dump(crd)
        if style == "yaml-quoted":
            text = text.replace("kind: Widget", "kind: 'Widget'")
    (tmp_path / "b_widget.yaml").write_text(text)
    assert crd_schema("Widget", "v1", "example.com", tmp_path)["description"] == "the widget"
    with pytest.raises(SchemaNotFound, match="Gadget"):
        crd_schema("Gadget", "v1", "example.com", tmp_path)


def test_a_kind_the_quick_look_misses_is_still_found_by_the_full_scan(tmp_path: Path) -> None:
    # the kind through a YAML alias: no `kind: Widget` line, but a CRD for Widget all the same
    text = ("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.example.com}\n"
            "x-name: &k Widget\nspec:\n  group: example.com\n  names: {kind: *k, plural: widgets}\n"
            "  versions:\n  - name: v1\n    storage: true\n    schema:\n      openAPIV3Schema: {type: object, description: aliased}\n")
    (tmp_path / "widget.yaml").write_text(text)
    assert crd_schema("Widget", "v1", "example.com", tmp_path)["description"] == "aliased"


def test_the_first_file_in_order_wins_as_before(tmp_path: Path) -> None:
    import yaml

    (tmp_path / "a.yaml").write_text(yaml.safe_dump(_crd("Widget", marker="first")))
    (tmp_path / "b.yaml").write_text(yaml.safe_dump(_crd("Widget", marker="second")))
    assert crd_schema("Widget", "v1", "example.com", tmp_path)["description"] == "first"
    grouped = tmp_path / "grouped"
    grouped.mkdir()
    (grouped / "0.yaml").write_text(yaml.safe_dump(_crd("Widget", group="other.group", marker="other group")))
    (grouped / "1.yaml").write_text(yaml.safe_dump(_crd("Widget", marker="example")))
    assert crd_schema("Widget", "v1", "example.com", grouped)["description"] == "example"  # the group filter holds
    assert crd_schema("Widget", "v1", "other.group", grouped)["description"] == "other group"
