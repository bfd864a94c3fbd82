"""HTTP/1.1 front end: routing Kubernetes API paths to the verbs, request accounting, fault
injection, and chunked watch streams."""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, unquote, urlsplit

import yaml

from promop.sandbox import auth, kinds, negotiate, openapi, protobuf
from promop.sandbox.errors import ApiError, bad_request
from promop.sandbox.fields import FIELD_MANAGER_MAX_LENGTH, manager_from_user_agent
from promop.sandbox.discovery import VERSION_INFO
from promop.sandbox.patch import APPLY_PATCH, apply_patch
from promop.sandbox.resources import ResourceType
from promop.fieldselector import parse_field_selector as parse_fields, requires_exact_match
from promop.labelselector import SelectorError
from promop.sandbox.selectors import (object_predicate, parse_field_selector,
                                      parse_label_selector)
from promop.sandbox.tables import table
from promop.sandbox.watch import Watcher, encode, partial_metadata

if TYPE_CHECKING:
    from promop.sandbox.sandbox import Sandbox

log = logging.getLogger("promop.sandbox")

WRITE_VERBS = ("create", "update", "patch", "delete", "deletecollection")
JSON = "application/json"
PROTOBUF = "application/vnd.kubernetes.protobuf"


@dataclass
class RequestRecord:
    """One answered request, for tests that assert on API traffic."""

    method: str
    verb: str
    group: str | None
    version: str | None
    resource: str | None
    subresource: str | None
    namespace: str | None
    name: str | None
    code: int
    user_agent: str
    path: str = ""
    recorded: bool = field(default=False, repr=False, compare=False)

    @property
    def is_write(self) -> bool:
        return self.verb in WRITE_VERBS


@dataclass
class Route:
    group: str
    version: str
    rt: ResourceType
    namespace: str | None
    name: str | None
    subresource: str | None
    watch_path: bool


class SandboxHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    block_on_close = False

    def __init__(self, address, sandbox: "Sandbox") -> None:
        self.sandbox = sandbox
        self.connections: set = set()
        self.connections_lock = threading.Lock()
        self.stopping = False
        self.watch_streams = 0  # watch handlers between their first byte and their last
        super().__init__(address, Handler)

    def track_watch(self, delta: int) -> None:
        with self.connections_lock:
            self.watch_streams += delta

    def handle_error(self, request, client_address) -> None:
        """Clients hanging up mid-stream are routine; anything else is a sandbox bug."""
        import sys

        error = sys.exc_info()[1]
        if isinstance(error, (OSError, ValueError)):
            return
        log.exception("sandbox connection failed client=%s:%s", *client_address[:2])

    def close_connections(self) -> None:
        with self.connections_lock:
            connections = list(self.connections)
        for connection in connections:
            try:
                connection.shutdown(2)
            except OSError:
                pass


def _api_version(obj: dict) -> str | None:
    return obj.get("apiVersion")


def _first(params: dict, name: str, default: str | None = None) -> str | None:
    values = params.get(name)
    return values[0] if values else default


def _number(params: dict, name: str, default: float) -> float:
    text = _first(params, name)
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        raise bad_request(f'{name} must be a non-negative integer, not "{text}"') from None
    if value < 0:
        raise bad_request(f'{name} must be a non-negative integer, not "{text}"')
    return value


def _flag(params: dict, name: str) -> bool:
    return (_first(params, name) or "").lower() in ("true", "1")


def warning_headers(warnings: list[str]) -> list[tuple[str, str]]:
    """RFC 7234 warnings as the apiserver sends them: `299 - "<text>"`, one header each."""
    return [("Warning", "299 - " + json.dumps(text)) for text in warnings]


def supported_fields(rt: ResourceType, requirements: list) -> list:
    """Only the field labels the real apiserver supports for the kind (kinds.RULES; custom
    resources: metadata.name and metadata.namespace); others are 400, worded as upstream."""
    allowed = kinds.selectable_fields(rt.key) if rt.builtin else \
        ("metadata.name", "metadata.namespace")
    checked = []
    for requirement in requirements:
        label = ".".join(requirement.path)
        if label not in allowed:
            if rt.builtin:
                raise bad_request(f"field label not supported: {label}")
            raise bad_request(f'"{label}" is not a known field selector: only '
                              + ", ".join(f'"{a}"' for a in allowed))
        if label == "source" and rt.key == ("", "events"):  # the component, as upstream
            requirement = replace(requirement, path=("source", "component"))
        checked.append(requirement)
    return checked


