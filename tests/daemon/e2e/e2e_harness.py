"""Processes, ports, HTTP and the documentation's snippets for the mxlimitd end-to-end tests.

Everything runs on loopback: mxlimitd, nginx and caddy on ephemeral ports, each started from a configuration that
is the snippet of docs/deploy-*.md with only the documented example addresses replaced, each stopped by its PID.
"""

import http.client
import json
import math
import os
import re
import shlex
import signal
import socket
import subprocess
import time
from pathlib import Path

SOURCE_DIR = Path(__file__).resolve().parents[3]
DOCS_DIR = SOURCE_DIR / "docs"

# The addresses the deploy docs use as examples; the tests put ephemeral ports in their place.
DOC_MXLIMITD = "127.0.0.1:8089"
DOC_HOMESERVER = "127.0.0.1:8008"
DOC_NGINX_LISTEN = "listen 443 ssl http2;"
DOC_CADDY_SITE = "matrix.example.org {"
DOC_CADDY_ALLOW_RESPONDER = "http://:8090 {"
DOC_BALANCER = "192.0.2.10/32"
DOC_CONFIG = "/etc/mxlimit/mxlimit.yaml"
DOC_LOG_DIR = "/var/log/nginx/"
DOC_FEED_SOCKET = "/run/mxlimitd/feed.sock"
DOC_FEED_UDP = "127.0.0.1:5140"
DOC_ADMIN_SOCKET = "/run/mxlimitd/admin.sock"
DOC_ADMIN_TOKEN = "/etc/mxlimit/admin-token"
DOC_STATE_DIR = "/var/lib/mxlimitd"
# Addresses a test trusts as the front load balancer, and binds its client sockets to.
BALANCER = "127.0.0.9"
# After substitution none of these may be left: a documented address the tests do not know of would otherwise point
# at whatever listens there on this machine.
_LEFTOVER = re.compile(r"127\.0\.0\.1:80(89|08)\b|:8090\b|192\.0\.2\.10|\blisten\s+443\b|/var/log/|/etc/mxlimit/"
                       r"|/run/mxlimitd/|:5140\b|/var/lib/mxlimitd")


class E2EError(AssertionError):
    """A failure of the environment or of a process under test, with the logs that explain it."""


# --- documentation snippets ------------------------------------------------------------------------------------------

_MARKER = re.compile(r"^<!-- e2e: ([a-z0-9-]+) -->\s*$")


def doc_snippets(doc_name):
    """The blocks of docs/DOC_NAME marked `<!-- e2e: NAME -->` on the line before their fence, by NAME."""
    path = DOCS_DIR / doc_name
    lines = path.read_text().split("\n")
    blocks = {}
    i = 0
    while i < len(lines):
        m = _MARKER.match(lines[i])
        if not m:
            i += 1
            continue
        name = m.group(1)
        if name in blocks:
            raise E2EError(f"{path}:{i + 1}: e2e block {name!r} is marked twice")
        if i + 1 >= len(lines) or not lines[i + 1].startswith("```"):
            raise E2EError(f"{path}:{i + 1}: e2e marker {name!r} is not followed by a ``` fence")
        body = []
        j = i + 2
        while j < len(lines) and not lines[j].startswith("```"):
            body.append(lines[j])
            j += 1
        if j == len(lines):
            raise E2EError(f"{path}:{i + 2}: e2e block {name!r} has no closing fence")
        blocks[name] = "\n".join(body) + "\n"
        i = j + 1
    return blocks


def snippet(doc_name, block, required, optional=None):
    """Block BLOCK of docs/DOC_NAME with every key of `required` (which must each occur) and of `optional` replaced.

    Fails when a required example address is gone from the doc (the test would silently test something else) or
    when a documented example address is left after substitution.
    """
    blocks = doc_snippets(doc_name)
    if block not in blocks:
        raise E2EError(f"docs/{doc_name} has no block marked <!-- e2e: {block} -->; the tests run that snippet")
    text = blocks[block]
    for old, new in required.items():
        if old not in text:
            raise E2EError(f"docs/{doc_name} block {block!r} no longer contains {old!r}, which the test replaces; "
                           f"update tests/daemon/e2e/e2e_harness.py with the doc")
        text = text.replace(old, new)
    for old, new in (optional or {}).items():
        text = text.replace(old, new)
    left = _LEFTOVER.search(text)
    if left:
        raise E2EError(f"docs/{doc_name} block {block!r}: {left.group(0)!r} is left after substitution; "
                       f"the test does not know what to put there")
    return text


