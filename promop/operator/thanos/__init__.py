"""The ThanosRuler controller: ThanosRuler objects to running `thanos rule` StatefulSets.

Same shape as the Alertmanager controller: informers -> event mapping -> one rate-limited queue ->
workers -> `RulerSyncer.sync`, which renders with the pure promop.render.thanos and writes only
differences.
"""

from promop.kube.resources import MONITORING_GROUP, Resource

THANOSRULERS = Resource(MONITORING_GROUP, "v1", "thanosrulers", kind="ThanosRuler")
CONTROLLER = "thanosruler"
