"""mxlimitd's admin API (docs/mxlimitd.md, "Tiers and the admin API") on its own unix socket, with the built-in
policies on, driven over HTTP and through `mxlimit admin`, with nginx in front as docs/deploy-nginx.md has it."""

import http.client
import json
import os
import socket
import stat
import subprocess
import time

import pytest

import e2e_harness as h

TOKEN = "e2e-admin-token-0123456789abcdef"
LOGIN = "/_matrix/client/v3/login"
API = "/_mxlimit/admin/v1"


def tiered_policy():
    return h.policy_yaml() + """
tiers:
  bridge: { scale: 10 }
  suspect: { scale: 0.1 }
"""


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout=10.0):
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self._path)


def admin(daemon, method, target, body=None, token=TOKEN, raw_body=None):
    """One admin API request on the daemon's unix socket; returns (status, parsed JSON body)."""
    assert daemon.admin.startswith("unix:"), daemon.admin
    conn = _UnixConnection(daemon.admin[len("unix:"):])
    try:
        headers = {}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        data = raw_body if raw_body is not None else (json.dumps(body).encode() if body is not None else None)
        conn.request(method, target, body=data, headers=headers)
        r = conn.getresponse()
        payload = r.read()
        assert r.getheader("Content-Type") == "application/json", (r.status, payload)
        return r.status, json.loads(payload)
    finally:
        conn.close()


def cli(daemon, workdir, *args):
    binary = os.environ.get("MXLIMIT_BIN")
    if not binary:
        pytest.fail("MXLIMIT_BIN is not set: run through ctest (daemon.e2e.admin)", pytrace=False)
    return subprocess.run([binary, "admin", *args, "--address", daemon.admin, "--token-file",
                           str(workdir / "admin-token")], capture_output=True, text=True, timeout=30)


@pytest.fixture
def admin_daemon(mxlimitd, workdir):
    (workdir / "admin-token").write_text(TOKEN + "\n")
    return mxlimitd(tiered_policy(), doc_block="mxlimitd-admin-command", doc="mxlimitd.md")


@pytest.fixture
def nginx(nginx_bin, workdir, procs, stub):
    def start(daemon):
        proxy = h.start_nginx(nginx_bin, workdir, "nginx-server-fail-closed", daemon.address, stub.port)
        procs.append(proxy)
        return proxy

    return start


def logins_allowed(proxy, source, limit=200):
    """Logins from `source` through the proxy before the first 429."""
    for n in range(limit):
        r = proxy.request("POST", LOGIN, body={"type": "m.login.password"}, source=source)
        if r.status == 429:
            h.assert_matrix_429(r)
            return n
        assert r.status == 200, r
    return limit


def test_the_socket_is_the_owners_alone_and_every_call_needs_the_token(admin_daemon, workdir):
    path = admin_daemon.admin[len("unix:"):]
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    status, body = admin(admin_daemon, "GET", f"{API}/tiers", token=None)
    assert (status, body["errcode"]) == (401, "M_MISSING_TOKEN"), body
    for wrong in ["x" * len(TOKEN), TOKEN[:-1], TOKEN + "0", "", TOKEN.upper()]:
        status, body = admin(admin_daemon, "GET", f"{API}/tiers", token=wrong)
        assert (status, body["errcode"]) == (401, "M_UNKNOWN_TOKEN"), (wrong, body)
    # A change without the token changes nothing.
    status, _ = admin(admin_daemon, "PUT", f"{API}/tiers/networks/10.0.0.0%2F8", {"tier": "bridge"}, token="nope")
    assert status == 401
    status, body = admin(admin_daemon, "GET", f"{API}/tiers")
    assert status == 200 and body["assignments"] == [], body
    assert 'msg="admin request refused"' in admin_daemon.proc.stderr()


