"""The Alertmanager controller: Alertmanager and AlertmanagerConfig objects to running, configured Alertmanagers.

Same shape as the Prometheus controller: informers -> event mapping -> one
rate-limited queue -> workers -> `AlertmanagerSyncer.sync`, which renders with
the pure promop.render.alertmanager and writes only differences.
"""

from promop.kube.resources import MONITORING_GROUP, Resource

ALERTMANAGERS = Resource(MONITORING_GROUP, "v1", "alertmanagers", kind="Alertmanager")
ALERTMANAGERCONFIGS = Resource(MONITORING_GROUP, "v1alpha1", "alertmanagerconfigs", kind="AlertmanagerConfig")
CONTROLLER = "alertmanager"
