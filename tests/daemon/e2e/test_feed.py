"""The completion feed through real nginx and Caddy, configured with the feed snippets of docs/deploy-nginx.md and
docs/deploy-caddy.md, with the built-in policies on: failed logins, media bytes, an upload quota, in-flight leases
that end at completion or by their lease time, a feed that is lost or flooded, and a client's forged X-Request-Id."""

import os
import re
import secrets
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

import e2e_harness as h

LOGIN = "/_matrix/client/v3/login"
MEDIA = "/_matrix/client/v1/media/download/example.org/{}"
UPLOAD = "/_matrix/media/v3/upload"
# An initial sync (no `since`): the built-in initial-sync-in-flight allows two per user.
INITIAL_SYNC = "/_matrix/client/v3/sync"
MIB = 1 << 20

# The test's policies and an upload quota in the shape of Synapse's media_upload_limits: 1 MiB an hour per user.
QUOTA = """
  - name: e2e-upload-quota
    match: "/_matrix/media/v3/upload"
    methods: [POST]
    scope: user
    layer: quota
    rate_limit: { unit: hour, requests_per_unit: 1048576, burst: 1048576 }
    cost: request_bytes
    errcode: M_USER_LIMIT_EXCEEDED
    info_uri: https://example.org/quota
"""


def feed_lines(daemon, result):
    m = re.search(r'^mxlimitd_feed_lines_total\{result="%s"\} (\d+)$' % result,
                  daemon.get("/_mxlimit/metrics").body.decode(), re.M)
    assert m, "mxlimitd reports no feed metrics"
    return int(m.group(1))


def lines_handled(daemon):
    """Feed lines mxlimitd has handled, whatever became of them."""
    text = daemon.get("/_mxlimit/metrics").body.decode()
    return sum(int(n) for n in re.findall(r'^mxlimitd_feed_lines_total\{result="[a-z_]+"\} (\d+)$', text, re.M))


def await_settled(daemon, n):
    """The proxy logs a request after answering it: wait until mxlimitd has settled `n` in all."""
    h.wait_until(lambda: feed_lines(daemon, "settled") >= n, 10, f"{n} settled completions")


def rss_kib(pid):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


_SF_ITEM = re.compile(r'"((?:[^"\\\x00-\x1f\x7f]|\\["\\])*)"((?:;[a-z*][a-z0-9_.*-]*(?:=(?:-?\d{1,15}|"[^"]*"))?)*)')


def parse_sf_list(value):
    """A Structured Fields List (RFC 9651) of String items with parameters, strictly: [(name, {key: value})]."""
    items = []
    rest = value.strip(" ")
    while True:
        m = _SF_ITEM.match(rest)
        assert m, f"not an sf-list of strings: {value!r}"
        params = {}
        for p in re.findall(r';([a-z*][a-z0-9_.*-]*)(?:=(-?\d+|"[^"]*"))?', m.group(2)):
            params[p[0]] = int(p[1]) if p[1] and p[1][0] != '"' else p[1].strip('"')
        items.append((m.group(1), params))
        rest = rest[m.end():].lstrip(" \t")
        if not rest:
            return items
        assert rest[0] == ",", f"junk after an item: {value!r}"
        rest = rest[1:].lstrip(" \t")


def bearer(token):
    return {"Authorization": f"Bearer {token}"}


def feed_gauge(daemon, name):
    m = re.search(r"^%s (\d+)$" % name, daemon.get("/_mxlimit/metrics").body.decode(), re.M)
    assert m, f"mxlimitd reports no {name}"
    return int(m.group(1))