def test_the_auth_listener_and_the_proxy_never_reach_the_api(admin_daemon, workdir, nginx, stub):
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    # mxlimitd's own --listen: no admin path there, token or not.
    r = h.request(admin_daemon.port, "GET", f"{API}/tiers", headers=bearer)
    assert r.status == 404, r
    r = h.request(admin_daemon.port, "PUT", f"{API}/tiers/networks/0.0.0.0%2F0", headers=bearer,
                  body={"tier": "bridge"})
    assert r.status == 404, r
    # Through the documented nginx config: the path goes to the homeserver (after the check), never to the API.
    proxy = nginx(admin_daemon)
    r = proxy.request("PUT", f"{API}/tiers/networks/0.0.0.0%2F0", headers=bearer, body={"tier": "bridge"})
    assert b"assignment" not in r.body and b"subject" not in r.body, r
    status, body = admin(admin_daemon, "GET", f"{API}/tiers")
    assert status == 200 and body["assignments"] == [], body


def test_reset_unblocks_a_denied_client_now(admin_daemon, workdir, nginx):
    proxy = nginx(admin_daemon)
    # The built-in login-per-ip: 5 at once.
    assert logins_allowed(proxy, "127.0.0.5") == 5
    assert logins_allowed(proxy, "127.0.0.7") == 5
    result = cli(admin_daemon, workdir, "reset", "127.0.0.5")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("reset 127.0.0.5: ") and result.stdout.endswith(" buckets\n"), result.stdout
    assert int(result.stdout.split(": ")[1].split()[0]) >= 1, result.stdout
    assert logins_allowed(proxy, "127.0.0.5") == 5
    assert logins_allowed(proxy, "127.0.0.7") == 0  # someone else's buckets are not touched
    assert 'msg="buckets reset" subject=127.0.0.5' in admin_daemon.proc.stderr()


def test_a_runtime_tier_scales_a_network_and_clearing_keeps_its_state(admin_daemon, workdir, nginx):
    proxy = nginx(admin_daemon)
    result = cli(admin_daemon, workdir, "set", "127.0.0.6", "bridge")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "network 127.0.0.6/32 bridge runtime expires_in=never\n", result.stdout
    # login-per-ip at scale 10: 50 at once (one more may refill while the test runs: 2590 a day).
    allowed = logins_allowed(proxy, "127.0.0.6")
    assert 50 <= allowed <= 51, allowed
    listed = cli(admin_daemon, workdir, "list")
    assert listed.returncode == 0, listed.stderr
    assert "network 127.0.0.6/32 bridge runtime expires_in=never\n" in listed.stdout, listed.stdout
    result = cli(admin_daemon, workdir, "clear", "127.0.0.6")
    assert (result.returncode, result.stdout) == (0, "cleared 127.0.0.6\n"), result.stderr
    # Back to the plain tier, the drained bucket stays drained: no fresh burst from switching.
    assert logins_allowed(proxy, "127.0.0.6") == 0
    # A suspect at a tenth of login-per-ip's burst of 5 gets none at once... but one: burst 0.5 rounds to 1.
    status, body = admin(admin_daemon, "PUT", f"{API}/tiers/networks/127.0.0.8", {"tier": "suspect"})
    assert status == 200, body
    assert logins_allowed(proxy, "127.0.0.8") < 5
    log = admin_daemon.proc.stderr()
    assert 'msg="tier set" subject=127.0.0.6/32 tier=bridge expires_in_ms=never peer=unix' in log
    assert 'msg="tier cleared" subject=127.0.0.6/32 peer=unix' in log


def test_the_cli_sets_an_assignment_that_expires(admin_daemon, workdir):
    # Long enough for the next call to come before it ends on a loaded machine.
    result = cli(admin_daemon, workdir, "set", "@bot:example.org", "bridge", "--expires-in", "2000ms")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "user @bot:example.org bridge runtime expires_in=2000ms\n", result.stdout
    listed = cli(admin_daemon, workdir, "list", "--json")
    assert json.loads(listed.stdout)["assignments"][0]["subject"] == "@bot:example.org", listed.stdout
    time.sleep(2.1)
    assert cli(admin_daemon, workdir, "list").stdout == ""
    bad = cli(admin_daemon, workdir, "set", "@bot:example.org", "bridge", "--expires-in", "soon")
    assert bad.returncode == 2 and "--expires-in soon" in bad.stderr, bad
    (workdir / "wrong-token").write_text("0123456789abcdef-not-the-token\n")
    for token_file, message in [("wrong-token", "M_UNKNOWN_TOKEN: the admin token is not recognised (HTTP 401)"),
                                ("mxlimit.yaml", "not a token")]:
        wrong = subprocess.run([os.environ["MXLIMIT_BIN"], "admin", "list", "--address", admin_daemon.admin,
                                "--token-file", str(workdir / token_file)], capture_output=True, text=True)
        assert wrong.returncode == 1 and message in wrong.stderr, wrong


