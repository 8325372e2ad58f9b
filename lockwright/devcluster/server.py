"""HTTP front of devcluster: kube-apiserver's REST paths over keep-alive HTTP/1.1.

Paths: ``/api/v1/...`` and ``/apis/{group}/{version}/...`` with optional
``namespaces/{ns}/`` and ``/{subresource}``; discovery, ``/version``, ``/openapi/*`` and
health endpoints. Every error is a ``Status`` body with the matching HTTP code. Watches
are chunked streams of JSON lines.
"""

from __future__ import annotations

import json
import select
import socket
import ssl
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import orjson

from lockwright.devcluster import discovery, openapi, scale, shapes, table
from lockwright.devcluster.admission import WriteOptions
from lockwright.devcluster.cluster import Cluster
from lockwright.devcluster.errors import ApiError, bad_request, method_not_allowed, not_found_path, too_large
from lockwright.devcluster.guard import SSAR_PATH, Guard, access_review
from lockwright.devcluster.selectors import field_selector, label_selector
from lockwright.devcluster.types import ResourceType, dump_json
from lockwright.devcluster.watch import BOOKMARK_INTERVAL_S, WatchRequest, stream
from lockwright.devcluster.watchlist import sends_initial_events

MAX_BODY = 3 * 1024 * 1024
COMPACT_PATH = "/debug/compact"  # POST: forget the change log, as an etcd compaction
Obj = dict[str, Any]


@dataclass
class Target:
    """A parsed resource path."""

    rt: ResourceType
    namespace: str | None
    name: str | None
    subresource: str
    watch: bool


class Settings:
    """Server knobs that tests may turn."""

    bookmark_interval = BOOKMARK_INTERVAL_S


