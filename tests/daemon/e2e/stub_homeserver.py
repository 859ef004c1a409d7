"""A stand-in homeserver for the end-to-end tests: Python standard library only.

It answers every Matrix path with 200 and a JSON body, and records each request it receives, so a test can assert
that a request the limiter denied never reached it. It runs in the test's own process, on 127.0.0.1 and an
ephemeral port, one thread per connection.

  - `PUT .../rooms/{roomId}/send/{eventType}/{txnId}` answers `{"event_id": "$..."}` (the same ID for the same
    room and transaction, as a homeserver's idempotent send does);
  - `GET /_matrix/client/versions` answers a versions list;
  - `GET /_matrix/client/v3/account/whoami` maps the tokens in `tokens` to user IDs and answers 401
    `M_UNKNOWN_TOKEN` for any other;
  - `responses[path]` overrides the answer for one raw path (a homeserver's own 403, say);
  - `delay` (seconds) holds every answer back, for a slow homeserver;
  - `POST .../login` answers 403 `M_FORBIDDEN` to the password "wrong", 200 with a token to any other;
  - `GET .../media/download/{server}/{N}` (and thumbnail) answers N bytes of media;
  - `sync_gate`, when set to a threading.Event, holds every /sync until it is set;
  - `hold(predicate)` holds every request for which `predicate(ReceivedRequest)` is true until the Event it returns
    is set (one client's login in flight, say, while others' pass).
"""

import hashlib
import http.server
import json
import re
import threading
import time
import urllib.parse

_SEND = re.compile(r"^/_matrix/client/(?:v3|r0)/rooms/([^/]+)/send/([^/]+)/([^/?]+)$")
_WHOAMI = re.compile(r"^/_matrix/client/(?:v3|r0)/account/whoami$")
_LOGIN = re.compile(r"^/_matrix/client/(?:v3|r0)/login$")
_MEDIA = re.compile(r"^/_matrix/(?:client/v1/media|media/v3)/(?:download|thumbnail)/[^/]+/(\d+)$")
_SYNC = re.compile(r"^/_matrix/client/(?:v3|r0)/sync$")
_CHUNK = b"\0" * (1 << 20)


class ReceivedRequest:
    def __init__(self, method, target, headers, body, peer):
        self.method = method
        self.target = target  # as received: raw, percent-encoded, with the query
        self.path = target.split("?", 1)[0]
        self.headers = headers
        self.body = body
        self.peer = peer
        self.status = None  # what the stub answered
        self.response = None

    def __repr__(self):
        return f"{self.method} {self.target}"


class StubHomeserver:
    def __init__(self):
        self.tokens = {}  # access token -> user ID, for whoami
        self.responses = {}  # raw path -> (status, JSON-able body)
        self.delay = 0.0
        self.sync_gate = None
        self._holds = []  # (predicate, threading.Event)
        self._lock = threading.Lock()
        self._received = []
        stub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _read_body(self):
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    chunks = []
                    while True:
                        size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                        if size == 0:
                            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                                pass
                            return b"".join(chunks)
                        chunks.append(self.rfile.read(size))
                        self.rfile.readline()
                length = int(self.headers.get("Content-Length") or 0)
                return self.rfile.read(length) if length else b""

            def _answer(self):
                body = self._read_body()
                received = ReceivedRequest(self.command, self.path, self.headers, body, self.client_address[0])
                with stub._lock:
                    stub._received.append(received)
                if stub.delay:
                    time.sleep(stub.delay)
                gate = stub.sync_gate
                if gate is not None and _SYNC.match(received.path):
                    gate.wait(30)
                with stub._lock:
                    holds = list(stub._holds)
                for predicate, event in holds:
                    if predicate(received):
                        event.wait(30)
                media = _MEDIA.match(received.path)
                if media and self.command == "GET":
                    self._send_media(int(media.group(1)))
                    received.status = 200
                    return
                status, payload = stub._route(received)
                received.status, received.response = status, payload
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            def _send_media(self, size):
                self.send_response(200)
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Content-Length", str(size))
                self.end_headers()
                while size > 0:
                    n = min(size, len(_CHUNK))
                    self.wfile.write(_CHUNK[:n])
                    size -= n

            do_GET = do_PUT = do_POST = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = _answer

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, name="stub-homeserver", daemon=True)
        self._thread.start()

    def _route(self, req):
        if req.path in self.responses:
            return self.responses[req.path]
        if req.method == "GET" and req.path == "/_matrix/client/versions":
            return 200, {"versions": ["r0.6.1", "v1.1", "v1.5", "v1.10", "v1.11"], "unstable_features": {}}
        if req.method == "GET" and _WHOAMI.match(req.path):
            token = None
            auth = req.headers.get("Authorization", "")
            if auth.startswith("Bearer "):
                token = auth[len("Bearer "):]
            else:
                token = urllib.parse.parse_qs(urllib.parse.urlsplit(req.target).query).get("access_token", [None])[0]
            if token in self.tokens:
                return 200, {"user_id": self.tokens[token], "device_id": "STUBDEVICE"}
            return 401, {"errcode": "M_UNKNOWN_TOKEN", "error": "Unknown access token"}
        if req.method == "POST" and _LOGIN.match(req.path):
            try:
                password = json.loads(req.body or b"{}").get("password")
            except ValueError:
                password = None
            if password == "wrong":
                return 403, {"errcode": "M_FORBIDDEN", "error": "Invalid username or password"}
            return 200, {"user_id": "@alice:example.org", "access_token": "stub_token", "device_id": "STUB"}
        send = _SEND.match(req.path)
        if send and req.method == "PUT":
            room, txn = send.group(1), send.group(3)
            return 200, {"event_id": "$" + hashlib.sha256(f"{room}/{txn}".encode()).hexdigest()[:24]}
        return 200, {}

    def hold(self, predicate):
        """Holds the answer to every request matching `predicate` (30 s at most) until the returned Event is set."""
        event = threading.Event()
        with self._lock:
            self._holds.append((predicate, event))
        return event

    @property
    def received(self):
        with self._lock:
            return list(self._received)

    def count(self, method=None, path=None, path_prefix=None):
        """How many requests arrived, optionally only those with this method and (raw) path or path prefix."""
        return sum(
            1
            for r in self.received
            if (method is None or r.method == method)
            and (path is None or r.path == path)
            and (path_prefix is None or r.path.startswith(path_prefix))
        )

    def close(self):
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
