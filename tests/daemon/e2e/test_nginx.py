"""mxlimitd behind Debian's nginx (auth_request), configured with the snippets of docs/deploy-nginx.md."""

import re
import time

import pytest

import e2e_harness as h
from proxy_scenarios import ProxyScenarios, bearer

NGINX_BLOCKS = {
    "fail-closed": "nginx-server-fail-closed",
    "fail-open": "nginx-server-fail-open",
    # nginx needs no change behind a balancer: $proxy_add_x_forwarded_for keeps the balancer's list.
    "behind-lb": "nginx-server-fail-closed",
}


@pytest.fixture
def start_proxy(nginx_bin, workdir, procs):
    def start(kind, daemon, stub):
        proxy = h.start_nginx(nginx_bin, workdir, NGINX_BLOCKS[kind], daemon.address, stub.port)
        procs.append(proxy)
        return proxy

    return start


class TestNginx(ProxyScenarios):
    # auth_request turns a failed subrequest into 500.
    fail_closed_status = 500

    def test_access_log_names_the_denying_policy(self, mxlimitd, stub, start_proxy):
        """The built-in login-per-ip (burst 5) is in force beside the test's policies, and nginx logs its name."""
        daemon = mxlimitd()
        proxy = start_proxy("fail-closed", daemon, stub)
        login = "/_matrix/client/v3/login"
        statuses = [proxy.request("POST", login, body={"type": "m.login.password"}).status for _ in range(6)]
        assert statuses == [200] * 5 + [429], statuses
        # nginx logs a request after answering it: wait for the last line.
        deadline = time.monotonic() + 5
        while True:
            log = (proxy.workdir / "matrix-access.log").read_text().splitlines()
            logins = [line for line in log if f'"POST {login} HTTP/1.1"' in line]
            if len(logins) >= 6 or time.monotonic() > deadline:
                break
            time.sleep(0.02)
        assert len(logins) == 6, log
        assert all(re.search(r'" 200 .* policy=$', line) for line in logins[:5]), logins
        assert re.search(r'" 429 .* policy=login-per-ip$', logins[5]), logins[5]

    def test_check_carries_only_what_mxlimitd_reads(self, mxlimitd, stub, start_proxy):
        """Large headers mxlimitd has no use for (a browser's cookies) stay out of the check, so they neither
        count against its header limit nor turn an allowed request into an error."""
        daemon = mxlimitd()
        proxy = start_proxy("fail-closed", daemon, stub)
        cookies = {f"Cookie-{i}": "c" * 7000 for i in range(3)}  # nginx takes lines up to 8 KiB, 32 KiB in all
        r = proxy.request("GET", "/_matrix/client/versions", headers={**cookies, **bearer("tok-cookies")})
        assert r.status == 200, r
        assert stub.count("GET", "/_matrix/client/versions") == 1


def test_sidecar_endpoints_direct(mxlimitd, stub):
    """What the proxy and a monitoring system see of mxlimitd itself."""
    daemon = mxlimitd()
    assert daemon.get("/_mxlimit/health").status == 200
    # The subrequest without the proxy's inputs is refused, never allowed silently.
    assert daemon.get("/_mxlimit/auth_request").status == 400
    assert daemon.get("/_mxlimit/forward_auth", headers={"X-Forwarded-Method": "GET"}).status == 400
    # Both endpoints, one decision each.
    inputs = {"X-Original-Method": "POST", "X-Original-URI": "/_matrix/client/v3/account/deactivate"}
    r = daemon.get("/_mxlimit/auth_request", headers=inputs)
    assert r.status == 403, r
    assert r.headers.get("X-Mxlimit-Policy") == "e2e-blocked", r
    assert r.headers.get("Retry-After") is None, r
    assert r.headers.get("X-Mxlimit-Body") == '{"errcode":"M_LIMIT_EXCEEDED","error":"Too many requests"}', r
    r = daemon.get("/_mxlimit/auth_request",
                   headers={"X-Original-Method": "GET", "X-Original-URI": "/_matrix/client/versions"})
    assert r.status == 204, r
    r = daemon.get("/_mxlimit/forward_auth",
                   headers={"X-Forwarded-Method": "GET", "X-Forwarded-Uri": "/_matrix/client/versions"})
    assert r.status == 200, r
    metrics = daemon.get("/_mxlimit/metrics")
    assert metrics.status == 200, metrics
    assert metrics.headers.get("Content-Type", "").startswith("text/plain"), metrics
    text = metrics.body.decode()
    assert re.search(r"^# TYPE \S+ (counter|gauge|histogram)$", text, re.M), text[:500]
    assert "e2e-blocked" in text, "the policy that denied is not in the metrics"
    assert stub.received == [], "mxlimitd itself must not call the homeserver with --user-key token-hash"
