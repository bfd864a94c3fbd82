"""CPU readiness at its time edges (upstream `groupPods`; reference §2.2 rule 4), which compares with
Go's strict `After`/`Before`:

- "still within startTime + 5m" is `start + 5m > now`: a pod exactly 5 minutes old is past it;
- "metric.timestamp < lastTransitionTime + window": a sample exactly one window after the
  transition is a full window, so the pod is ready;
- "lastTransitionTime < startTime + 30s" (never became ready): a transition exactly 30 s after the
  start counts as having become ready.
"""

from __future__ import annotations

from promop.autoscale import calculator as calc
from tests.autoscale.helpers import NOW, pods, samples

INIT, DELAY = 300.0, 30.0


def group(pod_list, ts=NOW, window=30.0):
    return calc.group_pods(pod_list, samples({"p0": 500}, ts=ts, window=window), "cpu", NOW, INIT, DELAY)


def test_initialisation_period_ends_exactly_five_minutes_after_start():
    # Ready, transition 5 s before the sample: inside the period that is less than a window -> unready.
    at_end = pods(1, start=NOW - 300, transition=NOW - 5)
    assert group(at_end).ready_count == 1          # past the period: only Ready=False matters
    inside = pods(1, start=NOW - 299.5, transition=NOW - 5)
    assert group(inside).unready == {"p0"}


def test_a_full_metric_window_since_the_transition_is_ready():
    young = pods(1, start=NOW - 60, transition=NOW - 30)
    assert group(young, ts=NOW, window=30.0).ready_count == 1
    assert group(young, ts=NOW - 0.5, window=30.0).unready == {"p0"}


def test_never_ready_means_the_transition_came_within_the_readiness_delay():
    at_delay = pods(1, ready="False", start=NOW - 3600, transition=NOW - 3600 + 30)
    assert group(at_delay).ready_count == 1
    before_delay = pods(1, ready="False", start=NOW - 3600, transition=NOW - 3600 + 29.5)
    assert group(before_delay).unready == {"p0"}


def test_unready_inside_the_period_whatever_the_window():
    not_ready = pods(1, ready="False", start=NOW - 60, transition=NOW - 3000)
    assert group(not_ready).unready == {"p0"}
