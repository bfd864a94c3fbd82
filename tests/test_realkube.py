"""The real-cluster tier's own helpers, without a cluster (they run in the main suite).

What breaks silently if these are wrong: an image tag that does not change with the code (the
tier tests a stale image), a bundle edit that no longer applies (the tier tests the wrong flags),
a Ready time read from the wrong condition.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import realkube
from e2e_real.stack import operator_bundle


def copy_sources(dest: Path) -> Path:
    dest.mkdir(parents=True)
    for name in realkube.IMAGE_SOURCES:
        src = realkube.REPO / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
        elif src.is_file():
            shutil.copy2(src, dest / name)
    return dest


def test_image_tag_follows_the_sources_and_nothing_else(tmp_path):
    repo = copy_sources(tmp_path / "repo")
    first = realkube.source_hash(repo)
    (repo / "tests").mkdir()
    (repo / "tests" / "test_new.py").write_text("x = 1\n")            # not in the image
    (repo / "promop" / "__pycache__").mkdir(exist_ok=True)
    (repo / "promop" / "__pycache__" / "x.pyc").write_bytes(b"\0")   # never in the image
    assert realkube.source_hash(repo) == first
    module = repo / "reloader" / "cli.py"
    module.write_text(module.read_text() + "\n# changed\n")
    assert realkube.source_hash(repo) != first
    module.write_text(module.read_text().replace("\n# changed\n", ""))
    assert realkube.source_hash(repo) == first
    (repo / "gotime" / "duration.py").rename(repo / "gotime" / "renamed.py")
    assert realkube.source_hash(repo) != first


def test_bundle_edits_reloader_image_flags_and_prometheus_version():
    text = operator_bundle("promop.local/promop:dev-1", "promop.local/reloader:dev-2",
                           ("--feature-gates=PrometheusAgentDaemonSet=true",))
    assert 'image: "promop.local/promop:dev-1"' in text
    assert '- "--config-reloader-image=promop.local/reloader:dev-2"' in text
    assert "--config-reloader-image=promop.local/promop:dev-1" not in text
    assert '        - --leader-elect\n        - "--feature-gates=PrometheusAgentDaemonSet=true"\n' in text
    prometheus = text[text.index("kind: Prometheus\n"):]
    assert f"  version: {realkube.PROMETHEUS_VERSION}\n" in prometheus


def test_reloader_image_is_the_reloaders_own_unless_named(monkeypatch):
    monkeypatch.delenv("PROMOP_REAL_RELOADER_IMAGE", raising=False)
    monkeypatch.setattr(realkube, "build_reloader_image", lambda: "promop.local/promop-config-reloader:x")
    assert realkube.reloader_image("a/b:1") == "promop.local/promop-config-reloader:x"
    monkeypatch.setenv("PROMOP_REAL_RELOADER_IMAGE", "a/reloader:2")
    assert realkube.reloader_image("a/b:1") == "a/reloader:2"


def test_the_reloader_image_tag_follows_its_sources_only(tmp_path):
    for rel in ("reloader/cli.py", "gotime/duration.py", "promop/cli.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    before = realkube.source_hash(tmp_path, realkube.RELOADER_IMAGE_SOURCES)
    (tmp_path / "promop/cli.py").write_text("y")
    assert realkube.source_hash(tmp_path, realkube.RELOADER_IMAGE_SOURCES) == before
    (tmp_path / "reloader/cli.py").write_text("y")
    assert realkube.source_hash(tmp_path, realkube.RELOADER_IMAGE_SOURCES) != before


def pod(conditions: list[dict], phase: str = "Running") -> dict:
    return {"metadata": {"creationTimestamp": "2026-12-06T23:00:00Z"},
            "status": {"phase": phase, "conditions": conditions}}


@pytest.mark.parametrize("conditions, seconds", [
    ([{"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-12-06T23:00:01Z"},
      {"type": "Ready", "status": "True", "lastTransitionTime": "2026-12-06T23:01:07Z"}], 67.0),
    ([{"type": "Ready", "status": "False", "lastTransitionTime": "2026-12-06T23:00:05Z"},
      {"type": "ContainersReady", "status": "True", "lastTransitionTime": "2026-12-06T23:00:09Z"}], None),
])
def test_pod_ready_seconds_reads_the_ready_condition(conditions, seconds):
    assert realkube.pod_ready_seconds(pod(conditions)) == seconds
    assert realkube.pod_is_ready(pod(conditions)) is (seconds is not None)
    assert not realkube.pod_is_ready(pod(conditions, phase="Pending"))


def test_wait_for_returns_the_value_and_names_what_it_waited_for():
    seen = []

    def check():
        seen.append(1)
        if len(seen) == 1:
            raise ValueError("not yet")
        return {"ok": 1} if len(seen) == 3 else None
    assert realkube.wait_for(check, 5, "the thing", interval=0) == {"ok": 1}
    with pytest.raises(realkube.KitError, match=r"waiting for the thing.*ValueError\('boom'\)"):
        realkube.wait_for(lambda: (_ for _ in ()).throw(ValueError("boom")), 0.05, "the thing",
                          interval=0.01)


class FakeCluster:
    def __init__(self, pods: list[dict]) -> None:
        self.pods = pods

    def get_json(self, *args: str) -> dict:
        return {"items": self.pods}


def terminating_pod(seconds_ago: float, grace: int = 600) -> dict:
    import time
    from datetime import datetime, timezone
    at = datetime.fromtimestamp(time.time() - seconds_ago + grace, tz=timezone.utc)
    return {"metadata": {"name": "prometheus-x-0", "deletionTimestamp": at.strftime("%Y-%m-%dT%H:%M:%SZ"),
                         "deletionGracePeriodSeconds": grace},
            "status": {"containerStatuses": [{"name": "config-reloader", "state": {"running": {}}},
                                             {"name": "prometheus", "state": {"terminated": {}}}]}}


def test_a_pod_terminating_past_the_bound_is_named_with_its_running_container():
    from e2e_real.test_workloads_rollout import TERMINATING_BOUND_S, stuck_terminating
    assert stuck_terminating(FakeCluster([terminating_pod(5)]), "ns") is None
    assert stuck_terminating(FakeCluster([{"metadata": {"name": "ok"}, "status": {}}]), "ns") is None
    message = stuck_terminating(FakeCluster([terminating_pod(TERMINATING_BOUND_S + 30)]), "ns")
    assert message and "prometheus-x-0" in message and "['config-reloader']" in message


def test_node_lock_wait_is_bounded_and_an_abandoned_wait_lets_the_lock_go(tmp_path, monkeypatch):
    import fcntl
    import os
    import subprocess
    lock = tmp_path / "node.lock"
    monkeypatch.setattr(realkube, "NODE_LOCK", lock)
    holder = subprocess.Popen(["flock", str(lock), "sleep", "2"])
    try:
        realkube.wait_for(lambda: subprocess.run(["flock", "-n", str(lock), "true"]).returncode == 1,
                          10, "the holder to take the lock", interval=0.05)
        with pytest.raises(realkube.KitError, match="stayed taken"):
            realkube.Node(None, lock_timeout=0.5)._take_lock()
    finally:
        holder.wait(timeout=30)

    def free() -> bool:
        fd = os.open(lock, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            return False
        finally:
            os.close(fd)
    # The waiter's thread got the lock after the holder left, and let it go at once.
    realkube.wait_for(free, 10, "the lock free again", interval=0.05)
    node = realkube.Node(None, lock_timeout=5)
    node._take_lock()
    assert not free()
    node.stop()
    assert free()