def parse_route(sandbox: "Sandbox", parts: list[str]) -> Route | None:
    if parts[0] == "api" and len(parts) >= 3:
        group, version, rest = "", parts[1], parts[2:]
    elif parts[0] == "apis" and len(parts) >= 4:
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    watch_path = rest[0] == "watch"
    if watch_path:
        rest = rest[1:]
    namespace = name = sub = None
    if not rest:
        return None
    if rest[0] == "namespaces" and len(rest) >= 3 and not (
            group == "" and len(rest) == 3 and rest[2] in ("status", "finalize")):
        namespace, plural, tail = rest[1], rest[2], rest[3:]
    else:
        plural, tail = rest[0], rest[1:]
    if len(tail) > 2:
        return None
    name = tail[0] if tail else None
    sub = tail[1] if len(tail) > 1 else None
    rt = sandbox.registry.lookup(group, version, plural)
    if rt is None or (namespace is not None and not rt.namespaced):
        return None
    if sub and not ((sub == "status" and rt.status_subresource) or
                    (rt.group, rt.plural, sub) in sandbox.subresources or
                    (sub == "token" and rt.key == ("", "serviceaccounts")) or
                    (sub == "scale" and rt.scale is not None) or
                    (sub == "finalize" and plural == "namespaces")):
        return None
    return Route(group, version, rt, namespace, name, sub, watch_path)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    wbufsize = 1 << 16  # headers and body leave in one send; watch chunks flush explicitly
    server: SandboxHTTPServer

    def log_message(self, format, *args) -> None:  # noqa: A002 - the stdlib's name
        pass

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self.server.connections_lock:
            self.server.connections.add(self.connection)

    def finish(self) -> None:
        with self.server.connections_lock:
            self.server.connections.discard(self.connection)
        try:
            super().finish()
        except OSError:
            pass

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_PUT(self) -> None:
        self._handle("PUT")

    def do_PATCH(self) -> None:
        self._handle("PATCH")

    def do_DELETE(self) -> None:
        self._handle("DELETE")

    # -- plumbing ------------------------------------------------------------------------------
    def _send(self, code: int, body: bytes, headers: dict | list | None = None,
              content_type: str = JSON) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-cache, private")
        for key, value in (headers.items() if isinstance(headers, dict) else headers or []):
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)

    def _send_json(self, code: int, obj: dict, headers: dict | list | None = None) -> None:
        self._send(code, encode(obj), headers)

    def _read_body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            parts = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _decode(self, raw: bytes, content_type: str):
        if not raw:
            return None
        media = content_type.split(";")[0].strip()
        if media == PROTOBUF:
            obj = protobuf.decode(raw)
            if obj is not None:
                return obj
        if not (media.endswith("json") or media.endswith("yaml")):
            raise ApiError(415, f'the body of the request was in an unknown format "{media}" - '
                                "accepted media types include: application/json, "
                                "application/yaml (the sandbox decodes protobuf only for Namespaces, "
                                "ConfigMaps, Secrets and ServiceAccounts)")
        try:
            if content_type.startswith(APPLY_PATCH) or "yaml" in content_type:
                return yaml.safe_load(raw)
            return json.loads(raw)
        except (ValueError, yaml.YAMLError) as exc:
            raise bad_request(f"the request body is not valid JSON: {exc}") from None

    def _handle(self, method: str) -> None:
        sandbox = self.server.sandbox
        url = urlsplit(self.path)
        params = parse_qs(url.query, keep_blank_values=True)
        raw = self._read_body()
        parts = [unquote(p) for p in url.path.strip("/").split("/")] or [""]
        record = RequestRecord(method, method.lower(), None, None, None, None, None, None, 0,
                               self.headers.get("User-Agent", ""), self.path)
        from promop.sandbox import aggregation  # aggregated API groups go to their backends

        try:
            user = None
            if sandbox.authorization == "rbac":  # authenticated before any proxying
                user = sandbox.authenticator.authenticate(self.headers.get("Authorization"),
                                                          sandbox.store)
            if aggregation.handle(self, method, url, parts, raw):
                record.recorded = True  # proxied: the backend's request, not the sandbox's
                return
            for hook in list(sandbox.request_hooks):
                if hook(self, method, parts, params, raw, record):
                    return  # answered by an extension (e.g. an aggregated API's proxy)
            route = parse_route(sandbox, parts)
            if route is None:
                record.verb = "get" if method == "GET" else method.lower()
                self._non_resource(method, url.path, record)
                return
            record.group, record.version, record.resource = route.group, route.version, \
                route.rt.plural
            record.namespace, record.name, record.subresource = route.namespace, route.name, \
                route.subresource
            record.verb = self._verb(method, route, params)
            if user is not None:
                attrs = auth.Attributes(record.verb, route.group, route.rt.plural,
                                        route.subresource or "", route.namespace or "",
                                        route.name or _selected_name(record.verb, params))
                with sandbox.store.lock:
                    permitted = auth.allowed(sandbox.store, user, attrs)
                if not permitted:
                    raise auth.forbidden(user, attrs)
            delay = sandbox.faults.latency(record.verb, route.rt.plural)
            if delay:
                time.sleep(delay)
            failure = sandbox.faults.take_failure(record.verb, route.rt.plural)
            if failure is not None:
                raise failure
            content_type = (self.headers.get("Content-Type") or JSON).lower()
            if route.subresource == "token" and content_type.startswith(PROTOBUF):
                raw = b""  # a TokenRequest's options are optional: serve the defaults
            body = self._decode(raw, content_type)
            if record.verb == "watch":
                self._watch(route, params, record)
                return
            field_validation = _first(params, "fieldValidation") or "Warn"
            if field_validation not in ("Ignore", "Warn", "Strict"):
                raise bad_request(f'fieldValidation: Unsupported value: "{field_validation}": '
                                  'supported values: "Ignore", "Strict", "Warn"')
            sandbox.api.begin_request(field_validation)
            code, obj = self._resource(route, record.verb, params, body, content_type)
            record.code = code
            warnings = sandbox.api.take_warnings()
            self._answer(route, code, obj, warning_headers(warnings))
        except ApiError as error:
            record.code = error.code
            self._send_json(error.code, error.status(), error.headers)
        except (BrokenPipeError, ConnectionResetError):
            record.code = 499
            self.close_connection = True
        except Exception as exc:  # a sandbox bug: say so, as the apiserver would
            log.exception("sandbox request failed method=%s path=%s", method, self.path)
            record.code = 500
            self._send_json(500, ApiError(500, f"sandbox internal error: {exc!r}").status())
        finally:
            if not record.recorded:
                sandbox.record(record)

    @staticmethod
    def _verb(method: str, route: Route, params: dict) -> str:
        if method == "GET":
            if route.watch_path or _flag(params, "watch"):
                return "watch"
            return "get" if route.name else "list"
        if method == "POST":
            return "create"
        if method == "PUT":
            return "update"
        if method == "PATCH":
            return "patch"
        if method == "DELETE":
            return "delete" if route.name else "deletecollection"
        raise ApiError(405, f"method {method} is not allowed")

    def _non_resource(self, method: str, path: str, record: RequestRecord) -> None:
        sandbox = self.server.sandbox
        path = "/" + path.strip("/")
        doc = None
        if method == "GET":
            if path == "/version":
                doc = VERSION_INFO
            elif path in ("/healthz", "/livez", "/readyz"):
                record.code = 200
                self._send(200, b"ok", content_type="text/plain")
                return
            elif path == "/api":
                doc = sandbox.registry.api_versions(f"127.0.0.1:{sandbox.port}")
            elif path == "/apis":
                doc = sandbox.registry.api_group_list()
            elif path == "/openapi/v3" or path.startswith("/openapi/v3/"):
                doc = openapi.document_for_path(sandbox.registry, path)
            else:
                parts = path.strip("/").split("/")
                if parts[0] == "api" and len(parts) == 2:
                    doc = sandbox.registry.resource_list("", parts[1])
                elif parts[0] == "apis" and len(parts) == 2:
                    doc = sandbox.registry.api_group(parts[1])
                elif parts[0] == "apis" and len(parts) == 3:
                    doc = sandbox.registry.resource_list(parts[1], parts[2])
        if doc is None:
            raise ApiError(404, "the server could not find the requested resource",
                           details={"causes": [{"reason": "UnexpectedServerResponse",
                                                "message": f"{method} {path}"}]})
        record.code = 200
        self._send_json(200, doc)

    # -- resources -----------------------------------------------------------------------------
    def _resource(self, route: Route, verb: str, params: dict, body, content_type: str):
        api = self.server.sandbox.api
        rt, ns, name, sub = route.rt, route.namespace or "", route.name, route.subresource
        dry_run = bool(_first(params, "dryRun"))
        manager = self._field_manager(verb, params, content_type)
        extension = self.server.sandbox.subresources.get((rt.group, rt.plural, sub))
        if extension is not None:
            return extension(api, verb, route, params, body, content_type, manager)
        if sub == "token":
            if verb != "create":
                raise ApiError(405, f"{verb} is not supported on serviceaccounts/token")
            return 201, self.server.sandbox.request_token(ns, name, body or {})
        if sub == "scale":
            if verb == "get":
                return 200, api.get_scale(rt, ns, name)
            if verb == "update":
                return 200, api.set_scale(rt, ns, name, body or {}, manager)
            if verb == "patch":
                current = api.get_scale(rt, ns, name)
                return 200, api.set_scale(rt, ns, name,
                                          apply_patch(content_type, current, body, True),
                                          manager)
            raise ApiError(405, f"{verb} is not supported on {rt.plural}/scale")
        if verb == "get":
            return 200, api.get(rt, ns, name)
        if verb == "list":
            predicate = self._predicate(rt, params)
            limit = int(_number(params, "limit", 0))
            result = api.list(rt, route.namespace, predicate, limit,
                              _first(params, "continue", "") or "",
                              _first(params, "resourceVersion", "") or "",
                              _first(params, "resourceVersionMatch", "") or "")
            return 200, result
        if verb == "create":
            if body is None:
                raise bad_request("a create needs a request body")
            return 201, api.create(rt, ns, body, dry_run, manager)
        if verb == "update":
            if body is None:
                raise bad_request("an update needs a request body")
            return 200, api.update(rt, ns, name, body, sub or "", dry_run, manager)
        if verb == "patch":
            if body is None:
                raise bad_request("a patch needs a request body")
            patched = api.patch(rt, ns, name, content_type, body, sub or "", dry_run, manager,
                                _flag(params, "force"))
            return (201 if api.took_create() else 200), patched
        options = dict(body or {}) if isinstance(body, dict) else {}
        for param in ("propagationPolicy", "orphanDependents"):
            if _first(params, param) is not None:
                value = _first(params, param)
                options[param] = value if param == "propagationPolicy" else value == "true"
        if verb == "delete":
            return 200, api.delete(rt, ns, name, options, dry_run)
        return 200, api.delete_collection(rt, route.namespace, self._predicate(rt, params), options)

    def _field_manager(self, verb: str, params: dict, content_type: str) -> str | None:
        """Who a write's fields belong to: `fieldManager`, else the User-Agent's product
        name (required for apply, as the apiserver does); None for reads."""
        if verb not in ("create", "update", "patch"):
            return None
        options = "PatchOptions" if verb == "patch" else (
            "CreateOptions" if verb == "create" else "UpdateOptions")
        manager = _first(params, "fieldManager") or ""
        problem = reason = None
        if not manager and verb == "patch" and content_type.startswith(APPLY_PATCH):
            problem, reason = "Required value: is required for apply patch", "FieldValueRequired"
        elif len(manager) > FIELD_MANAGER_MAX_LENGTH:
            problem, reason = (f"Too long: may not be longer than {FIELD_MANAGER_MAX_LENGTH}",
                               "FieldValueTooLong")
        elif not manager.isprintable():
            problem, reason = ("Invalid value: must only contain printable characters",
                               "FieldValueInvalid")
        if problem:
            raise ApiError(422, f'{options}.meta.k8s.io "" is invalid: fieldManager: {problem}',
                           details={"group": "meta.k8s.io", "kind": options, "causes": [
                               {"reason": reason, "message": problem, "field": "fieldManager"}]})
        return manager or manager_from_user_agent(self.headers.get("User-Agent") or "")

    @staticmethod
    def _predicate(rt: ResourceType, params: dict, field_selector: str | None = None):
        if field_selector is None:
            field_selector = _first(params, "fieldSelector")
        return object_predicate(parse_label_selector(_first(params, "labelSelector")),
                                supported_fields(rt, parse_field_selector(field_selector)))

    def _present(self, rt: ResourceType, obj: dict, shape: str) -> dict:
        if shape == negotiate.PARTIAL and obj.get("kind") != "Status":
            return partial_metadata(obj)
        if obj.get("apiVersion") != rt.api_version and obj.get("kind") == rt.kind:
            return self.server.sandbox.api.conversion.present(rt, obj)
        return obj

    def _answer(self, route: Route, code: int, result, headers: list | None = None) -> None:
        shape = negotiate.response_format(self.headers.get("Accept"))
        rt = route.rt
        if not hasattr(result, "raws"):
            if shape == negotiate.TABLE and result.get("kind") == rt.kind:
                result = table([result], result["metadata"].get("resourceVersion", ""),
                               columns=rt.extra.get("printerColumns"), key=rt.key)
            self._send_json(code, self._present(rt, result, shape), headers)
            return
        metadata = {"resourceVersion": str(result.resource_version)}
        if result.continue_token:
            metadata["continue"] = result.continue_token
        if result.remaining is not None:
            metadata["remainingItemCount"] = result.remaining
        if shape == negotiate.TABLE:
            self._send_json(code, table(result.objects, metadata["resourceVersion"],
                                        result.continue_token, rt.extra.get("printerColumns"),
                                        rt.key))
            return
        if shape == negotiate.PARTIAL:
            head = {"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1"}
            items = [encode(partial_metadata(o)) for o in result.objects]
        else:
            head = {"kind": rt.extra.get("listKind", rt.kind + "List"),
                    "apiVersion": rt.api_version}
            if set(map(_api_version, result.objects)) <= {rt.api_version}:  # the usual case: as stored
                items = result.raws
            else:
                present = self.server.sandbox.api.conversion.present
                items = [raw if obj.get("apiVersion") == rt.api_version else encode(present(rt, obj))
                         for obj, raw in zip(result.objects, result.raws)]
        head["metadata"] = metadata
        self._send_list(code, encode(head)[:-1] + b',"items":[', items)

    def _send_list(self, code: int, head: bytes, items: list[bytes]) -> None:
        """A List body written in slices through the 64 KiB socket buffer, never joined whole.

        Joining a 10,000-object LIST (several MB) into one bytes object and
        then copying it again costs more in fresh memory (page faults) than
        the encoding itself.
        """
        step = 64
        length = len(head) + sum(map(len, items)) + max(len(items) - 1, 0) + 2
        self.send_response(code)
        self.send_header("Content-Type", JSON)
        self.send_header("Content-Length", str(length))
        self.send_header("Cache-Control", "no-cache, private")
        self.end_headers()
        write = self.wfile.write
        write(head)
        for start in range(0, len(items), step):
            if start:
                write(b",")
            write(b",".join(items[start:start + step]))
        write(b"]}")

    # -- watch ---------------------------------------------------------------------------------
    def _watch(self, route: Route, params: dict, record: RequestRecord) -> None:
        sandbox = self.server.sandbox
        rt = route.rt
        field_selector = _first(params, "fieldSelector") or ""
        if route.name:  # legacy /watch/.../<name> paths
            field_selector = ",".join(filter(None, [field_selector,
                                                    f"metadata.name={route.name}"]))
        predicate = self._predicate(rt, params, field_selector)
        shape = negotiate.response_format(self.headers.get("Accept"))
        watcher = Watcher(rt.key, route.namespace, predicate, shape == negotiate.PARTIAL,
                          rt.api_version, rt.kind)
        if sandbox.api.conversion.uses_webhook(rt):
            watcher.convert = lambda obj: sandbox.api.conversion.watched(rt, obj)
        rv_param = _first(params, "resourceVersion") or ""
        since: int | None = None
        if rv_param not in ("", "0"):
            try:
                since = int(rv_param)
            except ValueError:
                raise bad_request(f'invalid resourceVersion "{rv_param}"') from None
        timeout = _number(params, "timeoutSeconds", sandbox.default_watch_timeout)
        bookmarks = _flag(params, "allowWatchBookmarks")
        self.server.track_watch(1)
        try:
            self._open_stream(watcher, since, timeout, bookmarks, record)
        finally:
            self.server.track_watch(-1)

    def _open_stream(self, watcher: Watcher, since: int | None, timeout: float,
                     bookmarks: bool, record: RequestRecord) -> None:
        sandbox = self.server.sandbox
        self.send_response(200)
        self.send_header("Content-Type", JSON)
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache, private")
        self.end_headers()
        self.wfile.flush()
        record.code = 200
        sandbox.record(record)  # now, not when the stream ends: tests count open watches
        record.recorded = True
        try:
            sandbox.store.add_watcher(watcher, since)
        except ApiError as error:  # 410: an ERROR event, then the stream ends
            self._chunk(Watcher.error_line(error))
            self._chunk(b"")
            return
        try:
            self._stream(watcher, timeout, bookmarks)
        except OSError:
            self.close_connection = True
        finally:
            sandbox.store.remove_watcher(watcher)

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _stream(self, watcher: Watcher, timeout: float, bookmarks: bool) -> None:
        """Deliver the watcher's queue until the timeout, a close or a server stop.

        Bookmarks follow the real apiserver's watch cache: none while nothing changes; while
        the store moves, one per `bookmark_interval` (a minute by default) carrying the latest
        resourceVersion; and one `bookmark_before_timeout` seconds before `timeoutSeconds`
        ends, so a client re-watches from a fresh RV."""
        sandbox = self.server.sandbox
        faults = sandbox.faults
        started = time.monotonic()
        deadline = started + timeout
        never = float("inf")
        interval = sandbox.bookmark_interval
        next_tick = started + interval if bookmarks else never
        pre_timeout = deadline - sandbox.bookmark_before_timeout if bookmarks else never
        if pre_timeout <= started:
            pre_timeout = never
        while True:
            with watcher.cond:
                # `stopping` is checked here, not only after a wake-up: a watch registered
                # after Sandbox.stop() closed the open ones must end by itself
                while not watcher.closed and not self.server.stopping and \
                        (not watcher.queue or faults.stalled):
                    wait_until = deadline
                    if not faults.stalled:
                        wait_until = min(wait_until, next_tick, pre_timeout)
                    remaining = wait_until - time.monotonic()
                    if remaining <= 0:
                        break
                    watcher.cond.wait(remaining)
                lines = []
                if not faults.stalled and watcher.queue:
                    lines = list(watcher.queue)
                    watcher.queue.clear()
                closed = watcher.closed
            if lines:
                self._chunk(b"".join(lines))
            if closed or self.server.stopping:
                break
            current = time.monotonic()
            if current >= deadline:
                break
            if faults.stalled or current < min(next_tick, pre_timeout):
                continue
            final = current >= pre_timeout
            if final:
                pre_timeout = next_tick = never
            else:
                next_tick = current + interval
            with sandbox.store.lock:
                rv = sandbox.store.rv
                with watcher.cond:
                    due = not watcher.queue and (final or rv > watcher.told_rv)
                    if due:
                        watcher.told_rv = rv
            if due:
                self._chunk(watcher.bookmark_line(rv))
        self._chunk(b"")


def _selected_name(verb: str, params: dict) -> str:
    """As the apiserver's request info: a list or watch narrowed to one object by
    `fieldSelector=metadata.name=X` is authorized as a request for X (so a Role's
    `resourceNames` can allow watching one object)."""
    if verb not in ("list", "watch"):
        return ""
    try:
        name = requires_exact_match(parse_fields(_first(params, "fieldSelector")), "metadata.name")
    except SelectorError:
        return ""  # a selector that does not parse leaves the name unset, as upstream
    if name and name not in (".", "..") and "/" not in name and "%" not in name:
        return name
    return ""