# The ids each proxy makes: nginx's $request_id, Caddy's {http.request.uuid}.
PROXY_ID = {"nginx": re.compile(r"[0-9a-f]{32}"),
            "caddy": re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")}


class CheckTap:
    """Stands between the proxy and mxlimitd on the checks: a TCP relay whose address the proxy is given in place of
    mxlimitd's. It records the head of every check the proxy sends (what mxlimitd decides by, X-Request-Id
    included) before passing it on, and passes mxlimitd's answers back unchanged."""

    def __init__(self):
        self.target = None  # mxlimitd's "127.0.0.1:PORT", set before the proxy starts
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self.address = f"127.0.0.1:{self._listener.getsockname()[1]}"
        self._lock = threading.Lock()
        self._checks = []
        threading.Thread(target=self._accept, daemon=True).start()

    def checks(self):
        """Every check so far: {header name (lower case): [values]}, in the order the proxy sent them."""
        with self._lock:
            return list(self._checks)

    def _accept(self):
        while True:
            try:
                proxy_side, _ = self._listener.accept()
            except OSError:
                return  # closed
            host, port = self.target.rsplit(":", 1)
            try:
                # From 127.0.0.1, which mxlimitd trusts as the proxy, as the proxy itself would connect.
                daemon_side = socket.create_connection((host, int(port)), source_address=("127.0.0.1", 0))
            except OSError:
                proxy_side.close()  # as mxlimitd being down would look to the proxy
                continue
            done = []
            threading.Thread(target=self._pump, args=(proxy_side, daemon_side, done, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(daemon_side, proxy_side, done, False), daemon=True).start()

    def _pump(self, src, dst, done, record):
        buf = b""
        try:
            while data := src.recv(65536):
                if record:
                    buf = self._record(buf + data)
                dst.sendall(data)
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        with self._lock:
            done.append(record)
            last = len(done) == 2
        if last:
            src.close()
            dst.close()

    def _record(self, buf):
        """Records each complete request head in `buf`; returns what is left. Checks carry no body."""
        while (end := buf.find(b"\r\n\r\n")) >= 0:
            head, buf = buf[:end].decode("latin-1").split("\r\n"), buf[end + 4:]
            fields = {}
            for line in head[1:]:
                name, _, value = line.partition(":")
                fields.setdefault(name.strip().lower(), []).append(value.strip())
            with self._lock:
                self._checks.append(fields)
        return buf

    def close(self):
        self._listener.close()


class FeedScenarios:
    """Each test starts mxlimitd with the feed and the proxy with the feed's snippet (`start_feed`)."""

    def test_failed_logins_limit_the_address_and_not_others(self, start_feed, stub):
        daemon, proxy = start_feed()
        for i in range(3):
            r = proxy.request("POST", LOGIN, body={"type": "m.login.password", "password": "wrong"},
                              source="127.0.0.3")
            # The homeserver's own answer reaches the client.
            assert r.status == 403, r
        await_settled(daemon, 3)
        denied = proxy.request("POST", LOGIN, body={"type": "m.login.password", "password": "right"},
                               source="127.0.0.3")
        ms = h.assert_matrix_429(denied)
        # 0.17/s: a failed login is paid back in about 6 s.
        assert 0 < ms <= 6000, ms
        other = proxy.request("POST", LOGIN, body={"type": "m.login.password", "password": "right"},
                              source="127.0.0.4")
        assert other.status == 200, other
        assert stub.count("POST", LOGIN) == 4

    def test_downloads_are_limited_at_the_burst_and_recover_at_the_rate(self, start_feed, stub):
        daemon, proxy = start_feed()
        before = feed_lines(daemon, "settled")
        # 600 MiB: four downloads fit the 500 MiB burst, the fifth finds 20 MiB of room and is charged its 120.
        for i in range(5):
            r = proxy.request("GET", MEDIA.format(120 * MIB), source="127.0.0.5", timeout=60)
            assert r.status == 200 and len(r.body) == 120 * MIB, r.status
            await_settled(daemon, before + i + 1)
        denied = proxy.request("GET", MEDIA.format(MIB), source="127.0.0.5")
        h.assert_matrix_429(denied)
        # 100 MiB over the burst, paid back at 87 KiB/s (less what was paid back while the downloads ran).
        wait = int(denied.headers["Retry-After"])
        assert 100 * MIB / 89088 - 20 <= wait <= 100 * MIB / 89088 + 1, wait
        assert proxy.request("GET", MEDIA.format(MIB), source="127.0.0.6").status == 200

    def test_an_upload_quota_answers_user_limit_exceeded(self, start_feed, stub):
        daemon, proxy = start_feed(h.policy_yaml() + QUOTA)
        body = b"\0" * (600 * 1024)
        assert proxy.request("POST", UPLOAD, headers=bearer("uploader"), body=body).status == 200
        denied = proxy.request("POST", UPLOAD, headers=bearer("uploader"), body=body)
        assert denied.status == 429, denied
        payload = denied.json()
        assert payload["errcode"] == "M_USER_LIMIT_EXCEEDED", payload
        assert payload["info_uri"] == "https://example.org/quota", payload
        assert int(denied.headers["Retry-After"]) > 0
        assert proxy.request("POST", UPLOAD, headers=bearer("someone-else"), body=body).status == 200
        assert stub.count("POST", UPLOAD) == 2

    def test_an_initial_sync_lease_ends_at_its_completion(self, start_feed, stub):
        daemon, proxy = start_feed()
        gate = threading.Event()
        stub.sync_gate = gate
        results = []

        def sync():
            results.append(proxy.request("GET", INITIAL_SYNC, headers=bearer("syncer"), timeout=30).status)

        held = [threading.Thread(target=sync) for _ in range(2)]
        for t in held:
            t.start()
        try:
            h.wait_until(lambda: stub.count("GET", INITIAL_SYNC) == 2, 10, "two syncs at the homeserver")
            # Two in flight: the third is denied before it reaches the homeserver.
            h.assert_matrix_429(proxy.request("GET", INITIAL_SYNC, headers=bearer("syncer")))
            settled = feed_lines(daemon, "settled")
        finally:
            stub.sync_gate = None
            gate.set()
            for t in held:
                t.join(30)
        assert results == [200, 200], results
        # Their completions end their leases, which would otherwise last 180 s.
        await_settled(daemon, settled + 2)
        started = time.monotonic()
        assert proxy.request("GET", INITIAL_SYNC, headers=bearer("syncer")).status == 200
        assert time.monotonic() - started < 5
        assert stub.count("GET", INITIAL_SYNC) == 3

    def test_a_lease_ends_by_its_lease_time_when_the_feed_is_lost(self, start_feed_lost, stub):
        daemon, proxy = start_feed_lost()
        # timeout=1000: mxlimitd's lease for a long-poll is its timeout and a second.
        sync = INITIAL_SYNC + "?timeout=1000"
        assert proxy.request("GET", sync, headers=bearer("lost")).status == 200
        assert proxy.request("GET", sync, headers=bearer("lost")).status == 200
        started = time.monotonic()
        denied = proxy.request("GET", sync, headers=bearer("lost"))
        h.assert_matrix_429(denied)
        assert int(denied.headers["Retry-After"]) <= 2
        time.sleep(max(0.0, 2.2 - (time.monotonic() - started)))
        assert proxy.request("GET", sync, headers=bearer("lost")).status == 200
        assert feed_lines(daemon, "settled") == 0

    def test_a_forged_request_id_ends_and_settles_nothing_but_its_own(self, start_feed, stub):
        """The proxy sends mxlimitd its own id for each request, with the check and in the feed's line, whatever
        X-Request-Id a client sends. Client A has two initial syncs (two leases, the most a user may hold) and a
        failed login (charged on its completion) in flight; client B, knowing their ids exactly (read here off the
        checks: the worst case), sends them as its own X-Request-Id on logins, which mxlimitd keeps, and on requests
        it does not keep, with other forged values besides. Were a forged id believed, B's check would replace A's
        kept decision (its leases given back) or B's line would end it (A's leases given back, A's failed login
        settled as B's 200): A's third sync would pass, and A's failure and B's own would go uncharged."""
        tap = CheckTap()
        try:
            self._forged_request_id(start_feed, stub, tap)
        finally:
            tap.close()

    def _forged_request_id(self, start_feed, stub, tap):
        daemon, proxy = start_feed(tap=tap)
        proxy_id = PROXY_ID[proxy.name]
        # nginx sends only the lines mxlimitd asked for (`if=$mx_feed`); Caddy logs every request.
        unkept = 0 if proxy.name == "nginx" else 1
        a, b, c, d = "127.0.0.21", "127.0.0.22", "127.0.0.23", "127.0.0.24"

        def login(source, password, user, headers=None):
            return proxy.request("POST", LOGIN, source=source, headers=headers, timeout=30, body={
                "type": "m.login.password", "identifier": {"type": "m.id.user", "user": user},
                "password": password})

        def ids_of(source, path):
            """The X-Request-Id of every check of a request from `source` for `path`, as mxlimitd received it."""
            out = []
            for check in tap.checks():
                uri = (check.get("x-original-uri") or check.get("x-forwarded-uri") or [""])[0]
                if check.get("x-forwarded-for", [""])[-1].split(",")[-1].strip() == source and \
                        uri.split("?")[0] == path:
                    out.append(check.get("x-request-id", []))
            return out

        # A: two initial syncs and a failed login, held at the homeserver (only these: any other request A or B
        # makes is answered at once, so one let through by mistake shows as its answer).
        held_sync = INITIAL_SYNC + "?set_presence=online"
        release = stub.hold(lambda r: r.target == held_sync or (r.path == LOGIN and b'"victim"' in r.body))
        results = []
        held = [threading.Thread(target=lambda: results.append(
                    proxy.request("GET", held_sync, headers=bearer("victim"), source=a, timeout=30).status))
                for _ in range(2)]
        held.append(threading.Thread(target=lambda: results.append(login(a, "wrong", "victim").status)))
        for t in held:
            t.start()
        try:
            h.wait_until(lambda: stub.count("GET", INITIAL_SYNC) == 2 and stub.count("POST", LOGIN) == 1, 10,
                         "A's two syncs and login at the homeserver")
            a_ids = [ids[0] for ids in ids_of(a, INITIAL_SYNC) + ids_of(a, LOGIN)]
            assert len(a_ids) == 3 == len(set(a_ids)) and all(proxy_id.fullmatch(i) for i in a_ids), a_ids
            login_id = ids_of(a, LOGIN)[0][0]
            h.assert_matrix_429(proxy.request("GET", INITIAL_SYNC, headers=bearer("victim"), source=a))
            h.wait_until(lambda: lines_handled(daemon) == unkept, 10, "the denied sync's line")
            assert feed_gauge(daemon, "mxlimitd_feed_pending") == 3

            # B: requests mxlimitd does not keep, each carrying one of A's ids or another forged value...
            forged = a_ids + [secrets.token_hex(16), "7c3bd8a1-0e5f-4b8e-9d1a-2f6c4e8b1a3d", "../" * 20, "x" * 200]
            for value in forged:
                r = proxy.request("GET", "/_matrix/client/versions", headers={"X-Request-Id": value}, source=b)
                assert r.status == 200, r
            # ...and logins, which it keeps: a success with the id of A's failed login, then three failures.
            b_logins = [("right", login_id)] + [("wrong", i) for i in a_ids]
            for password, value in b_logins:
                r = login(b, password, "mallory", headers={"X-Request-Id": value})
                assert r.status == (200 if password == "right" else 403), r
            hostile = unkept * len(forged) + len(b_logins)
            h.wait_until(lambda: lines_handled(daemon) == unkept + hostile, 10, "B's lines")

            # A's leases are A's: its third sync is still denied, and all three of A's decisions are still kept.
            h.assert_matrix_429(proxy.request("GET", INITIAL_SYNC, headers=bearer("victim"), source=a))
            h.wait_until(lambda: lines_handled(daemon) == 2 * unkept + hostile, 10, "the denied sync's line")
            # Through nginx the denial sends no line: one more kept request (D's failed login, its line sent
            # after any the denial could have sent) makes sure none came.
            barrier = 1 - unkept
            if barrier:
                assert login(d, "wrong", "dave").status == 403
                h.wait_until(lambda: lines_handled(daemon) == hostile + 1, 10, "D's line")
            assert results == [], results
            assert feed_gauge(daemon, "mxlimitd_feed_pending") == 3
            assert feed_gauge(daemon, "mxlimitd_feed_pending_replaced_total") == 0
            # B's lines settled B's own four logins, and nothing else.
            assert feed_lines(daemon, "settled") == len(b_logins) + barrier
            assert feed_lines(daemon, "no_pending") == unkept * (1 + len(forged) + 1)
            assert feed_lines(daemon, "no_id") == 0 and feed_lines(daemon, "unparsed") == 0
            # B's three failures were charged to B (failed-login-per-ip: three, then one every 6 s).
            assert 0 < h.assert_matrix_429(login(b, "wrong", "mallory")) <= 6000
            # mxlimitd saw only the proxy's ids: one per check, none of them forged, B's own.
            b_ids = ids_of(b, "/_matrix/client/versions") + ids_of(b, LOGIN)
            assert len(b_ids) == len(forged) + len(b_logins) + 1 and all(len(ids) == 1 for ids in b_ids), b_ids
            b_ids = [ids[0] for ids in b_ids]
            assert all(proxy_id.fullmatch(i) for i in b_ids), b_ids
            assert not set(b_ids) & (set(forged) | set(a_ids)) and len(set(b_ids)) == len(b_ids), (b_ids, forged)

            # Two more failures of A's, settled as usual, before its held one ends.
            for _ in range(2):
                assert login(a, "wrong", "someone").status == 403
            await_settled(daemon, len(b_logins) + barrier + 2)
        finally:
            release.set()
            for t in held:
                t.join(30)
        assert sorted(results) == [200, 200, 403], results
        # A's own completions end A's decisions: its held failure is charged to A, the third in a row...
        await_settled(daemon, len(b_logins) + barrier + 2 + 3)
        assert feed_gauge(daemon, "mxlimitd_feed_pending") == 0
        assert 0 < h.assert_matrix_429(login(a, "right", "victim")) <= 6000
        # ...and its leases are given back: valid traffic is treated as it always is.
        started = time.monotonic()
        assert proxy.request("GET", INITIAL_SYNC, headers=bearer("victim"), source=a).status == 200
        assert time.monotonic() - started < 5
        assert login(c, "wrong", "carol").status == 403
        assert login(c, "right", "carol").status == 200
        await_settled(daemon, len(b_logins) + barrier + 2 + 3 + 3)
        assert feed_gauge(daemon, "mxlimitd_feed_pending") == 0
        assert feed_gauge(daemon, "mxlimitd_feed_pending_replaced_total") == 0
        assert feed_lines(daemon, "no_id") == 0 and feed_lines(daemon, "unparsed") == 0


    def test_ratelimit_fields_reach_the_client_on_200_and_429(self, start_feed, stub):
        daemon, proxy = start_feed("response_headers: ratelimit\n" + h.policy_yaml())
        rooms = "/_matrix/client/v3/publicRooms"
        for remaining in (2, 1, 0):
            r = proxy.request("GET", rooms, source="127.0.0.8")
            assert r.status == 200, r
            assert len(r.headers.get_all("RateLimit") or []) == 1, r
            assert parse_sf_list(r.headers["RateLimit-Policy"]) == [("e2e-public-rooms", {"q": 3, "w": 30})], r
            assert parse_sf_list(r.headers["RateLimit"]) == [("e2e-public-rooms", {"r": remaining, "t": 0 if remaining else 10})], r
        denied = proxy.request("GET", rooms, source="127.0.0.8")
        h.assert_matrix_429(denied)
        assert parse_sf_list(denied.headers["RateLimit-Policy"]) == [("e2e-public-rooms", {"q": 3, "w": 30})]
        (name, params), = parse_sf_list(denied.headers["RateLimit"])
        assert name == "e2e-public-rooms" and params["r"] == 0, params
        # t never undercuts Retry-After: it is the same number.
        assert params["t"] == int(denied.headers["Retry-After"]) > 0, (params, denied.headers["Retry-After"])
        assert stub.count("GET", rooms) == 3


def checks_to(daemon, tap):
    """The address the proxy sends its checks to: mxlimitd's, or `tap`'s in front of it."""
    if tap is None:
        return daemon.address
    tap.target = daemon.address
    return tap.address


class TestNginxFeed(FeedScenarios):
    @pytest.fixture
    def start_feed(self, mxlimitd_bin, nginx_bin, workdir, procs, stub):
        def start(policy_text=None, tap=None):
            daemon = h.start_mxlimitd(mxlimitd_bin, workdir, policy_text or h.policy_yaml(),
                                      doc_block="mxlimitd-command-feed")
            procs.append(daemon)
            assert daemon.feeds == [f"unix:{h.feed_socket(workdir)}"], daemon.feeds
            proxy = h.start_nginx(nginx_bin, workdir, "nginx-server-feed", checks_to(daemon, tap), stub.port)
            procs.append(proxy)
            return daemon, proxy

        return start

    @pytest.fixture
    def start_feed_lost(self, start_feed, workdir):
        def start():
            daemon, proxy = start_feed()
            # The socket is gone: nginx's lines go nowhere, as when mxlimitd's feed is cut.
            os.unlink(h.feed_socket(workdir))
            return daemon, proxy

        return start

    def test_a_flood_of_feed_lines_leaves_memory_flat(self, start_feed, workdir, stub):
        daemon, proxy = start_feed()
        path = h.feed_socket(workdir)
        sender = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        garbage = b"\xff\x00 not a log line"
        valid = (b'<190>Dec  5 20:13:47 mxlimit: 127.0.0.3 - - [05/Dec/2026:20:13:47 +0000] '
                 b'"POST /_matrix/client/v3/login HTTP/1.1" 403 70 "-" "-" "-" "%032x"')
        # Warm up, then measure across a million lines (ten to a datagram, as a burst of log lines might come).
        for i in range(1000):
            sender.sendto(b"\n".join([garbage] * 10), path)
        h.wait_until(lambda: feed_lines(daemon, "unparsed") >= 10_000, 20, "the warm-up lines")
        before = rss_kib(daemon.proc.pid)
        for i in range(100_000):
            lines = [valid % (i * 10 + k) if k % 2 else garbage for k in range(10)]
            sender.sendto(b"\n".join(lines), path)
        sender.sendto(b"x" * 70_000, path)
        h.wait_until(lambda: feed_lines(daemon, "unparsed") >= 10_000 + 500_000
                     and feed_lines(daemon, "no_pending") >= 500_000, 60, "the flood")
        assert feed_lines(daemon, "no_pending") == 500_000
        after = rss_kib(daemon.proc.pid)
        assert after - before < 4096, (before, after)
        # Decisions are still right: three failed logins, then the address is limited.
        for i in range(3):
            assert proxy.request("POST", LOGIN, body={"password": "wrong"}, source="127.0.0.7").status == 403
        await_settled(daemon, 3)
        h.assert_matrix_429(proxy.request("POST", LOGIN, body={"password": "right"}, source="127.0.0.7"))


def test_replay_agrees_with_the_live_sidecar(mxlimitd_bin, nginx_bin, workdir, procs, stub):
    """One log, two ways: the answers nginx gave with mxlimitd and the feed live, and `mxlimit replay` of the access
    log nginx wrote meanwhile (the documented `mxlimit` format, every request in it), with the same policy file,
    decide every request alike."""
    cli = os.environ.get("MXLIMIT_BIN")
    if not cli:
        pytest.skip("MXLIMIT_BIN is not set (the mxlimit CLI is not built)")
    policy = h.policy_yaml()
    daemon = h.start_mxlimitd(mxlimitd_bin, workdir, policy, doc_block="mxlimitd-command-feed")
    procs.append(daemon)
    proxy = h.start_nginx(nginx_bin, workdir, "nginx-server-feed", daemon.address, stub.port)
    procs.append(proxy)
    live = []
    # Failed and successful logins from three addresses, and downloads: each answer waits for its completion to be
    # settled, as the next request of a client that reads its answer would.
    plan = ([("POST", LOGIN, "wrong", "127.0.0.11")] * 4 + [("POST", LOGIN, "right", "127.0.0.12")] * 3
            + [("POST", LOGIN, "wrong", "127.0.0.12")] * 3 + [("POST", LOGIN, "right", "127.0.0.11")]
            + [("GET", MEDIA.format(200 * MIB), None, "127.0.0.13")] * 4
            # Last, an admitted request: its line comes after any a denial could have sent.
            + [("POST", LOGIN, "wrong", "127.0.0.14")])
    for method, target, password, source in plan:
        body = {"type": "m.login.password", "password": password} if password else None
        r = proxy.request(method, target, body=body, source=source, timeout=60)
        live.append("denied" if r.status == 429 else "allowed")
        await_settled(daemon, live.count("allowed"))
    assert "denied" in live and live[-1] == "allowed", live
    # Only the admitted requests' lines were sent to the feed.
    assert lines_handled(daemon) == feed_lines(daemon, "settled") == live.count("allowed")
    log = Path(workdir) / "matrix-access.log"
    config = Path(workdir) / "replay.yaml"
    config.write_text(policy)
    out = subprocess.run([cli, "replay", "--format", "nginx", "--config", str(config), "--decisions", str(log)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    # allow, shadow and delay are all admissions.
    replayed = ["denied" if line.split("\t")[0] == "deny" else "allowed"
                for line in out.stdout.splitlines() if line]
    assert replayed == live, (replayed, live, log.read_text())


def test_a_client_that_leaves_during_a_held_answer_ends_what_was_kept(mxlimitd_bin, nginx_bin, workdir, procs, stub):
    """A delayed initial sync holds a lease from its decision on, and its client leaves while mxlimitd holds the
    answer. nginx never hears the check's answer, so it has no X-Mxlimit-Feed mark, yet the documented config still
    sends the request's line (a check that never answered): the lease ends then, not by its lease time (180 s)."""
    policy = h.policy_yaml() + """
  - name: e2e-sync-delay
    match: "/_matrix/client/v3/sync"
    methods: [GET]
    scope: user
    rate_limit: { unit: minute, requests_per_unit: 15, burst: 1 }
    on_limit: delay
    max_delay: 5s
"""
    daemon = h.start_mxlimitd(mxlimitd_bin, workdir, policy, doc_block="mxlimitd-command-feed")
    procs.append(daemon)
    proxy = h.start_nginx(nginx_bin, workdir, "nginx-server-feed", daemon.address, stub.port)
    procs.append(proxy)
    assert proxy.request("GET", INITIAL_SYNC, headers=bearer("leaver")).status == 200
    await_settled(daemon, 1)
    # The second is 4 s early: held. Its client leaves after 300 ms.
    with socket.create_connection(("127.0.0.1", proxy.port)) as s:
        s.sendall(f"GET {INITIAL_SYNC} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer leaver\r\n\r\n".encode())
        h.wait_until(lambda: feed_gauge(daemon, "mxlimitd_held_answers") == 1, 5, "the held answer")
        assert feed_gauge(daemon, "mxlimitd_feed_pending") == 1
        time.sleep(0.3)
    left = time.monotonic()
    await_settled(daemon, 2)
    assert time.monotonic() - left < 2, "the line came only when the held answer did"
    assert feed_gauge(daemon, "mxlimitd_feed_pending") == 0
    assert stub.count("GET", INITIAL_SYNC) == 1


class TestCaddyFeed(FeedScenarios):
    @pytest.fixture
    def start_feed(self, mxlimitd_bin, caddy_bin, workdir, procs, stub):
        def start(policy_text=None, lost=False, tap=None):
            daemon = h.start_mxlimitd(mxlimitd_bin, workdir, policy_text or h.policy_yaml(),
                                      doc="deploy-caddy.md", doc_block="mxlimitd-command-feed-udp")
            procs.append(daemon)
            assert len(daemon.feeds) == 1 and daemon.feeds[0].startswith("udp:127.0.0.1:"), daemon.feeds
            feed = daemon.feeds[0][len("udp:"):]
            if lost:
                # Caddy's entries go to a port nobody reads, as when the feed is cut.
                with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                    s.bind(("127.0.0.1", 0))
                    feed = f"127.0.0.1:{s.getsockname()[1]}"
            proxy = h.start_caddy(caddy_bin, workdir, "caddy-site-feed", checks_to(daemon, tap), stub.port,
                                  feed_udp=feed)
            procs.append(proxy)
            return daemon, proxy

        return start

    @pytest.fixture
    def start_feed_lost(self, start_feed):
        return lambda: start_feed(lost=True)
