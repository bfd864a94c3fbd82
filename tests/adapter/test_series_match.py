"""Series names against `name.matches` and `seriesFilters`, unanchored as upstream's Go regexps are.

prometheus-adapter uses `regexp.MatchString` for filters and `FindStringSubmatchIndex` +
`ExpandString` for naming (../shared/reference/autoscaling.md §1.2-§1.3): a pattern matches
anywhere in the name unless it carries `^`/`$`, and `$0` is the matched part, not the whole name.
"""

from __future__ import annotations

from promop.adapter.config import GroupResource, parse_config
from promop.adapter.naming import Namer
from promop.adapter.registry import MetricKey, build, collect
from promop.adapter.resources import ResourceMapper

MAPPER = ResourceMapper()
QUERY = '{__name__=~".+",namespace!="",pod!=""}'


def rule(**kw) -> dict:
    base = {"seriesQuery": QUERY,
            "resources": {"overrides": {"namespace": {"resource": "namespace"}, "pod": {"resource": "pod"}}},
            "metricsQuery": "sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)"}
    base.update(kw)
    return base


def namer(**kw) -> Namer:
    return Namer(parse_config({"rules": [rule(**kw)]}).rules[0], MAPPER)


def test_name_matches_anywhere_in_the_series_name():
    assert namer(name={"matches": "requests_total"}).name_for("http_requests_total") == ("requests_total", "")
    assert namer(name={"matches": "requests_(total)"}).name_for("http_requests_total") == ("total", "")
    assert namer(name={"matches": "_(.*)_", "as": "x_${1}"}).name_for("http_requests_total") == ("x_requests", "")


def test_name_dollar_zero_is_the_matched_part_not_the_whole_name():
    assert namer(name={"matches": "seconds"}).name_for("io_seconds_total") == ("seconds", "")


def test_anchors_still_anchor():
    assert namer(name={"matches": "^requests_total$"}).name_for("http_requests_total")[0] is None
    assert namer(name={"matches": "^http_"}).name_for("x_http_requests")[0] is None


def test_series_filters_match_anywhere():
    n = namer(seriesFilters=[{"is": "requests"}])
    assert n.name_for("http_requests_total") == ("http_requests_total", "")
    n = namer(seriesFilters=[{"isNot": "seconds"}])
    assert n.name_for("http_request_seconds_total") == (None, "seriesFilters {isNot: seconds} rejects it")
    assert n.name_for("http_requests_total") == ("http_requests_total", "")


def test_registry_serves_a_name_matched_in_the_middle():
    cfg = parse_config({"rules": [rule(name={"matches": "requests_total", "as": "reqs"})]})
    namers = [Namer(r, MAPPER) for r in cfg.rules]
    sets = {QUERY: collect([[{"__name__": "http_requests_total", "namespace": "a", "pod": "p"}]], namers)}
    reg = build(namers, [], sets, [])
    assert MetricKey("", "pods", True, "reqs") in reg.custom
    assert reg.custom[MetricKey("", "pods", True, "reqs")].series == "http_requests_total"


def test_why_missing_names_a_series_its_filter_drops():
    cfg = parse_config({"rules": [rule(seriesFilters=[{"isNot": "http"}],
                                       name={"matches": "requests_total", "as": "reqs"})]})
    namers = [Namer(r, MAPPER) for r in cfg.rules]
    sets = {QUERY: collect([[{"__name__": "http_requests_total", "namespace": "a", "pod": "p"}]], namers)}
    reg = build(namers, [], sets, [])
    assert reg.custom == {}
    why = reg.why_missing(GroupResource("", "pods"), True, "reqs")
    assert "drops series http_requests_total: seriesFilters {isNot: http} rejects it" in why