def feed_socket(workdir, name="feed.sock"):
    """The feed socket's path (or another socket's, `name`) for a test in `workdir`: a short directory of its own,
    since a unix socket's path holds at most 107 bytes and work directories are named after their (long) tests."""
    import hashlib
    import tempfile
    tag = hashlib.sha256(str(workdir).encode()).hexdigest()[:12]
    d = Path(tempfile.gettempdir()) / f"mxlimit-feed-{tag}"
    d.mkdir(mode=0o700, exist_ok=True)
    return str(d / name)


# --- ports and processes ---------------------------------------------------------------------------------------------

def free_port():
    """A TCP port on 127.0.0.1 that was free a moment ago (for proxies that cannot report the port they bound)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port, proc, timeout=15.0, host="127.0.0.1"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise E2EError(f"{proc.name} exited with status {proc.returncode} before listening on {host}:{port}\n"
                           + proc.logs())
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise E2EError(f"{proc.name} does not accept connections on {host}:{port} after {timeout} s\n" + proc.logs())


def _children(pid):
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


class Process:
    """One process under test: output to files in its work directory, stopped by PID (and its children's)."""

    def __init__(self, name, argv, workdir, env=None):
        self.name = name
        self.argv = [str(a) for a in argv]
        self.stdout_path = Path(workdir) / f"{name}.stdout"
        self.stderr_path = Path(workdir) / f"{name}.stderr"
        self.extra_logs = []  # more files worth showing on failure (nginx's error log)
        with open(self.stdout_path, "wb") as out, open(self.stderr_path, "wb") as err:
            self._popen = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                           cwd=workdir, env=env, start_new_session=True)
        self.pid = self._popen.pid
        self.returncode = None

    def poll(self):
        self.returncode = self._popen.poll()
        return self.returncode

    def wait(self, timeout):
        self.returncode = self._popen.wait(timeout=timeout)
        return self.returncode

    def send_signal(self, sig):
        if self.poll() is None:
            os.kill(self.pid, sig)

    def stop(self, sig=signal.SIGTERM, timeout=10.0):
        """Sends `sig` and waits; kills the process and any children it left if it does not exit in time.
        Returns the exit status, or None if it had to be killed. (nginx's master waits for its workers before it
        exits, so a master that exited left none behind.)"""
        if self.poll() is not None:
            return self.returncode
        os.kill(self.pid, sig)
        try:
            return self.wait(timeout)
        except subprocess.TimeoutExpired:
            # Its children (nginx's workers) are read while it still exists, so none of these PIDs can have been
            # reused by an unrelated process yet.
            for pid in _children(self.pid) + [self.pid]:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            self.wait(10)
            return None

    def stdout(self):
        return self.stdout_path.read_text(errors="replace")

    def stderr(self):
        return self.stderr_path.read_text(errors="replace")

    def logs(self, lines=40):
        parts = [f"--- {self.name}: {' '.join(shlex.quote(a) for a in self.argv)}"]
        for path in [self.stdout_path, self.stderr_path] + self.extra_logs:
            try:
                text = Path(path).read_text(errors="replace").splitlines()
            except OSError:
                continue
            parts.append(f"--- {path} (last {lines} lines)")
            parts.extend(text[-lines:])
        return "\n".join(parts)


# --- HTTP ------------------------------------------------------------------------------------------------------------

class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers  # http.client.HTTPMessage: case-insensitive, get_all() for repeats
        self.body = body

    def json(self):
        return json.loads(self.body)

    def __repr__(self):
        return f"<{self.status} {dict(self.headers)} {self.body[:300]!r}>"


