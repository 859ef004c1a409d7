"""What an operator checks after putting mxlimitd behind a reverse proxy, for any proxy.

test_nginx.py and test_caddy.py subclass ProxyScenarios and provide the `start_proxy(kind, daemon, stub)` fixture
(kind: "fail-closed", "fail-open" or "behind-lb", each a snippet of the proxy's deploy doc) and the status the
proxy answers when the sidecar is down and it fails closed.

Budgets (e2e_harness.policy_yaml, built-ins on): e2e-public-rooms 3 at once per client address; e2e-send 3 at once
per access token, then one every 2 s; e2e-blocked denies everything `never`; e2e-reload changed by the reload test.
"""

import random
import re
import threading
import time

import pytest

import e2e_harness as h

PUBLIC_ROOMS = "/_matrix/client/v3/publicRooms"
DEACTIVATE = "/_matrix/client/v3/account/deactivate"
USER_DIRECTORY = "/_matrix/client/v3/user_directory/search"
LOGIN = "/_matrix/client/v3/login"


def established_to(port):
    """Server-side TCP connections on local `port` that the kernel holds ESTABLISHED."""
    n = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            next(f)
            for line in f:
                fields = line.split()
                if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "01":
                    n += 1
    return n


def send_target(txn, room="%21abc%3Aexample.org"):
    return f"/_matrix/client/v3/rooms/{room}/send/m.room.message/{txn}"


def bearer(token):
    return {"Authorization": f"Bearer {token}"}


