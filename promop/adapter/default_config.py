"""prometheus-adapter's legacy default configuration (`cmd/config-gen`), as data.

`promop adapter default-config --rate-interval 5m --label-prefix P` prints it:
cAdvisor `container_*` series become pod metrics (`_seconds_total` and `_total`
as rates, the rest as gauges), other namespaced series become metrics of the
resource their labels name (`P<<.Resource>>`), and resourceRules serve
metrics.k8s.io from cAdvisor's CPU and working-set memory.
"""

from __future__ import annotations

from typing import Any

import yaml

from promop.duration import format_duration, parse_duration

def default_config(rate_interval: str = "5m", label_prefix: str = "") -> dict[str, Any]:
    """The config as a dict, ready to dump as YAML."""
    r = format_duration(parse_duration(rate_interval))
    p = label_prefix
    container_query = '{__name__=~"^container_.*",container!="POD",namespace!="",pod!=""}'
    container_overrides = {"namespace": {"resource": "namespace"}, "pod": {"resource": "pod"}}
    normal_query = f'{{{p}namespace!="",__name__!~"^container_.*"}}'

    def rule(series: str, filters: list, resources: dict, matches: str, query: str) -> dict:
        return {"seriesQuery": series, "seriesFilters": filters, "resources": resources,
                "name": {"matches": matches, "as": ""}, "metricsQuery": query}

    rate = f"sum(rate(<<.Series>>{{<<.LabelMatchers>>,container!=\"POD\"}}[{r}])) by (<<.GroupBy>>)"
    template = {"template": f"{p}<<.Resource>>"}
    node_overrides = {"namespace": {"resource": "namespace"}, "pod": {"resource": "pod"},
                      "instance": {"resource": "node"}}
    return {
        "rules": [
            rule(container_query, [], {"overrides": container_overrides}, "^container_(.*)_seconds_total$", rate),
            rule(container_query, [{"isNot": "^container_.*_seconds_total$"}], {"overrides": container_overrides},
                 "^container_(.*)_total$", rate),
            rule(container_query, [{"isNot": "^container_.*_total$"}], {"overrides": container_overrides},
                 "^container_(.*)$", 'sum(<<.Series>>{<<.LabelMatchers>>,container!="POD"}) by (<<.GroupBy>>)'),
            rule(normal_query, [{"isNot": ".*_total$"}], dict(template), "",
                 "sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)"),
            rule(normal_query, [{"isNot": ".*_seconds_total"}], dict(template), "^(.*)_total$",
                 f"sum(rate(<<.Series>>{{<<.LabelMatchers>>}}[{r}])) by (<<.GroupBy>>)"),
            rule(normal_query, [], dict(template), "^(.*)_seconds_total$",
                 f"sum(rate(<<.Series>>{{<<.LabelMatchers>>}}[{r}])) by (<<.GroupBy>>)"),
        ],
        "resourceRules": {
            "cpu": {
                "containerQuery": f"sum(rate(container_cpu_usage_seconds_total{{<<.LabelMatchers>>}}[{r}])) by (<<.GroupBy>>)",
                "nodeQuery": f"sum(rate(container_cpu_usage_seconds_total{{<<.LabelMatchers>>, id='/'}}[{r}])) by (<<.GroupBy>>)",
                "resources": {"overrides": dict(node_overrides)},
                "containerLabel": f"{p}container",
            },
            "memory": {
                "containerQuery": "sum(container_memory_working_set_bytes{<<.LabelMatchers>>}) by (<<.GroupBy>>)",
                "nodeQuery": "sum(container_memory_working_set_bytes{<<.LabelMatchers>>,id='/'}) by (<<.GroupBy>>)",
                "resources": {"overrides": dict(node_overrides)},
                "containerLabel": f"{p}container",
            },
            "window": r,
        },
    }


def default_config_yaml(rate_interval: str = "5m", label_prefix: str = "") -> str:
    import json

    # A JSON round trip unshares sub-dicts, which YAML would otherwise dump as anchors and aliases.
    data = json.loads(json.dumps(default_config(rate_interval, label_prefix)))
    return yaml.safe_dump(data, sort_keys=False, width=1000)
