"""Translate upstream's ScrapeConfig test tables (promcfg_test.go) into cases.yaml, our YAML inputs.

A one-off helper, kept so the translation can be checked and redone: it reads the Go composite
literals of each `TestScrapeConfigSpecConfig*` table and of its Secret/ConfigMap store, and maps Go
field names to the CRD's JSON names with the CRD schema (embedded structs are flattened, enum
constants resolved against the schema's enum). Cases it cannot express (a `patchProm` function)
are written with `patch_prometheus: TODO` and finished by hand in cases.yaml.

Usage: python3 translate.py PROMCFG_TEST_GO UPSTREAM_SCRAPECONFIG_CRD > generated.yaml
       python3 translate.py RESOURCE_SELECTOR_TEST_GO UPSTREAM_SCRAPECONFIG_CRD --selection > selection.yaml
"""

from __future__ import annotations

import re
import sys

import yaml

TOKEN = re.compile(r'\s+|//[^\n]*|"(?:\\.|[^"\\])*"|`[^`]*`|[A-Za-z_][A-Za-z0-9_.]*|-?[0-9][0-9.]*|[{}\[\](),:&*]')


class Const(str):
    """A Go identifier used as a value (an enum constant)."""


def tokens(text):
    out = []
    for m in TOKEN.finditer(text):
        t = m.group(0)
        if t.strip() and not t.startswith("//"):
            out.append(t)
    return out


class Parser:
    def __init__(self, toks):
        self.t = toks
        self.i = 0

    def peek(self, k=0):
        return self.t[self.i + k] if self.i + k < len(self.t) else None

    def next(self):
        tok = self.t[self.i]
        self.i += 1
        return tok

    def skip_balanced(self, open_, close):
        depth = 0
        while True:
            tok = self.next()
            if tok == open_:
                depth += 1
            elif tok == close:
                depth -= 1
                if depth == 0:
                    return

    def type_expr(self):
        """Skip a type: []T, map[K]V, *T, pkg.T."""
        tok = self.peek()
        if tok == "[":
            self.next(); self.next()  # [ ]
            self.type_expr()
        elif tok == "*":
            self.next(); self.type_expr()
        elif tok == "map":
            self.next(); self.skip_balanced("[", "]"); self.type_expr()
        else:
            self.next()

    def value(self):
        tok = self.peek()
        if tok == "&":
            self.next()
            return self.value()
        if tok == "func":
            self.next()
            start = self.i
            self.skip_balanced("(", ")")
            while self.peek() != "{":
                self.next()
            self.skip_balanced("{", "}")
            return ("FUNC", " ".join(self.t[start:self.i]))
        if tok == "{":
            return self.composite()
        if tok == "(":  # (*T)(x): a conversion
            self.skip_balanced("(", ")")
            self.next()
            v = self.value()
            self.next()
            return v
        if tok in ("[", "map", "*"):
            self.type_expr()
            if self.peek() == "(":  # conversion like []byte("x")
                self.next(); v = self.value(); self.next(); return v
            return self.composite()
        if tok.startswith('"'):
            self.next()
            return bytes(tok[1:-1], "utf-8").decode("unicode_escape")
        if tok.startswith("`"):
            self.next()
            return tok[1:-1]
        if re.match(r"-?[0-9]", tok):
            self.next()
            return float(tok) if "." in tok else int(tok)
        self.next()
        if tok in ("true", "false"):
            return tok == "true"
        if tok == "nil":
            return None
        if self.peek() == "(":
            self.next()
            args = []
            while self.peek() != ")":
                args.append(self.value())
                if self.peek() == ",":
                    self.next()
            self.next()
            return args[0] if args else None
        if self.peek() == "{":
            return self.composite()
        return Const(tok)

    def composite(self):
        self.next()  # {
        keyed, items = {}, []
        while self.peek() != "}":
            if self.peek(1) == ":" and self.peek() != "{":
                k = self.next()
                self.next()
                k = k[1:-1] if k.startswith('"') else k
                keyed[k] = self.value()
            else:
                items.append(self.value())
            if self.peek() == ",":
                self.next()
        self.next()
        return keyed if keyed or not items else items


EXCEPTIONS = {"IncludeOwnNamespace": "ownNamespace", "RelabelConfigs": "relabelings",
              "MetricRelabelConfigs": "metricRelabelings"}
# Go constants and variables of the tests whose value the schema's enums do not give.
CONSTANTS = {
    "monitoringv1.UTF8NameValidationScheme": "UTF8", "monitoringv1.LegacyNameValidationScheme": "Legacy",
    "monitoringv1.AllowUTF8NameEscapingScheme": "AllowUTF8", "monitoringv1.UnderscoresNameEscapingScheme": "Underscores",
    "monitoringv1.DotsNameEscapingScheme": "Dots", "monitoringv1.ValuesNameEscapingScheme": "Values",
    "monitoringv1.OpenMetricsText1_0_0": "OpenMetricsText1.0.0", "monitoringv1.OpenMetricsText0_0_1": "OpenMetricsText0.0.1",
    "monitoringv1.PrometheusProto": "PrometheusProto", "monitoringv1.PrometheusText0_0_4": "PrometheusText0.0.4",
    "monitoringv1.PrometheusText1_0_0": "PrometheusText1.0.0",
    "monitoringv1.TLSVersion10": "TLS10", "monitoringv1.TLSVersion11": "TLS11", "monitoringv1.TLSVersion12": "TLS12",
    "monitoringv1.TLSVersion13": "TLS13", "refreshInterval": "5m",
    "monitoringv1alpha1.KubernetesRoleEndpoint": "Endpoints",
}