class Handler(BaseHTTPRequestHandler):
    """One request; the server's ``cluster`` does the work."""

    protocol_version = "HTTP/1.1"
    server: "DevServer"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        return

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in separate writes; without NODELAY, Nagle's algorithm
        # and the client's delayed ACK add ~40 ms to every response.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.handshake_failed = not _handshake(self.connection)

    def handle(self) -> None:
        if not self.handshake_failed:
            super().handle()

    # -- plumbing ------------------------------------------------------------------------

    def _query(self) -> dict[str, str]:
        return {k: v[-1] for k, v in parse_qs(urlsplit(self.path).query,
                                               keep_blank_values=True).items()}

    def _body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            self.rfile.read(length)
            raise too_large()
        self.raw_body = self.rfile.read(length) if length else b""
        return self.raw_body

    def _send(self, code: int, body: Any, content_type: str = "application/json",
              warnings: list[str] | None = None) -> None:
        data = body if isinstance(body, bytes) else dump_json(body)
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-cache, private")
        for w in warnings or []:
            self.send_header("Warning", f'299 - "{w}"'.replace("\n", " "))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, exc: ApiError) -> None:
        self._send(exc.code, exc.status())

    def _dispatch(self, method: str) -> None:
        self.raw_body = b""
        try:
            self._answer(method)
        finally:
            if self.server.recorder is not None:
                self._record(method, self.server.recorder)

    def _record(self, method: str, recorder: shapes.Recorder) -> None:
        parts = [unquote(p) for p in urlsplit(self.path).path.split("/") if p]
        recorder.record(shapes.shape_of(method, parts, self._query(), self.headers,
                                        self.raw_body))

    def _answer(self, method: str) -> None:
        try:
            if self.server.guard is None and method == "POST" and urlsplit(
                    self.path).path == SSAR_PATH:
                return self._send(201, access_review(_load_json(self._body()), True,
                                                     self._field_manager()))
            if self.server.guard is None or not self._guarded(method, self.server.guard):
                self._route(method)
        except ApiError as exc:
            self._error(exc)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as exc:  # noqa: BLE001 - a bug answers 500, the server keeps serving
            import traceback

            traceback.print_exc()
            self._error(ApiError(500, "InternalError", f"Internal error occurred: {exc!r}"))

    def _guarded(self, method: str, guard: Guard) -> bool:
        """Authenticate and authorize (RBAC mode); True when the guard answered itself."""
        path = urlsplit(self.path).path
        try:
            attrs = guard.admit(method, path, self._query(), self.headers)
        except ApiError:
            self._drain()
            raise
        answer = guard.answer(attrs, method, lambda: _load_json(self._body()),
                              self._field_manager())
        if answer is not None:
            self._send(*answer)
        return answer is not None

    def _drain(self) -> None:
        """Read a refused request's body, so the next request on the connection parses."""
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            self.close_connection = True
        elif length:
            self.raw_body = self.rfile.read(length)  # its shape is recorded too

    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        self._dispatch("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._dispatch("POST")

    def do_PUT(self) -> None:  # noqa: N802
        self._dispatch("PUT")

    def do_PATCH(self) -> None:  # noqa: N802
        self._dispatch("PATCH")

    def do_DELETE(self) -> None:  # noqa: N802
        self._dispatch("DELETE")

    # -- routing -------------------------------------------------------------------------

    def _route(self, method: str) -> None:
        """Dispatch a request: meta endpoints, the debug compaction, then resources."""
        path = urlsplit(self.path).path.rstrip("/") or "/"
        # Clients percent-encode names (the Python client turns ":" into "%3A").
        parts = [unquote(p) for p in path.split("/") if p]
        if method == "GET" and self._meta_endpoint(path, parts):
            return
        if method == "POST" and path == COMPACT_PATH:
            # A test's etcd compaction (tests/fidelity): watches from before now get 410.
            return self._send(200, {"revision": self.server.cluster.store.compact()})
        target = self._target(parts)
        if target is None:
            raise not_found_path()
        handler = getattr(self, f"_{method.lower()}", None)
        if handler is None:
            raise method_not_allowed()
        handler(target)

    def _meta_endpoint(self, path: str, parts: list[str]) -> bool:
        cluster = self.server.cluster
        types = cluster.served()
        accept = self.headers.get("Accept", "")
        if path in ("/healthz", "/livez", "/readyz"):
            self._send(200, b"ok", "text/plain; charset=utf-8")
        elif path == "/version":
            self._send(200, discovery.version())
        elif path in ("/api", "/apis"):
            agg = discovery.wants_aggregated(accept)
            if agg is not None and agg[0]:
                self._send(200, discovery.aggregated(types, path == "/api", agg[0]), agg[1])
            elif path == "/api":
                self._send(200, discovery.core_versions())
            else:
                self._send(200, discovery.group_list(types))
        elif path == "/api/v1":
            self._send(200, discovery.core_resources(types))
        elif len(parts) in (2, 3) and parts[0] == "apis":
            doc = (discovery.group(types, parts[1]) if len(parts) == 2
                   else discovery.resource_list(types, parts[1], parts[2]))
            if doc is None:
                raise not_found_path()
            self._send(200, doc)
        elif path == "/openapi/v2":
            if "protobuf" in accept and "json" not in accept and "*/*" not in accept:
                # kubectl asks v2 as protobuf only; 406 is what kube answers and saves
                # building and sending the whole JSON document on every client-side apply.
                raise ApiError(406, "NotAcceptable", "only application/json is supported")
            self._send(200, openapi.v2(types))
        elif path == "/openapi/v3":
            self._send(200, openapi.v3_index(types))
        elif parts[:2] == ["openapi", "v3"]:
            rest = parts[2:]
            group, version = ("", rest[1]) if rest[:1] == ["api"] and len(rest) == 2 else (
                (rest[1], rest[2]) if rest[:1] == ["apis"] and len(rest) == 3 else ("?", "?"))
            doc = openapi.v3_group_version(types, group, version)
            if doc is None:
                raise not_found_path()
            self._send(200, doc)
        else:
            return False
        return True

    def _target(self, parts: list[str]) -> Target | None:
        if parts[:2] == ["api", "v1"]:
            group, version, rest = "", "v1", parts[2:]
        elif len(parts) >= 3 and parts[0] == "apis":
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            return None
        watch = bool(rest) and rest[0] == "watch"
        rest = rest[1:] if watch else rest
        cluster = self.server.cluster
        namespace = None
        if len(rest) >= 3 and rest[0] == "namespaces":
            rt = cluster.find(group, version, rest[2])
            if rt is not None and rt.namespaced:
                namespace, rest = rest[1], rest[2:]
        if not rest or len(rest) > 3:
            return None
        rt = cluster.find(group, version, rest[0])
        if rt is None:
            return None
        return Target(rt, namespace, rest[1] if len(rest) > 1 else None,
                      rest[2] if len(rest) > 2 else "", watch)

    # -- verbs ---------------------------------------------------------------------------

    def _get(self, t: Target) -> None:
        q = self._query()
        choice = table.output(self.headers.get("Accept"))  # 406 first, as kube negotiates first
        if t.watch or q.get("watch") in ("1", "true", "True"):
            return self._watch(t, q, choice)
        if t.name is None:
            return self._list(t, q, choice)
        obj = self.server.cluster.get(t.rt, t.namespace, t.name)
        if t.subresource and t.subresource not in t.rt.subresources:
            raise not_found_path()
        if t.subresource == "scale":
            scaled = scale.scale_of(obj)
            return self._send(200, table.metadata_of(choice, scaled, "*autoscaling.Scale")
                              if table.is_metadata(choice) else scaled)
        self._send(200, self._one(t, q, choice, obj))

    def _one(self, t: Target, q: dict[str, str], choice: tuple[str, str] | None,
             obj: Obj) -> Obj:
        """One object as negotiated: itself, a Table or its PartialObjectMetadata."""
        if choice is not None and choice[0] == "Table":
            return table.to_table(t.rt, [obj], include_object=q.get("includeObject", "Metadata"))
        if choice is not None:
            return table.metadata_of(choice, obj, table.go_type(t.rt))
        return obj

    def _list(self, t: Target, q: dict[str, str], choice: tuple[str, str] | None) -> None:
        cluster = self.server.cluster
        match_labels = label_selector(q.get("labelSelector"))
        match_fields = field_selector(q.get("fieldSelector"), t.rt.kind)
        objects, rv = cluster.list_objects(t.rt, t.namespace)
        items = [cluster.present(t.rt, o) for o in objects if match_labels(o) and match_fields(o)]
        items, meta = _paginate(items, q, rv)
        if choice is not None and choice[0] == "Table":
            return self._send(200, table.to_table(t.rt, items, include_object=q.get(
                "includeObject", "Metadata"), list_meta=meta))
        if choice is not None:
            return self._send(200, table.metadata_list(choice, items, meta,
                                                       table.go_type(t.rt, of_list=True)))
        if not t.rt.is_custom:  # kube-apiserver's typed lists leave out each item's type
            items = [{k: v for k, v in o.items() if k not in ("apiVersion", "kind")}
                     for o in items]
        self._send(200, {"kind": t.rt.list_kind, "apiVersion": t.rt.group_version,
                         "metadata": meta, "items": items})

    def _watch(self, t: Target, q: dict[str, str], choice: tuple[str, str] | None) -> None:
        labels = label_selector(q.get("labelSelector"))
        fields = field_selector(q.get("fieldSelector"), t.rt.kind)
        name = t.name
        initial_events = sends_initial_events(q)  # 422 for refused options, before headers
        req = WatchRequest(
            t.rt, t.namespace, q.get("resourceVersion"),
            lambda o: labels(o) and fields(o) and (name is None or o["metadata"]["name"] == name),
            bookmarks=q.get("allowWatchBookmarks") in ("true", "1"),
            timeout=float(q["timeoutSeconds"]) if q.get("timeoutSeconds") else None,
            bookmark_interval=Settings.bookmark_interval, initial_events=initial_events)
        events = stream(self.server.cluster, req)
        first = next(events, None)  # raises 400 for a malformed version before headers go out
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache, private")
        # The server closes the connection when the watch ends; saying so keeps a client's
        # pool from reusing it for a request that would then fail (RemoteDisconnected).
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        self._follow(t, q, choice, _chain(first, events))
        self._chunk("")

    def _follow(self, t: Target, q: dict[str, str], choice: tuple[str, str] | None,
                events: Any) -> None:
        for event in events:
            if event is None:
                if self._client_gone():
                    return
                continue
            etype, obj = event
            obj = self._event_object(t, q, choice, etype, obj)
            if obj is None:
                return
            self._chunk(json.dumps({"type": etype, "object": obj}, separators=(",", ":")) + "\n")

    def _event_object(self, t: Target, q: dict[str, str], choice: tuple[str, str] | None,
                      etype: str, obj: Obj) -> Obj | None:
        """What one watch event carries; None ends the stream.

        kube cannot encode a watch event as a PartialObjectMetadataList: its encoder fails and
        the stream ends at the first event (whole objects never go out).
        """
        if etype == "ERROR":
            return obj
        if choice is not None and choice[0] == "PartialObjectMetadataList":
            return None
        if etype == "BOOKMARK":
            return table.to_partial_metadata(obj, choice[1]) if table.is_metadata(choice) else obj
        return self._one(t, q, choice, self.server.cluster.present(t.rt, obj))

    def _chunk(self, text: str) -> None:
        data = text.encode()
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _client_gone(self) -> bool:
        sock: socket.socket = self.connection
        # poll, not select: select refuses a descriptor above 1023 (ValueError), and a
        # 2,000-CRD Provider's protection streams hold more connections than that; each
        # refused check ended its watch, and the resumed streams stalled the server.
        poller = select.poll()
        poller.register(sock, select.POLLIN)
        try:
            readable = poller.poll(0)
            # Peek below TLS (an SSLSocket refuses flags): b"" is the client's FIN.
            return bool(readable) and socket.socket.recv(sock, 1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def _post(self, t: Target) -> None:
        if t.name is not None:
            raise method_not_allowed()
        opts = self._write_options()
        obj = self.server.cluster.create(t.rt, t.namespace, _load_json(self._body()), opts)
        self._send(201, obj, warnings=opts.warnings)

    def _put(self, t: Target) -> None:
        if t.name is None:
            raise method_not_allowed()
        opts = self._write_options()
        body = _load_json(self._body())
        if t.subresource == "scale":
            return self._send(200, self.server.cluster.update_scale(
                t.rt, t.namespace, t.name, lambda _: body, opts))
        obj = self.server.cluster.update(t.rt, t.namespace, t.name, body, opts, t.subresource)
        self._send(200, obj, warnings=opts.warnings)

    def _patch(self, t: Target) -> None:
        if t.name is None:
            raise method_not_allowed()
        opts = self._write_options()
        if t.subresource == "scale":
            return self._send(200, self.server.cluster.patch_scale(
                t.rt, t.namespace, t.name, self._body(), self.headers.get("Content-Type", ""),
                opts))
        obj, created = self.server.cluster.patch(
            t.rt, t.namespace, t.name, self._body(), self.headers.get("Content-Type", ""), opts,
            t.subresource)
        self._send(201 if created else 200, obj, warnings=opts.warnings)

    def _delete(self, t: Target) -> None:
        q = self._query()
        body = self._body()
        options: Obj = _load_json(body) if body.strip() else {}
        if q.get("propagationPolicy"):
            options["propagationPolicy"] = q["propagationPolicy"]
        opts = self._write_options()
        cluster = self.server.cluster
        if t.name is None:
            return self._delete_collection(t, q, options, opts)
        obj, gone_now = cluster.delete(t.rt, t.namespace, t.name, options, opts)
        if gone_now:  # kube-apiserver 1.34 answers a Status for custom resources too
            details = {"name": t.name, "group": t.rt.group, "kind": t.rt.plural,
                       "uid": obj["metadata"]["uid"]}
            if not t.rt.group:
                del details["group"]
            return self._send(200, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                    "status": "Success", "details": details})
        # As kube-apiserver: 202 only for an object left in place whose deletion asked
        # ``orphanDependents: false``; any other deletion still under way answers 200.
        accepted = not gone_now and options.get("orphanDependents") is False
        self._send(202 if accepted else 200, obj)

    def _delete_collection(self, t: Target, q: dict[str, str], options: Obj,
                           opts: WriteOptions) -> None:
        cluster = self.server.cluster
        labels = label_selector(q.get("labelSelector"))
        fields = field_selector(q.get("fieldSelector"), t.rt.kind)
        objects, rv = cluster.list_objects(t.rt, t.namespace)
        deleted = []
        for obj in objects:
            if labels(obj) and fields(obj):
                meta = obj["metadata"]
                try:
                    deleted.append(cluster.delete(t.rt, meta.get("namespace"), meta["name"],
                                                  options, opts)[0])
                except ApiError as exc:
                    if exc.code != 404:
                        raise
        self._send(200, {"kind": t.rt.list_kind, "apiVersion": t.rt.group_version,
                         "metadata": {"resourceVersion": str(rv)}, "items": deleted})

    def _field_manager(self) -> str:
        """The write's field manager: ``fieldManager``, else the User-Agent's product."""
        agent = self.headers.get("User-Agent", "")
        return self._query().get("fieldManager") or agent.split("/")[0][:128] or "unknown"

    def _write_options(self) -> WriteOptions:
        q = self._query()
        dry = q.get("dryRun", "")
        if dry and dry != "All":
            raise bad_request(f'dryRun: Unsupported value: "{dry}": supported values: "All"')
        manager = self._field_manager()
        validation = q.get("fieldValidation") or "Warn"
        if validation not in ("Strict", "Warn", "Ignore"):
            raise bad_request(f"fieldValidation: Unsupported value: \"{validation}\"")
        return WriteOptions(dry_run=bool(dry), field_manager=manager,
                            field_validation=validation,
                            force=q.get("force") in ("true", "1", "True"))


def _handshake(sock: socket.socket) -> bool:
    """Complete a TLS connection's handshake (HTTPS mode) in the handler's thread."""
    if not isinstance(sock, ssl.SSLSocket):
        return True
    try:
        sock.settimeout(10)
        sock.do_handshake()
        sock.settimeout(None)
        return True
    except (OSError, ssl.SSLError):  # a plain-HTTP client, a scanner, a reset: drop it
        return False


def _chain(first: Any, rest: Any) -> Any:
    if first is not None:
        yield first
    else:
        yield None
    yield from rest


def _paginate(items: list[Obj], q: dict[str, str], rv: int) -> tuple[list[Obj], Obj]:
    import base64

    meta: Obj = {"resourceVersion": str(rv)}
    start = 0
    if q.get("continue"):
        try:
            token = json.loads(base64.urlsafe_b64decode(q["continue"].encode()))
            after = (token["ns"], token["name"])
            meta["resourceVersion"] = str(token["rv"])
        except (ValueError, KeyError, TypeError) as exc:
            raise bad_request(f"continue key is not valid: {exc}") from exc
        start = next((i for i, o in enumerate(items) if (
            o["metadata"].get("namespace", ""), o["metadata"]["name"]) > after), len(items))
    limit = int(q.get("limit") or 0)
    page = items[start:start + limit] if limit > 0 else items[start:]
    if limit > 0 and start + limit < len(items):
        last = page[-1]["metadata"]
        token = {"rv": int(meta["resourceVersion"]), "ns": last.get("namespace", ""),
                 "name": last["name"]}
        meta["continue"] = base64.urlsafe_b64encode(json.dumps(token).encode()).decode()
        meta["remainingItemCount"] = len(items) - start - limit
    return page, meta


def _load_json(body: bytes) -> Any:
    from lockwright.devcluster import protobuf
    from lockwright.devcluster.errors import unsupported_media_type

    if protobuf.is_protobuf(body):  # kubectl's typed clients (create namespace ...) send protobuf
        try:
            return protobuf.decode(body)
        except protobuf.ProtobufError as exc:
            raise unsupported_media_type(f"application/vnd.kubernetes.protobuf: {exc}") from exc
    try:
        return orjson.loads(body or b"{}")
    except ValueError:  # not JSON (orjson takes UTF-8 JSON only): YAML, as kube accepts
        import yaml

        try:
            return yaml.load(body, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        except yaml.YAMLError as exc:
            raise bad_request(f"couldn't get version/kind; json parse error: {exc}") from exc


class DevServer(ThreadingHTTPServer):
    """The threaded HTTP server bound to one ``Cluster``."""

    daemon_threads = True
    allow_reuse_address = True
    # The listen backlog (the kernel caps it at net.core.somaxconn). A 2,000-CRD Provider's
    # protection streams connect all at once while a busy server accepts slowly; a
    # connection beyond the backlog waits on the client's SYN retries (1, 3, 7, 15, 31 s).
    # A precaution: no timeout was shown to come from the old 128.
    request_queue_size = 4096

    def __init__(self, address: tuple[str, int], cluster: Cluster,
                 guard: Guard | None = None, tls: ssl.SSLContext | None = None,
                 recorder: shapes.Recorder | None = None) -> None:
        super().__init__(address, Handler)
        self.recorder = recorder  # the request shapes served (--record-shapes); None: off
        self.cluster = cluster
        self.guard = guard  # authentication and RBAC; None allows every request
        self.scheme = "http"
        if tls is not None:  # handshakes happen in the handler threads, not in accept()
            self.socket = tls.wrap_socket(self.socket, server_side=True,
                                          do_handshake_on_connect=False)
            self.scheme = "https"

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        host = host.decode() if isinstance(host, bytes) else host
        return f"{self.scheme}://{host}:{port}"


def serve_in_thread(server: DevServer) -> threading.Thread:
    """Run ``server`` on a daemon thread (used by tests and the dev stack)."""
    thread = threading.Thread(target=server.serve_forever, name="devcluster-http", daemon=True)
    thread.start()
    return thread
