"""The PrometheusAgent controller: the agent's objects, status, Events and monitor bindings.

It reuses the Prometheus controller's parts (the Applier that writes only differences, the
feedback helpers for bindings and Events, the status conditions) around render_agent().
"""

from promop.kube.resources import MONITORING_GROUP, Resource

PROMETHEUSAGENTS = Resource(MONITORING_GROUP, "v1alpha1", "prometheusagents", kind="PrometheusAgent")
DAEMONSETS = Resource("apps", "v1", "daemonsets", kind="DaemonSet")
CONTROLLER = "prometheusagent"
