"""Freshness: the API's content wins at once; a mounted copy only when it is not stale."""
from __future__ import annotations

from reloader.freshness import REMEMBERED, Freshness


def test_api_versions_apply_in_order_and_never_go_back():
    f = Freshness()
    assert f.offer_api("10", "a")
    assert f.offer_api("12", "b")
    assert not f.offer_api("11", "c")  # an older version arriving late
    assert not f.offer_api("12", "b")  # the same again
    assert f.applied_digest == "b" and f.applied_rv == 12


def test_a_mounted_copy_of_an_older_api_version_is_stale():
    f = Freshness()
    f.offer_api("10", "a")
    f.offer_api("12", "b")
    assert f.is_stale_mount("a")
    assert not f.offer_mount("a")
    assert not f.offer_mount("b")  # already applied
    assert f.applied_digest == "b"


def test_content_the_api_never_showed_is_newer():
    f = Freshness()
    f.offer_api("10", "a")
    assert f.offer_mount("x")  # changed while the API could not be watched
    assert f.applied_digest == "x"
    assert not f.offer_api("11", "x")  # the API catching up with the same content: nothing to do
    assert f.applied_rv == 11
    assert f.offer_api("13", "y")
    assert not f.offer_mount("x")  # now older than the API's


def test_unknown_mounted_content_is_newer_than_the_last_api_version_only():
    f = Freshness()
    f.offer_api("10", "a")
    assert f.offer_mount("m")  # unknown: changed after version 10
    assert f.is_stale_mount("a") and not f.offer_mount("a")  # version 10 is older than "m"
    assert not f.offer_api("10", "a")  # so is the API repeating version 10
    assert f.offer_api("11", "n")  # any later version is newer


def test_non_numeric_resource_versions_still_apply_new_content():
    f = Freshness()
    assert f.offer_api("abc", "a")
    assert f.offer_api("def", "b")
    assert not f.offer_api("ghi", "b")


def test_memory_of_past_versions_is_bounded():
    f = Freshness()
    for i in range(REMEMBERED * 3):
        f.offer_api(str(i), f"d{i}")
    assert len(f._seen) == REMEMBERED
    assert f.is_stale_mount(f"d{REMEMBERED * 3 - 2}")