def to_json(value, schema):
    if isinstance(value, dict):
        props = (schema or {}).get("properties")
        if props is None:  # a map
            sub = (schema or {}).get("additionalProperties") or {}
            return {k: to_json(v, sub) for k, v in value.items()}
        out = {}
        lower = {p.lower(): p for p in props}
        for k, v in value.items():
            name = EXCEPTIONS.get(k) or lower.get(k.lower())
            if name is None and k in ("LocalObjectReference",) and isinstance(v, dict):
                out.update(to_json(v, schema))
            elif name is None and isinstance(v, dict):  # an embedded struct
                out.update(to_json(v, schema))
            elif name is None:
                out[f"UNKNOWN_{k}"] = v
            else:
                out[name] = to_json(v, props[name])
        return out
    if value == {} and (schema or {}).get("type") == "array":  # an empty []T{} literal
        return []
    if isinstance(value, list):
        return [to_json(v, (schema or {}).get("items")) for v in value]
    if isinstance(value, Const) and value in CONSTANTS:
        return CONSTANTS[value]
    if isinstance(value, Const):
        enum = (schema or {}).get("enum") or ((schema or {}).get("items") or {}).get("enum") or []
        tail = value.split(".")[-1].lower()
        for e in sorted(enum, key=lambda s: -len(str(s))):
            if tail.endswith(str(e).lower()):
                return e
        return f"CONST_{value}"
    return value


def case_tables(src):
    """(function name, body) of each test function with ScrapeConfig goldens."""
    for m in re.finditer(r"^func (Test\w+)\(t \*testing\.T\) \{\n(.*?)^}\n", src, re.S | re.M):
        if "monitoringv1alpha1.ScrapeConfig" in m.group(2) and ".golden" in m.group(2):
            yield m.group(1), m.group(2)


def cases_in(body):
    m = re.search(r"range \[\]struct \{.*?\n\t\}\{", body, re.S)
    if not m:
        return []
    p = Parser(tokens(body[m.end() - 1:]))
    return p.composite()


def store_in(body):
    out = []
    for m in re.finditer(r"&(?:corev1|v1)\.(Secret|ConfigMap)\{", body):
        p = Parser(tokens(body[m.end() - 1:]))
        obj = p.composite()
        md = obj.get("ObjectMeta") or {}
        data = obj.get("Data") or obj.get("StringData") or {}
        out.append({"kind": m.group(1), "name": md.get("Name"), "namespace": md.get("Namespace", "default"),
                    "data": {k: str(v) for k, v in data.items()}})
    return out


def plain(value):
    """Constants left over (Go variables, untyped names) as `VAR_<name>`, to be resolved by hand."""
    if isinstance(value, Const):
        return f"VAR_{value}"
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def main():
    src = open(sys.argv[1]).read()
    crd = yaml.safe_load(open(sys.argv[2]))
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    out = []
    for func, body in case_tables(src):
        table = {"test": func, "store": store_in(body), "cases": []}
        for tc in cases_in(body):
            case = {"golden": tc.get("golden") or tc.get("goldenFile")}
            if not isinstance(case["golden"], str):
                continue
            if tc.get("version"):
                case["version"] = tc["version"]
            spec = tc.get("scSpec") or tc.get("spec")
            case["spec"] = to_json(spec or {}, schema)
            for k, v in tc.items():
                if isinstance(v, tuple):
                    case["patch_prometheus"] = "TODO: " + v[1]
            out.append(case) if False else table["cases"].append(case)
        out.append(table)
    yaml.safe_dump(plain(out), sys.stdout, sort_keys=False, width=120)



def selection_cases(src, schema):
    """TestSelectScrapeConfigs (resource_selector_test.go): each scenario's spec and whether upstream accepts it."""
    m = re.search(r"^func TestSelectScrapeConfigs\(t \*testing\.T\) \{\n(.*?)^}\n", src, re.S | re.M)
    table = cases_in(m.group(1))
    out = []
    for tc in table:
        spec: dict = {}
        body = tc.get("updateSpec")
        if isinstance(body, tuple):
            toks = tokens(body[1])
            start = toks.index("{") + 1
            p = Parser(toks[start:-1])
            while p.peek() is not None:
                target = p.next()
                path = target.split(".")[1:]
                value = p.value()
                node = spec
                for part in path[:-1]:
                    node = node.setdefault(part, {})
                node[path[-1]] = value
        case = {"scenario": tc["scenario"], "valid": tc["valid"], "spec": to_json(spec, schema)}
        if tc.get("promVersion"):
            case["version"] = tc["promVersion"]
        if tc.get("scrapeClass"):
            case["spec"]["scrapeClass"] = tc["scrapeClass"]
        out.append(case)
    return out



def main_selection():
    src = open(sys.argv[1]).read()
    crd = yaml.safe_load(open(sys.argv[2]))
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    yaml.safe_dump(plain(selection_cases(src, schema)), sys.stdout, sort_keys=False, width=120)


if __name__ == "__main__":
    main_selection() if "--selection" in sys.argv else main()