def request(port, method, target, headers=None, body=None, source="127.0.0.1", timeout=10.0):
    """One request on a fresh connection from `source` (a loopback address the client socket binds to) to
    127.0.0.1:port. `target` is sent as it is: raw, percent-encoded."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout, source_address=(source, 0))
    try:
        conn.putrequest(method, target, skip_accept_encoding=True)
        for name, value in (headers or {}).items():
            conn.putheader(name, value)
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            conn.putheader("Content-Type", "application/json")
            conn.putheader("Content-Length", str(len(data)))
            conn.endheaders(data)
        else:
            conn.endheaders()
        r = conn.getresponse()
        return Response(r.status, r.headers, r.read())
    finally:
        conn.close()


def assert_matrix_429(resp, *, never=False):
    """`resp` is the Matrix rate-limit answer: 429, JSON, M_LIMIT_EXCEEDED; with a wait (`Retry-After` in whole
    seconds rounded up, `retry_after_ms` > 0) unless `never`, in which case neither is present. Returns
    retry_after_ms (None for never)."""
    assert resp.status == 429, f"expected the Matrix 429, got {resp!r}"
    content_type = resp.headers.get("Content-Type", "")
    assert content_type.split(";")[0].strip() == "application/json", f"429 is not JSON: {resp!r}"
    body = resp.json()
    assert body.get("errcode") == "M_LIMIT_EXCEEDED", body
    assert isinstance(body.get("error"), str) and body["error"], body
    retry_after = resp.headers.get_all("Retry-After") or []
    if never:
        assert "retry_after_ms" not in body, f"a `never` denial carries a wait: {body}"
        assert retry_after == [], f"a `never` denial sends Retry-After: {retry_after}"
        return None
    ms = body.get("retry_after_ms")
    assert isinstance(ms, int) and not isinstance(ms, bool) and ms > 0, f"retry_after_ms must be > 0: {body}"
    assert len(retry_after) == 1 and retry_after[0].isdigit(), f"Retry-After must be one number: {retry_after}"
    assert int(retry_after[0]) == math.ceil(ms / 1000), (
        f"Retry-After {retry_after[0]} is not retry_after_ms {ms} in whole seconds rounded up")
    return ms


# --- the policy file the tests run with ------------------------------------------------------------------------------

def policy_yaml(reload_rate=1000):
    """The tests' policy file: the built-in policies stay on (nothing sets builtin_policies); these operator
    policies make budgets small enough to exhaust within a test. `reload_rate` is e2e-reload's requests per
    second (0 blocks: every request is answered `never`, and a blocked rate takes no burst)."""
    return f"""\
# mxlimitd end-to-end tests (tests/daemon/e2e). Built-in policies stay on.
policies:
  # Per client address: three at once, then one every 10 s.
  - name: e2e-public-rooms
    match: "/_matrix/client/v3/publicRooms"
    methods: [GET]
    scope: ip
    rate_limit: {{ unit: minute, requests_per_unit: 6, burst: 3 }}

  # Per user (per access token with --user-key token-hash): three at once,
  # then one every 2 s. Same pattern as the built-in message-send, which it
  # outranks as an operator policy.
  - name: e2e-send
    match: "/_matrix/client/v3/rooms/{{roomId}}/send/*"
    methods: [PUT, POST]
    scope: user
    share_threshold: true
    rate_limit: {{ unit: minute, requests_per_unit: 30, burst: 3 }}

  # No wait helps: every request is denied `never`.
  - name: e2e-blocked
    match: "/_matrix/client/v3/account/deactivate"
    methods: [POST]
    rate_limit: {{ unit: minute, requests_per_unit: 0 }}

  # Changed by the reload test.
  - name: e2e-reload
    match: "/_matrix/client/v3/user_directory/search"
    methods: [POST]
    rate_limit: {{ unit: second, requests_per_unit: {reload_rate}{f", burst: {reload_rate}" if reload_rate else ""} }}
