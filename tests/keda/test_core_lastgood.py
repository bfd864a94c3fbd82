"""promop.keda.lastgood: a failing trigger's last good value, served while fallback is set but not active.

This is promop's deviation from KEDA (docs/keda.md, "Where promop differs"; KEDA #4533, #5657, #6887).
The KEDA parts it must leave alone are the oracle here: reference §2.6 (fallback starts when
numberOfFailures > failureThreshold, strictly; health is tracked only with a valid fallback) and §2.4's
table (inactive + isError + fallback -> nothing; errors never scale to zero; active + isError ->
PartialTriggerError).
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from promop.keda import lastgood
from promop.keda.decide import TriggerResult, decide
from promop.keda.fallback import record_health
from promop.keda.spec import parse_scaled_object, pause_state

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=timezone.utc)
PROM = {"serverAddress": "http://p", "query": "q", "threshold": "10"}
FALLBACK = {"failureThreshold": 3, "replicas": 6}
INTERVAL = 30.0
METRIC = "s0-prometheus"


def so(fallback=FALLBACK, metric_type=None, **spec):
    trig = {"type": "prometheus", "metadata": PROM}
    if metric_type:
        trig["metricType"] = metric_type
    body = {"scaleTargetRef": {"name": "web"}, "triggers": [trig], **spec}
    if fallback is not None:
        body["fallback"] = fallback
    return parse_scaled_object({"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject",
                                "metadata": {"name": "app", "namespace": "ns", "uid": "u"}, "spec": body})


def failures(n: int) -> dict:
    health: dict = {}
    for _ in range(n):
        health = record_health(health, METRIC, False)
    return health


def good(at=NOW - timedelta(seconds=10), query="k1") -> lastgood.LastGood:
    return lastgood.after_success(42.0, True, at, query)


def usable(obj, health, last, now=NOW, metric_type="AverageValue", query="k1"):
    return lastgood.usable(obj, metric_type, health, METRIC, last, INTERVAL, now, query)


def test_served_while_failures_do_not_exceed_the_threshold():
    obj = so()
    for n in (1, 2, 3):      # failureThreshold 3: fallback starts at the 4th failure (strict >, §2.6)
        assert usable(obj, failures(n), good()) == good(), n
    assert usable(obj, failures(4), good()) is None       # fallback is active: KEDA's fallback value


def test_fallback_threshold_zero_serves_nothing_after_the_first_failure():
    obj = so(fallback={"failureThreshold": 0, "replicas": 2})
    assert usable(obj, failures(1), good()) is None


def test_expires_after_threshold_plus_one_polling_intervals():
    obj = so()
    assert lastgood.window(3, INTERVAL) == timedelta(seconds=120)
    at = NOW - timedelta(seconds=120)
    assert usable(obj, failures(1), good(at=at)) is not None                     # exactly the window: kept
    assert usable(obj, failures(1), good(at=at - timedelta(seconds=1))) is None  # one second older: KEDA's error


def test_window_follows_the_polling_interval():
    obj = so()
    at = NOW - timedelta(seconds=200)
    assert lastgood.usable(obj, "AverageValue", failures(1), METRIC, good(at=at), 60.0, NOW, "k1") is not None
    assert lastgood.usable(obj, "AverageValue", failures(1), METRIC, good(at=at), 45.0, NOW, "k1") is None


def test_no_last_good_value_keeps_kedas_error():
    assert usable(so(), failures(1), None) is None
    assert lastgood.after_failure(None, NOW) is None


def test_nothing_changes_without_fallback():
    assert usable(so(fallback=None), failures(1), good()) is None
    assert usable(so(fallback=None), {}, good()) is None


def test_invalid_fallback_or_metric_type_keeps_kedas_behaviour():
    assert usable(so(fallback={"failureThreshold": -1, "replicas": 6}), failures(1), good()) is None
    assert usable(so(), failures(1), good(), metric_type="Utilization") is None
    assert usable(so(), failures(1), good(), metric_type="Value") is not None


def test_a_changed_query_does_not_inherit_the_old_value():
    assert usable(so(), failures(1), good(query="k1"), query="k2") is None


def test_failing_streak_and_serving_keep_their_first_time():
    first = lastgood.after_failure(good(), NOW)
    assert first.failing_since == NOW and first.value == 42.0 and first.at == good().at
    later = lastgood.after_failure(first, NOW + timedelta(seconds=30))
    assert later.failing_since == NOW
    served = lastgood.mark_served(later, NOW + timedelta(seconds=5))
    assert lastgood.mark_served(served, NOW + timedelta(seconds=50)).served_since == NOW + timedelta(seconds=5)
    fresh = lastgood.after_success(7.0, False, NOW + timedelta(seconds=60), "k1")
    assert fresh.failing_since is None and fresh.served_since is None and fresh.value == 7.0


def test_view_says_what_is_served_since_when_and_how_many_failures():
    last = lastgood.mark_served(lastgood.after_failure(good(), NOW), NOW)
    v = lastgood.view(last, failures(2), METRIC, 3, INTERVAL)
    assert v == {"value": 42.0, "active": True, "at": "2026-01-01T11:59:50Z", "failingSince": "2026-01-01T12:00:00Z",
                 "servedSince": "2026-01-01T12:00:00Z", "numberOfFailures": 2, "failureThreshold": 3,
                 "until": "2026-01-01T12:01:50Z"}


# --- the scale loop's table with a last good value standing in (reference §2.4 where it applies) ------------

def _decide(current, results, **spec):
    obj = so(**spec)
    return decide(obj, pause_state({}), current, results, NOW - timedelta(seconds=5), NOW - timedelta(hours=1),
                  NOW, None, "apps/v1.Deployment")


def _stand_in(active: bool) -> TriggerResult:
    return TriggerResult(metric_name=METRIC, error="boom", active=active, last_good=True)


def _cond(d, type_):
    return next(((c["status"], c.get("reason")) for c in d.conditions if c["type"] == type_), None)


def test_last_good_inactive_is_kedas_inactive_error_with_fallback_nothing():
    d = _decide(3, [_stand_in(False)], minReplicaCount=0, cooldownPeriod=0)
    assert d.scale_to is None and d.is_error and not d.is_active   # never scaled to zero on an error


def test_last_good_active_keeps_the_scaled_object_active_and_still_an_error():
    d = _decide(3, [_stand_in(True)])
    assert d.is_active and d.is_error and d.scale_to is None
    assert _cond(d, "Ready") == ("Unknown", "PartialTriggerError")      # §2.4: active and isError
    assert d.last_active_time == NOW - timedelta(seconds=5)               # KEDA refreshes it only without error
    assert d.triggers_activity == {METRIC: {"isActive": True}}