def test_assignments_expire_and_bad_input_leaves_the_api_working(admin_daemon, workdir):
    status, body = admin(admin_daemon, "PUT", f"{API}/tiers/users/%40bridge%3Aexample.org",
                         {"tier": "bridge", "expires_in_ms": 300})
    assert status == 200, body
    assert body["subject"] == "@bridge:example.org" and body["expires_in_ms"] == 300, body
    bad = [
        ("PUT", f"{API}/tiers/users/alice", {"tier": "bridge"}, 400, "M_INVALID_PARAM"),
        ("PUT", f"{API}/tiers/users/%40a%3Ab", {"tier": "gold"}, 400, "M_INVALID_PARAM"),
        ("PUT", f"{API}/tiers/users/%40a%3Ab", {"tier": "bridge", "expires_in_ms": 0}, 400, "M_INVALID_PARAM"),
        ("PUT", f"{API}/tiers/users/%40a%3Ab", {"tier": "bridge", "expires_in_ms": 10 ** 15}, 400,
         "M_INVALID_PARAM"),
        ("PUT", f"{API}/tiers/users/%40a%3Ab", {"tier": "bridge", "extra": 1}, 400, "M_INVALID_PARAM"),
        ("PUT", f"{API}/tiers/networks/10.0.0.0%2F33", {"tier": "bridge"}, 400, "M_INVALID_PARAM"),
        ("PUT", f"{API}/tiers/networks/%40a%3Ab", {"tier": "bridge"}, 400, "M_INVALID_PARAM"),
        ("PUT", f"{API}/tiers/users/%ZZ", {"tier": "bridge"}, 400, "M_INVALID_PARAM"),
        ("DELETE", f"{API}/tiers/users/%40nobody%3Aexample.org", None, 404, "M_NOT_FOUND"),
        ("POST", f"{API}/reset", {"user_id": "192.0.2.1"}, 400, "M_INVALID_PARAM"),
        ("POST", f"{API}/reset", {"user_id": "@a:b", "address": "192.0.2.1"}, 400, "M_INVALID_PARAM"),
        ("GET", f"{API}/reset", None, 405, "M_UNRECOGNIZED"),
        ("GET", f"{API}/nothing", None, 404, "M_UNRECOGNIZED"),
    ]
    for method, target, body, want_status, want_code in bad:
        status, answer = admin(admin_daemon, method, target, body)
        assert (status, answer.get("errcode")) == (want_status, want_code), (method, target, answer)
    for raw in [b"{", b"[]", b'{"tier": {"x": 1}}', b'{"tier": "bridge", "tier": "suspect"}', b"\xff" * 100]:
        status, answer = admin(admin_daemon, "PUT", f"{API}/tiers/users/%40a%3Ab", raw_body=raw)
        assert (status, answer["errcode"]) == (400, "M_NOT_JSON"), (raw, answer)
    status, answer = admin(admin_daemon, "PUT", f"{API}/tiers/users/%40a%3Ab", raw_body=b" " * 5000)
    assert (status, answer["errcode"]) == (413, "M_TOO_LARGE"), answer
    long_user = "%40" + "a" * 64 * 1024 + "%3Aexample.org"
    status, answer = admin(admin_daemon, "PUT", f"{API}/tiers/users/{long_user}", {"tier": "bridge"})
    assert status == 431, answer
    # A stalled connection is dropped by its deadline; a later request is served.
    stalled = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stalled.connect(admin_daemon.admin[len("unix:"):])
    stalled.sendall(b"GET /_mxlimit/admin/v1/tiers HTTP/1.1\r\n")
    time.sleep(0.4)  # past the 300 ms expiry above
    status, body = admin(admin_daemon, "GET", f"{API}/tiers")
    stalled.close()
    assert status == 200 and body["assignments"] == [], body
    status, body = admin(admin_daemon, "PUT", f"{API}/tiers/users/%40a%3Ab", {"tier": "bridge"})
    assert status == 200, body