"""


# --- mxlimitd --------------------------------------------------------------------------------------------------------

class Mxlimitd:
    def __init__(self, proc, port, config):
        self.proc = proc
        self.port = port
        self.config = Path(config)
        self.killed = False
        self.feeds = []
        self.admin = None  # its `admin ADDRESS`, when started with --admin-listen

    @property
    def address(self):
        return f"127.0.0.1:{self.port}"

    def write_config(self, text):
        """Replaces the policy file atomically (a reader never sees half a file)."""
        tmp = self.config.with_suffix(".tmp")
        tmp.write_text(text)
        os.replace(tmp, self.config)

    def reload(self, text):
        self.write_config(text)
        self.proc.send_signal(signal.SIGHUP)

    def kill(self):
        self.killed = True
        self.proc.stop(signal.SIGKILL, timeout=5)

    def get(self, path, headers=None):
        return request(self.port, "GET", path, headers=headers)


def start_mxlimitd(binary, workdir, policy_text, *, doc_block="mxlimitd-command", doc="deploy-nginx.md",
                   listen="127.0.0.1:0"):
    """Starts mxlimitd with the command line of docs/DOC block `doc_block` (listening on port 0, the policy file in
    `workdir`, the documented balancer replaced by BALANCER, a feed socket in `workdir` or a free UDP port) and
    waits for `listening HOST:PORT` (after a `feed ADDRESS` line per feed)."""
    command = snippet(doc, doc_block,
                      required={DOC_MXLIMITD: listen, DOC_CONFIG: "@CONFIG@"},
                      optional={DOC_BALANCER: f"{BALANCER}/32",
                                DOC_FEED_SOCKET: feed_socket(workdir),
                                DOC_FEED_UDP: "127.0.0.1:0",
                                DOC_ADMIN_SOCKET: feed_socket(workdir, "admin.sock"),
                                DOC_ADMIN_TOKEN: str(Path(workdir) / "admin-token"),
                                DOC_STATE_DIR: str(Path(workdir) / "state")})
    argv = shlex.split(command.strip())
    if argv[0] != "mxlimitd":
        raise E2EError(f"docs/deploy-nginx.md block {doc_block!r} does not start with `mxlimitd`: {command!r}")
    config = Path(workdir) / "mxlimit.yaml"
    config.write_text(policy_text)
    argv = [binary] + [str(config) if a == "@CONFIG@" else a for a in argv[1:]]
    proc = Process("mxlimitd", argv, workdir)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        out = proc.stdout()
        if "listening" in out and out.endswith("\n") or proc.poll() is not None:
            break
        time.sleep(0.02)
    out = proc.stdout()
    m = re.fullmatch(r"((?:feed \S+\n)*)(admin \S+\n)?listening 127\.0\.0\.1:(\d+)\n", out)
    if not m:
        status = proc.poll()
        if status is None:
            proc.stop()
        raise E2EError(f"mxlimitd did not print `feed ADDRESS` per feed, `admin ADDRESS` with --admin-listen, then "
                       f"one line `listening 127.0.0.1:PORT` "
                       f"(exit status {status}); stdout: {out!r}\n" + proc.logs())
    daemon = Mxlimitd(proc, int(m.group(3)), config)
    daemon.feeds = [line.split(" ", 1)[1] for line in m.group(1).splitlines()]
    if m.group(2):
        daemon.admin = m.group(2).split(" ", 1)[1].strip()
    return daemon


# --- nginx -----------------------------------------------------------------------------------------------------------

class Proxy:
    def __init__(self, name, proc, port, workdir):
        self.name = name
        self.proc = proc
        self.port = port
        self.workdir = Path(workdir)

    def request(self, method, target, **kwargs):
        return request(self.port, method, target, **kwargs)


def nginx_conf(workdir, server_block, mxlimitd_address, homeserver_port, listen_port):
    """A complete nginx.conf: this test's process settings around the doc's `http` and `server` snippets (and the
    feed's `http` snippet for the feed's server block, whose socket is `workdir`/feed.sock)."""
    workdir = Path(workdir)
    http_block = snippet("deploy-nginx.md", "nginx-http", required={DOC_MXLIMITD: mxlimitd_address})
    if server_block == "nginx-server-feed":
        http_block += "\n" + snippet("deploy-nginx.md", "nginx-http-feed", required={})
    server = snippet("deploy-nginx.md", server_block, required={
        DOC_NGINX_LISTEN: f"listen 127.0.0.1:{listen_port};",
        DOC_HOMESERVER: f"127.0.0.1:{homeserver_port}",
        DOC_LOG_DIR: f"{workdir}/",
    }, optional={DOC_FEED_SOCKET: feed_socket(workdir)})
    # As root, the workers would switch to `nobody`, who cannot enter a private temporary directory: keep them
    # as the user running the test. Otherwise `user` only draws a warning, so leave it out.
    user = ""
    if os.geteuid() == 0:
        import grp
        import pwd
        user = f"user {pwd.getpwuid(os.geteuid()).pw_name} {grp.getgrgid(os.getegid()).gr_name};\n"
    indent = lambda text: "".join("    " + line + "\n" if line else "\n" for line in text.splitlines())
    return (
        f"# Generated by tests/daemon/e2e from docs/deploy-nginx.md ({server_block}).\n"
        f"{user}"
        f"worker_processes 1;\n"
        f"pid {workdir}/nginx.pid;\n"
        f"error_log {workdir}/nginx-error.log info;\n"
        f"events {{ worker_connections 256; }}\n"
        f"http {{\n"
        f"    access_log {workdir}/nginx-access-default.log;\n"
        f"    client_body_temp_path {workdir}/nginx-client-body;\n"
        f"    proxy_temp_path {workdir}/nginx-proxy;\n"
        f"    fastcgi_temp_path {workdir}/nginx-fastcgi;\n"
        f"    uwsgi_temp_path {workdir}/nginx-uwsgi;\n"
        f"    scgi_temp_path {workdir}/nginx-scgi;\n"
        f"\n{indent(http_block)}\n{indent(server)}"
        f"}}\n")


def _port_race(start):
    """Calls start() again (up to 3 times) when the proxy lost a port picked by free_port() to another process."""
    for attempt in range(3):
        try:
            return start()
        except E2EError as e:
            if "in use" not in str(e) or attempt == 2:
                raise


def start_nginx(nginx, workdir, server_block, mxlimitd_address, homeserver_port):
    return _port_race(lambda: _start_nginx(nginx, workdir, server_block, mxlimitd_address, homeserver_port))


def _start_nginx(nginx, workdir, server_block, mxlimitd_address, homeserver_port):
    workdir = Path(workdir)
    port = free_port()
    conf = workdir / "nginx.conf"
    conf.write_text(nginx_conf(workdir, server_block, mxlimitd_address, homeserver_port, port))
    proc = Process("nginx", [nginx, "-e", workdir / "nginx-error.log", "-p", workdir, "-c", conf,
                             "-g", "daemon off;"], workdir)
    proc.extra_logs = [workdir / "nginx-error.log", conf]
    try:
        wait_for_port(port, proc)
    except BaseException:
        proc.stop()
        raise
    return Proxy("nginx", proc, port, workdir)


# --- caddy -----------------------------------------------------------------------------------------------------------

def start_caddy(caddy, workdir, site_block, mxlimitd_address, homeserver_port, feed_udp=None):
    """Caddy with this test's global options in front of the doc's site block: no admin endpoint, no automatic
    HTTPS, all state under `workdir`; `feed_udp` ("127.0.0.1:PORT") replaces the doc's feed address."""
    return _port_race(lambda: _start_caddy(caddy, workdir, site_block, mxlimitd_address, homeserver_port,
                                           feed_udp))


