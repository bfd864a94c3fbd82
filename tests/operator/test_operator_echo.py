"""The watch echo of the operator's own Secret write causes no sync of any Prometheus (issue 30).

A Secret event is mapped to every Prometheus in the Secret's namespace (they may read it), so the
echo of Prometheus A's config Secret write is queued for A and for B. A is busy syncing (the write
is A's), so A's re-queue waits until A's write is recorded and is recognised as an echo; B is idle
and may be taken by another worker at once, before the write's answer arrived: B then synced for
nothing (`writes=0`), about once in 50 writes on a real cluster. Here the answer of each Secret
update is held back after the server applied it, so the echo always arrives first: every write is
that race.
"""

from __future__ import annotations

import threading
import time
from collections import Counter

from operator_testlib import NS, eventually, modify, prometheus

from promop.kube.resources import NAMESPACES, PROMETHEUSES, SECRETS


def _count_syncs(running) -> Counter:
    """Count the syncs per Prometheus key from now on (the workers call syncer.sync per sync)."""
    counts: Counter = Counter()
    lock = threading.Lock()
    syncer = running.controller.syncer
    original = syncer.sync

    def counted(key: str, cause: str = ""):
        with lock:
            counts[key] += 1
        return original(key, cause)

    syncer.sync = counted
    return counts


def _slow_secret_answers(client, seconds: float) -> None:
    """Hold back the answer of every Secret update by `seconds` after the server applied it."""
    original = client.update

    def update(res, body, namespace=None, **kw):
        answer = original(res, body, namespace, **kw)
        if res is SECRETS:
            time.sleep(seconds)
        return answer

    client.update = update


def _two_prometheuses(kube, cluster, start_operator):
    kube.create(NAMESPACES, {"metadata": {"name": NS}})
    for name in ("a", "b"):
        kube.create(PROMETHEUSES, prometheus(name), NS)
    running = start_operator(workers=4)
    eventually(lambda: all(kube.get(SECRETS, f"prometheus-{n}", NS) for n in ("a", "b")), 20, "both config Secrets")
    running.settle(cluster)
    return running


def _edit_a(kube, i: int) -> None:
    modify(kube, PROMETHEUSES, "a", NS, lambda o: o["spec"].__setitem__("externalLabels", {"edit": f"v{i}"}))


def test_echo_of_a_secret_write_answered_late_syncs_no_other_prometheus(kube, cluster, start_operator):
    running = _two_prometheuses(kube, cluster, start_operator)
    _slow_secret_answers(running.controller.syncer.writer.applier.client, 0.15)
    counts = _count_syncs(running)
    for i in range(12):
        _edit_a(kube, i)
        # one edit at a time, each written before the next: 12 Secret writes, 12 echoes
        eventually(lambda i=i: f"edit: v{i}\n" in _config_text(kube, "a"), 20, f"edit {i} in a's config")
    running.settle(cluster)
    assert counts["team/b"] == 0, f"the echoes of a's Secret writes synced b {counts['team/b']} times"
    assert counts["team/a"] >= 12


def test_many_writes_sync_only_the_edited_prometheus(kube, cluster, start_operator):
    running = _two_prometheuses(kube, cluster, start_operator)
    counts = _count_syncs(running)
    for i in range(100):
        _edit_a(kube, i)
    eventually(lambda: "edit: v99\n" in _config_text(kube, "a"), 30, "the last edit in a's config")
    running.settle(cluster)
    assert counts["team/b"] == 0, f"the echoes of a's Secret writes synced b {counts['team/b']} times"


def _config_text(kube, name: str) -> str:
    from promop.operator.demo import decode_config

    return decode_config(kube.get(SECRETS, f"prometheus-{name}", NS)) or ""


def test_writelog_knows_the_echoes_of_its_last_writes_and_no_foreign_version():
    """Writes in quick succession: the echo of the first arrives after the second was recorded."""
    from promop.operator.writelog import WriteLog

    log = WriteLog()
    key = ("Secret", NS, "prometheus-a")
    log.wrote(key, None, {"metadata": {"resourceVersion": "10"}}, "x")
    log.wrote(key, {"metadata": {"resourceVersion": "10"}}, {"metadata": {"resourceVersion": "12"}}, "y")
    assert log.echo(key, {"metadata": {"resourceVersion": "10"}})
    assert log.echo(key, {"metadata": {"resourceVersion": "12"}})
    assert not log.echo(key, {"metadata": {"resourceVersion": "11"}}), "a foreign write in between is no echo"
    assert not log.matches(key, {"metadata": {"resourceVersion": "10"}}), "only the latest may skip a comparison"
    log.forget(lambda k: k == key)
    assert not log.echo(key, {"metadata": {"resourceVersion": "12"}})


def test_writelog_settle_waits_for_the_write_in_flight():
    from promop.operator.writelog import WriteLog

    log = WriteLog()
    key = ("Secret", NS, "prometheus-a")
    entered, release = threading.Event(), threading.Event()

    def write():
        with log.writing(key):
            entered.set()
            release.wait(10)
            log.wrote(key, None, {"metadata": {"resourceVersion": "7"}}, "x")

    t = threading.Thread(target=write)
    t.start()
    entered.wait(10)
    assert not log.settle(key, 0.05), "a write in flight is not settled"
    release.set()
    assert log.settle(key, 10)
    assert log.echo(key, {"metadata": {"resourceVersion": "7"}})
    t.join()