class ProxyScenarios:
    fail_closed_status = None  # what the proxy answers when mxlimitd is down and it fails closed

    # --- pass-through ------------------------------------------------------------------------------------------------

    def test_allowed_request_reaches_homeserver_unchanged(self, mxlimitd, stub, start_proxy):
        daemon = mxlimitd()
        proxy = start_proxy("fail-closed", daemon, stub)

        r = proxy.request("GET", "/_matrix/client/versions")
        assert r.status == 200, r
        assert "v1.11" in r.json()["versions"], r

        target = send_target("t1") + "?ts=1"
        r = proxy.request("PUT", target, headers=bearer("tok-pass"), body={"msgtype": "m.text", "body": "hi"})
        assert r.status == 200, r
        assert r.json()["event_id"].startswith("$"), r

        sends = [x for x in stub.received if x.method == "PUT"]
        assert len(sends) == 1, stub.received
        # Raw target, method, token and body arrive as the client sent them.
        assert sends[0].target == target
        assert sends[0].headers.get("Authorization") == "Bearer tok-pass"
        assert b'"body": "hi"' in sends[0].body

    # --- the 429 -----------------------------------------------------------------------------------------------------

    def test_budget_exhausted_gives_matrix_429_that_never_reaches_homeserver(self, mxlimitd, stub, start_proxy):
        daemon = mxlimitd()
        proxy = start_proxy("fail-closed", daemon, stub)
        for i in range(3):
            r = proxy.request("GET", PUBLIC_ROOMS)
            assert r.status == 200, f"request {i + 1} of a burst of 3: {r!r}"
        r = proxy.request("GET", PUBLIC_ROOMS)
        ms = h.assert_matrix_429(r)
        # 6/minute: the next request is at most 10 s away.
        assert ms <= 10_000, ms
        assert stub.count("GET", PUBLIC_ROOMS) == 3, "a denied request reached the homeserver"

    def test_waiting_retry_after_ms_is_enough(self, mxlimitd, stub, start_proxy):
        daemon = mxlimitd()
        proxy = start_proxy("fail-closed", daemon, stub)
        token = bearer("tok-wait")
        for i in range(3):
            assert proxy.request("PUT", send_target(f"w{i}"), headers=token, body={}).status == 200
        ms = h.assert_matrix_429(proxy.request("PUT", send_target("w3"), headers=token, body={}))
        assert ms <= 2000, ms  # one every 2 s
        # Asking again at once does not help (and costs nothing) ...
        ms = h.assert_matrix_429(proxy.request("PUT", send_target("w3"), headers=token, body={}))
        # ... waiting what the server said does.
        time.sleep(ms / 1000 + 0.02)
        r = proxy.request("PUT", send_target("w3"), headers=token, body={})
        assert r.status == 200, r
        assert stub.count("PUT") == 4

    def test_user_budget_follows_the_access_token(self, mxlimitd, stub, start_proxy):
        daemon = mxlimitd()
        proxy = start_proxy("fail-closed", daemon, stub)
        # One token, in the header or in the query: one budget.
        assert proxy.request("PUT", send_target("u1"), headers=bearer("tok-alice"), body={}).status == 200
        assert proxy.request("PUT", send_target("u2") + "?access_token=tok-alice", body={}).status == 200
        assert proxy.request("PUT", send_target("u3", room="%21other%3Aexample.org"), headers=bearer("tok-alice"),
                             body={}).status == 200
        h.assert_matrix_429(proxy.request("PUT", send_target("u4") + "?access_token=tok-alice", body={}))
        h.assert_matrix_429(proxy.request("PUT", send_target("u5"), headers=bearer("tok-alice"), body={}))
        # Another token, from the same address, has its own.
        assert proxy.request("PUT", send_target("u6"), headers=bearer("tok-bob"), body={}).status == 200
        assert stub.count("PUT") == 4

    def test_never_decision_has_no_wait(self, mxlimitd, stub, start_proxy):
        daemon = mxlimitd()
        proxy = start_proxy("fail-closed", daemon, stub)
        for _ in range(2):
            r = proxy.request("POST", DEACTIVATE, headers=bearer("tok-never"), body={"auth": {}})
            h.assert_matrix_429(r, never=True)
        assert stub.count(path=DEACTIVATE) == 0

    def test_homeserver_own_403_is_passed_on(self, mxlimitd, stub, start_proxy):
        daemon = mxlimitd()
        proxy = start_proxy("fail-closed", daemon, stub)
        path = "/_matrix/client/v3/rooms/%21secret%3Aexample.org/state"
        stub.responses[path] = (403, {"errcode": "M_FORBIDDEN", "error": "You are not in this room"})
        r = proxy.request("GET", path, headers=bearer("tok-403"))
        assert r.status == 403, r
        assert r.json()["errcode"] == "M_FORBIDDEN", r
        assert r.headers.get("Retry-After") is None, r

    @pytest.mark.parametrize("kind", ["fail-closed", "fail-open"])
    def test_inputs_mxlimitd_refuses_do_not_get_past_it(self, kind, mxlimitd, stub, start_proxy):
        """A client sends what mxlimitd refuses to judge (a token it cannot read, more header bytes than it takes).
        The request must stop at the proxy with a 4xx, in the fail-open configuration too: it is no outage."""
        daemon = mxlimitd()
        proxy = start_proxy(kind, daemon, stub)
        bad_inputs = [
            ("a malformed escape in ?access_token=", {}, DEACTIVATE + "?access_token=%zz"),
            ("a 2000-byte bearer token", bearer("a" * 2000), DEACTIVATE),
            ("a 2000-byte ?access_token=", {}, DEACTIVATE + "?access_token=" + "a" * 2000),
            ("a malformed escape in ?user_id=", bearer("tok-bad"), DEACTIVATE + "?user_id=%zz"),
            ("a 2000-byte ?user_id=", bearer("tok-bad"), DEACTIVATE + "?user_id=" + "a" * 2000),
            ("20 KB of other headers", {**bearer("tok-bad"), **{f"X-Pad-{i}": "p" * 1000 for i in range(20)}},
             DEACTIVATE),
            ("a 7 KB token, a 7 KB X-Forwarded-For and a 6 KB target",
             {**bearer("a" * 7000), "X-Forwarded-For": ", ".join(["203.0.113.1"] * 580)},
             DEACTIVATE + "?x=" + "b" * 6000),
        ]
        outcomes = []
        for label, headers, target in bad_inputs:
            r = proxy.request("POST", target, headers=headers, body={})
            outcomes.append((label, r.status))
        # DEACTIVATE is e2e-blocked: nothing may reach the homeserver whatever mxlimitd makes of the inputs.
        assert stub.count(path=DEACTIVATE) == 0, (
            f"requests mxlimitd refused reached the homeserver ({kind}): {outcomes}")
        assert all(400 <= status < 500 for _, status in outcomes), outcomes
        # And mxlimitd is still judging well-formed requests.
        h.assert_matrix_429(proxy.request("POST", DEACTIVATE, headers=bearer("tok-good"), body={}), never=True)

    # --- who the client is -------------------------------------------------------------------------------------------

    def test_forwarded_for_spoofing_gains_nothing(self, mxlimitd, stub, start_proxy):
        """A client at 127.0.0.2 (untrusted) makes up forwarding headers; it is charged as 127.0.0.2 anyway."""
        daemon = mxlimitd()
        proxy = start_proxy("fail-closed", daemon, stub)
        spoofs = [
            {"X-Forwarded-For": "203.0.113.7"},
            {"X-Forwarded-For": "127.0.0.1"},  # claims to be the trusted proxy
            {"X-Forwarded-For": "2001:db8::1, 127.0.0.1"},
            {"Forwarded": "for=198.51.100.1"},
            {"X-Real-IP": "198.51.100.2"},
            {"X-Forwarded-For": "203.0.113.8", "X-Real-IP": "203.0.113.9", "Forwarded": "for=\"[2001:db8::2]\""},
            {"X-Forwarded-For": "not an address"},
        ]
        statuses = []
        for headers in spoofs:
            r = proxy.request("GET", PUBLIC_ROOMS, headers=headers, source="127.0.0.2")
            statuses.append(r.status)
            if r.status != 200:
                h.assert_matrix_429(r)
        assert statuses == [200] * 3 + [429] * (len(spoofs) - 3), statuses
        # Another client keeps its own budget: the denials above were 127.0.0.2's, not everybody's.
        assert proxy.request("GET", PUBLIC_ROOMS, source="127.0.0.3").status == 200
        assert stub.count("GET", PUBLIC_ROOMS) == 4

    def test_forged_federation_origin_spends_only_the_forgers_budget(self, mxlimitd, stub, start_proxy):
        """`Authorization: X-Matrix origin=...` is read through the real proxy, unverified, so an origin's budget is
        bound to the sender's network. Loopback sources share one /24, so the test restates the built-in
        federation-per-origin (its burst of 50, a slow refill so that a slow proxy cannot refill it within the test)
        with /32 networks; every other built-in stays on. A forger at 127.0.0.2
        claiming matrix.org is cut at the burst of 50 by federation-per-origin; matrix.org's own server at
        127.0.0.3 then has its whole budget; the forger's other origins are its own budgets too."""
        policy = h.policy_yaml() + """
  - name: federation-per-origin
    match: "/_matrix/federation/*"
    scope: origin
    share_threshold: true
    client_prefix: { ipv4: 32, ipv6: 128 }
    rate_limit: { unit: minute, requests_per_unit: 1, burst: 50 }
"""
        daemon = mxlimitd(policy)
        proxy = start_proxy("fail-closed", daemon, stub)
        target = "/_matrix/federation/v1/query/profile?user_id=%40a%3Amatrix.org"

        def xmatrix(origin):
            return {"Authorization": f'X-Matrix origin="{origin}",destination="localhost",key="ed25519:a",sig="x"'}

        forged = []
        for _ in range(60):
            r = proxy.request("GET", target, headers=xmatrix("matrix.org"), source="127.0.0.2")
            forged.append(r.status)
            if r.status != 200:
                h.assert_matrix_429(r)
        assert forged == [200] * 50 + [429] * 10, forged
        # The real server, on its own network: a full budget.
        real = [proxy.request("GET", target, headers=xmatrix("matrix.org"), source="127.0.0.3").status
                for _ in range(50)]
        assert real == [200] * 50, real
        # Unquoted and in another case, the name is still read (and still the forger's drained bucket).
        r = proxy.request("GET", target, headers={"Authorization": "x-matrix ORIGIN=matrix.org,key=k,sig=s"},
                          source="127.0.0.2")
        h.assert_matrix_429(r)
        # A client request (no X-Matrix) from the forger is not charged to any origin.
        assert proxy.request("GET", "/_matrix/federation/v1/version", source="127.0.0.2").status == 200
        assert stub.count("GET", "/_matrix/federation/v1/query/profile") == 100

    def test_delayed_admissions_are_held_then_passed_and_charged_once(self, mxlimitd, stub, start_proxy):
        """`on_limit: delay` through the real proxy: mxlimitd holds the allowing answer for the delay (on a timer; the
        other requests of the burst are decided meanwhile), the proxy then passes the request on, and each delayed
        request is charged once, at its own later time. 4 a second, burst 1, waits of up to 1 s served late: of 8
        requests at once, one passes at once, four after 250, 500, 750 and 1000 ms, three are denied."""
        policy = h.policy_yaml() + """
  - name: e2e-delay
    match: "/_matrix/client/v3/thirdparty/protocols"
    methods: [GET]
    rate_limit: { unit: second, requests_per_unit: 4, burst: 1 }
    on_limit: delay
    max_delay: 1s
"""
        daemon = mxlimitd(policy)
        proxy = start_proxy("fail-closed", daemon, stub)
        target = "/_matrix/client/v3/thirdparty/protocols"
        results = [None] * 8
        start = time.monotonic()

        def one(k):
            r = proxy.request("GET", target, source="127.0.0.2")
            results[k] = (r.status, time.monotonic() - start, r)

        threads = [threading.Thread(target=one, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        passed = sorted(elapsed for status, elapsed, _ in results if status == 200)
        denied = [r for status, _, r in results if status != 200]
        assert len(passed) == 5 and len(denied) == 3, [(s, round(e, 3)) for s, e, _ in results]
        for r in denied:
            h.assert_matrix_429(r)
        # The held ones came back no earlier than their place in the queue.
        for k, elapsed in enumerate(passed):
            assert elapsed >= 0.25 * k - 0.05, passed
        assert stub.count("GET", target) == 5
        metrics = daemon.get("/_mxlimit/metrics").body.decode()
        assert re.search(r'^mxlimitd_decisions_total\{result="delayed"\} 4$', metrics, re.M), metrics
        assert re.search(r"^mxlimitd_held_answers 0$", metrics, re.M), metrics
        # Charged once each: a second later the queue has drained by four intervals, so one passes at once.
        time.sleep(max(0.0, start + 2.0 - time.monotonic()))
        t0 = time.monotonic()
        assert proxy.request("GET", target, source="127.0.0.2").status == 200
        assert time.monotonic() - t0 < 0.2

    def test_forged_proxy_headers_do_not_change_what_is_judged(self, mxlimitd, stub, start_proxy):
        """A login flood from one client that forges every header a proxy could set (nginx's X-Original-*, Caddy's
        X-Forwarded-*, X-Real-IP, Forwarded), fresh values each time: the built-in login-per-ip still allows 5 at
        once, then answers the Matrix 429, and no denied login reaches the homeserver."""
        daemon = mxlimitd()
        proxy = start_proxy("fail-closed", daemon, stub)
        statuses = []
        for i in range(9):
            forged = {
                "X-Original-URI": "/_matrix/client/versions",
                "X-Original-Method": "OPTIONS",
                "X-Forwarded-Uri": "/_matrix/client/versions",
                "X-Forwarded-Method": "OPTIONS",
                "X-Forwarded-For": f"198.51.100.{i}",
                "X-Real-IP": f"198.51.100.{i + 100}",
                "Forwarded": f"for=198.51.100.{i + 200}",
            }
            r = proxy.request("POST", LOGIN, headers=forged, body={"type": "m.login.password"}, source="127.0.0.2")
            statuses.append(r.status)
            if r.status != 200:
                h.assert_matrix_429(r)
        assert statuses == [200] * 5 + [429] * 4, statuses
        assert stub.count("POST", LOGIN) == 5, "a denied login reached the homeserver"

    def test_hostile_requests_leave_every_slot_accounted(self, mxlimitd, stub, start_proxy):
        """Requests that mxlimitd answers with an error and a close (a control byte in the token, headers past its
        limits, a huge target), then a burst of valid requests: every one is answered, and mxlimitd's
        open-connection gauge equals the connections the kernel holds open to it."""
        daemon = mxlimitd()
        proxy = start_proxy("fail-closed", daemon, stub)
        hostile = [
            ("GET", "/_matrix/client/versions", {"Authorization": "Bearer a\x01b"}),
            ("GET", "/_matrix/client/versions", {"Authorization": "Bearer a\x7fb"}),
            ("GET", "/_matrix/client/versions", {"Authorization": "Bearer \x1b[31mred"}),
            ("GET", "/_matrix/client/versions", {"X-Forwarded-For": "," * 60_000}),
            ("GET", "/_matrix/client/versions?access_token=%zz&user_id=" + "u" * 5000, {}),
            ("GET", "/_matrix/client/versions", {f"X-Pad-{i}": "p" * 2000 for i in range(40)}),
            ("GET", "/_matrix/client/versions", {f"X-Many-{i}": "m" for i in range(300)}),
            ("GET", "/_matrix/client/versions?x=" + "a" * 70_000, {}),
            ("GET", "http://matrix.example.org/_matrix/client/versions", {}),
        ]
        for _ in range(10):
            for method, target, headers in hostile:
                try:
                    proxy.request(method, target, headers=headers, source="127.0.0.5")
                except (ConnectionError, OSError):
                    pass  # the proxy may refuse the shape itself; what matters is mxlimitd afterwards
        errors = []
        answered = []

        def burst(k):
            for i in range(10):
                try:
                    answered.append(proxy.request("GET", "/_matrix/client/versions", source=f"127.0.1.{k}").status)
                except Exception as e:  # noqa: BLE001 - no answer is the finding
                    errors.append(repr(e))

        threads = [threading.Thread(target=burst, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert not errors, errors[:3]
        assert answered == [200] * 80, answered

        def gauge_matches_kernel():
            metrics = daemon.get("/_mxlimit/metrics").body.decode()
            gauge = int(re.search(r"^mxlimitd_open_connections (\d+)$", metrics, re.M).group(1))
            # The metrics request's own connection is in the gauge; once it is closed it is no longer
            # ESTABLISHED in the kernel.
            return gauge == established_to(daemon.port) + 1 and gauge < 100

        h.wait_until(gauge_matches_kernel, 5, "mxlimitd_open_connections to equal the connections open to mxlimitd")

    def test_ipv6_rotation_inside_a_64_gains_nothing(self, mxlimitd, stub, start_proxy):
        """Behind a trusted balancer (127.0.0.9), a client rotates its address inside one IPv6 /64."""
        daemon = mxlimitd(doc_block="mxlimitd-command-behind-lb")
        proxy = start_proxy("behind-lb", daemon, stub)
        rng = random.Random(64)
        statuses = []
        for _ in range(8):
            iid = ":".join(f"{rng.getrandbits(16):x}" for _ in range(4))
            r = proxy.request("GET", PUBLIC_ROOMS, headers={"X-Forwarded-For": f"2001:db8:4d2:77:{iid}"},
                              source=h.BALANCER)
            statuses.append(r.status)
            if r.status != 200:
                h.assert_matrix_429(r)
        assert statuses == [200] * 3 + [429] * 5, statuses
        # The balancer's X-Forwarded-For is believed: a client in the next /64 has its own budget, and the
        # balancer's own address is not what was charged.
        r = proxy.request("GET", PUBLIC_ROOMS, headers={"X-Forwarded-For": "2001:db8:4d2:78::1"},
                          source=h.BALANCER)
        assert r.status == 200, r
        assert stub.count("GET", PUBLIC_ROOMS) == 4

    # --- operations --------------------------------------------------------------------------------------------------

    def test_reload_under_traffic(self, mxlimitd, stub, start_proxy):
        daemon = mxlimitd(h.policy_yaml(reload_rate=1000))
        proxy = start_proxy("fail-closed", daemon, stub)
        results = []  # (seconds since start, Response)
        errors = []
        stop = threading.Event()
        t0 = time.monotonic()

        def traffic():
            while not stop.is_set():
                try:
                    r = proxy.request("POST", USER_DIRECTORY, body={"search_term": "al"}, source="127.0.0.4")
                    results.append((time.monotonic() - t0, r))
                except Exception as e:  # noqa: BLE001 - any failure to get an answer is a finding
                    errors.append(repr(e))
                time.sleep(0.005)

        def first_index(start, status):
            for i in range(start, len(results)):
                if results[i][1].status == status:
                    return i
            return None

        thread = threading.Thread(target=traffic, name="traffic")
        thread.start()
        try:
            h.wait_until(lambda: len(results) >= 10, 10, "traffic to flow")
            assert {r.status for _, r in results} == {200}, results[:10]

            # 1. A changed budget takes effect: e2e-reload now blocks everything.
            mark = len(results)
            daemon.reload(h.policy_yaml(reload_rate=0))
            denied_from = h.wait_until(lambda: first_index(mark, 429), 5, "the reloaded policy to deny")

            # 2. A broken file is refused, logged with FILE:LINE:COL, and the policies in force stay.
            broken = h.policy_yaml(reload_rate=0).replace("unit: second, requests_per_unit: 0",
                                                          "unit: fortnight, requests_per_unit: 0")
            assert "fortnight" in broken
            line = next(i + 1 for i, text in enumerate(broken.splitlines()) if "fortnight" in text)
            log_mark = len(daemon.proc.stderr())
            daemon.reload(broken)
            h.wait_until(lambda: f"mxlimit.yaml:{line}:" in daemon.proc.stderr()[log_mark:], 5,
                         f"mxlimitd to log the error at mxlimit.yaml:{line}:COL")
            during = len(results)
            h.wait_until(lambda: len(results) > during + 10, 10, "traffic to go on after a broken reload")
            assert daemon.get("/_mxlimit/health").status == 200
            after_broken = [r for _, r in results[denied_from:]]
            assert {r.status for r in after_broken} == {429}, [r.status for r in after_broken]

            # 3. The file fixed: allowed again.
            mark = len(results)
            daemon.reload(h.policy_yaml(reload_rate=1000))
            allowed_from = h.wait_until(lambda: first_index(mark, 200), 5, "the fixed policy to allow")
            h.wait_until(lambda: len(results) > allowed_from + 10, 5, "more traffic")
        finally:
            stop.set()
            thread.join(timeout=30)

        assert not errors, errors[:5]
        assert {r.status for _, r in results[allowed_from:]} == {200}
        for _, r in results[denied_from:allowed_from]:
            h.assert_matrix_429(r, never=True)
        allowed = sum(1 for _, r in results if r.status == 200)
        assert stub.count("POST", USER_DIRECTORY) == allowed, "a denied request reached the homeserver"

    def test_sidecar_killed_fail_closed(self, mxlimitd, stub, start_proxy):
        daemon = mxlimitd()
        proxy = start_proxy("fail-closed", daemon, stub)
        for i in range(3):  # connections to mxlimitd are open (keepalive) when it dies
            assert proxy.request("PUT", send_target(f"k{i}"), headers=bearer("tok-kill"), body={}).status == 200
        daemon.kill()
        seen = len(stub.received)
        for method, target in [("GET", "/_matrix/client/versions"), ("PUT", send_target("k9")),
                               ("GET", PUBLIC_ROOMS)]:
            r = proxy.request(method, target, headers=bearer("tok-kill"), body={} if method == "PUT" else None)
            assert r.status == self.fail_closed_status, f"{method} {target}: {r!r}"
        assert len(stub.received) == seen, "fail-closed let a request through to the homeserver"

    def test_sidecar_killed_fail_open(self, mxlimitd, stub, start_proxy):
        daemon = mxlimitd()
        proxy = start_proxy("fail-open", daemon, stub)
        # While mxlimitd runs, the fail-open configuration limits like the other.
        h.assert_matrix_429(proxy.request("POST", DEACTIVATE, headers=bearer("tok-open"), body={"auth": {}}),
                            never=True)
        for i in range(3):
            assert proxy.request("GET", PUBLIC_ROOMS).status == 200
        h.assert_matrix_429(proxy.request("GET", PUBLIC_ROOMS))
        daemon.kill()
        # Down: everything passes to the homeserver, body and method intact.
        r = proxy.request("POST", DEACTIVATE, headers=bearer("tok-open"), body={"auth": {"type": "x"}})
        assert r.status == 200, r
        for _ in range(3):
            assert proxy.request("GET", PUBLIC_ROOMS).status == 200
        posts = [x for x in stub.received if x.path == DEACTIVATE]
        assert len(posts) == 1 and posts[0].method == "POST" and b'"type": "x"' in posts[0].body, posts
        assert stub.count("GET", PUBLIC_ROOMS) == 6