def _start_caddy(caddy, workdir, site_block, mxlimitd_address, homeserver_port, feed_udp=None):
    workdir = Path(workdir)
    port = free_port()
    allow_port = free_port()
    site = snippet("deploy-caddy.md", site_block, required={
        DOC_CADDY_SITE: f"http://127.0.0.1:{port} {{",
        DOC_MXLIMITD: mxlimitd_address,
        DOC_HOMESERVER: f"127.0.0.1:{homeserver_port}",
    }, optional={
        DOC_CADDY_ALLOW_RESPONDER: f"http://:{allow_port} {{",
        DOC_BALANCER: f"{BALANCER}/32",
        "127.0.0.1:8090": f"127.0.0.1:{allow_port}",
        **({DOC_FEED_UDP: feed_udp} if feed_udp else {}),
    })
    caddyfile = workdir / "Caddyfile"
    caddyfile.write_text(
        f"# Generated by tests/daemon/e2e from docs/deploy-caddy.md ({site_block}).\n"
        "{\n"
        "\tadmin off\n"
        "\tauto_https off\n"
        f"\tstorage file_system {workdir}/caddy-storage\n"
        "\tdefault_bind 127.0.0.1\n"
        "}\n\n" + site)
    env = dict(os.environ, HOME=str(workdir), XDG_CONFIG_HOME=str(workdir / "caddy-config"),
               XDG_DATA_HOME=str(workdir / "caddy-data"))
    proc = Process("caddy", [caddy, "run", "--config", caddyfile, "--adapter", "caddyfile"], workdir, env=env)
    proc.extra_logs = [caddyfile]
    try:
        wait_for_port(port, proc)
        if f":{allow_port}" in site:
            wait_for_port(allow_port, proc)
    except BaseException:
        proc.stop()
        raise
    return Proxy("caddy", proc, port, workdir)


def wait_until(predicate, timeout, what):
    """Polls `predicate` until it returns something true, which is returned; fails after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.02)
