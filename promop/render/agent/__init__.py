"""PrometheusAgent (monitoring.coreos.com/v1alpha1): upstream's agent config and workloads.

A PrometheusAgent shares the Prometheus's common fields, so it renders through the same
pieces (selection, monitor fragments, TLS assets, reloader), with upstream's agent rules:
no rules, no alerting, the WAL-only storage flags, and a StatefulSet (`prom-agent-<name>`)
or, with the PrometheusAgentDaemonSet gate, a DaemonSet that scrapes its own node's pods.
"""

from promop.render.agent.config import AGENT_GATE, InvalidAgent, generate_agent_config
from promop.render.agent.pipeline import AgentRenderResult, render_agent

__all__ = ["AGENT_GATE", "AgentRenderResult", "InvalidAgent", "generate_agent_config", "render_agent"]
