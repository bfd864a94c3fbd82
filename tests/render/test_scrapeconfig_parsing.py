"""Strings upstream's selector parses before accepting a ScrapeConfig: Kubernetes SD `label`/`field`
selectors (apimachinery's labels.Parse / fields.ParseSelector) and URLs (Go's url.Parse on HTTP SD
`url`, Docker and Docker Swarm `host`, PuppetDB `url`, Kuma `server`). A string that does not parse
rejects that ScrapeConfig alone, with a one-line reason naming the field.
"""

from __future__ import annotations

import pytest

from promop.render import RenderOptions, generate_config
from promop.render.scrapeconfig import gourl

PROM = {"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus",
        "metadata": {"name": "p", "namespace": "mon"}, "spec": {"scrapeConfigSelector": {}}}
GOOD = {"staticConfigs": [{"targets": ["a:9100"]}]}


def sc(name: str, spec: dict) -> dict:
    return {"apiVersion": "monitoring.coreos.com/v1alpha1", "kind": "ScrapeConfig",
            "metadata": {"name": name, "namespace": "mon"}, "spec": spec}


def judge(spec: dict):
    """Render the object next to a good one: the good one must always survive."""
    result = generate_config(PROM, scrape_configs=[sc("bad", spec), sc("good", GOOD)], options=RenderOptions())
    names = [j["job_name"] for j in result.config.get("scrape_configs") or []]
    assert "scrapeConfig/mon/good" in names
    return result.rejected, "scrapeConfig/mon/bad" in names


def k8s(**selector) -> dict:
    return {"kubernetesSDConfigs": [{"role": "Pod", "selectors": [{"role": "Pod", **selector}]}]}


def assert_rejected(spec: dict, field: str, *words: str) -> None:
    rejected, rendered = judge(spec)
    assert not rendered, "a rejected ScrapeConfig must not be rendered"
    assert [(p.name, p.field) for p in rejected] == [("bad", field)]
    message = rejected[0].message
    assert "\n" not in message
    for word in words:
        assert word in message, message


def assert_accepted(spec: dict) -> None:
    rejected, rendered = judge(spec)
    assert rejected == [] and rendered


@pytest.mark.parametrize("label, why", [
    ("app in (", "unable to parse requirement"),
    ("!!app", "unable to parse requirement"),
    ("app=a=b", "found '='"),
    ("app notin x", "unable to parse requirement"),
])
def test_label_selector_that_does_not_parse_rejects_the_object(label, why):
    assert_rejected(k8s(label=label), "spec.kubernetesSDConfigs[0].selectors[0].label", repr(label), why)


@pytest.mark.parametrize("field, why", [
    ("status.phase", "can't understand 'status.phase'"),
    ("a=b=c", "unescaped character"),
    ("a=b\\x", "invalid escape sequence"),
])
def test_field_selector_that_does_not_parse_rejects_the_object(field, why):
    assert_rejected(k8s(field=field), "spec.kubernetesSDConfigs[0].selectors[0].field", why)


def test_valid_selector_strings_are_accepted():
    assert_accepted(k8s(label="app=example,env!=production,release in (v1, v2)",
                        field="status.phase=Running,metadata.name!=worker"))
    assert_accepted(k8s(label="!canary,tier", field="metadata.name==x,spec.nodeName=a\\,b"))


@pytest.mark.parametrize("url, why", [
    ("http://exa mple.com/sd", 'invalid character " " in host name'),
    ("http://example.com:port/sd", 'invalid port ":port" after host'),
    ("http://example.com/%zz", 'invalid URL escape "%zz"'),
    ("http://[::1/sd", "missing ']' in host"),
])
def test_http_sd_url_that_go_cannot_parse_rejects_the_object(url, why):
    assert_rejected({"httpSDConfigs": [{"url": url}]}, "spec.httpSDConfigs[0].url", f'parse "{url}"', why)


def test_http_sd_url_that_parses_is_accepted():
    assert_accepted({"httpSDConfigs": [{"url": "http://example.com:8080/sd?x=%20y#frag"}]})


def test_docker_hosts_are_parsed():
    assert_accepted({"dockerSDConfigs": [{"host": "unix:///var/run/docker.sock"}]})
    assert_accepted({"dockerSDConfigs": [{"host": "tcp://docker:2375"}]})
    assert_rejected({"dockerSDConfigs": [{"host": "tcp://docker:tls"}]}, "spec.dockerSDConfigs[0].host",
                    'invalid port ":tls" after host')
    assert_rejected({"dockerSwarmSDConfigs": [{"host": "tcp://swarm host:2375", "role": "Nodes"}]},
                    "spec.dockerSwarmSDConfigs[0].host", "in host name")


def test_puppetdb_url_needs_a_host_and_kuma_server_a_scheme_and_host():
    puppet = {"url": "https:///pdb", "query": "resources { type = \"Class\" }"}
    assert_rejected({"puppetDBSDConfigs": [puppet]}, "spec.puppetDBSDConfigs[0].url", "host is missing")
    assert_accepted({"puppetDBSDConfigs": [{**puppet, "url": "https://puppetdb:8081"}]})
    assert_rejected({"kumaSDConfigs": [{"server": "http:///kuma"}]}, "spec.kumaSDConfigs[0].server",
                    "scheme and a host")
    assert_accepted({"kumaSDConfigs": [{"server": "http://kuma:5676"}]})


@pytest.mark.parametrize("raw, message", [
    ("http://example.com", None),
    ("", None),
    ("a:b/c", None),  # opaque URL with a scheme
    ("unix:///var/run/docker.sock", None),
    ("http://u:p@host:9090/path?q=1", None),
    (":x", 'parse ":x": missing protocol scheme'),
    ("1a:b", 'parse "1a:b": first path segment in URL cannot contain colon'),
    ("http://host:9o", 'parse "http://host:9o": invalid port ":9o" after host'),
    ("http://[::1]:x", 'parse "http://[::1]:x": invalid port ":x" after host'),
    ("http://x/%4", 'parse "http://x/%4": invalid URL escape "%4"'),
    ("http://x/#%g1", 'parse "http://x/#%g1": invalid URL escape "%g1"'),
    ("http://x%41", 'parse "http://x%41": invalid URL escape "%41"'),  # host escapes below %80 other than %25
    ("http://x%25", None),
    ("http://u{ser@x", 'parse "http://u{ser@x": net/url: invalid userinfo'),
    ("http://usér@x", 'parse "http://usér@x": net/url: invalid userinfo'),  # validUserinfo allows ASCII only
    ("http://hösт/", None),  # hosts may carry non-ASCII
    ("mailto:a#%zz", 'parse "mailto:a#%zz": invalid URL escape "%zz"'),  # the fragment of an opaque URL too
    ("http://x\x7f", 'parse "http://x\\x7f": net/url: invalid control character in URL'),
])
def test_go_url_parse_verdicts(raw, message):
    assert gourl.error(raw) == message


def test_go_url_parse_parts():
    assert gourl.parse("HTTPS://Host:1/p") == gourl.ParsedURL("https", "Host:1")
    assert gourl.parse("//host/p") == gourl.ParsedURL("", "host")
    assert gourl.parse("///p").host == ""
