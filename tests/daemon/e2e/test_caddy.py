"""mxlimitd behind Debian's Caddy (forward_auth), configured with the snippets of docs/deploy-caddy.md."""

import pytest

import e2e_harness as h
from proxy_scenarios import ProxyScenarios

CADDY_BLOCKS = {
    "fail-closed": "caddy-site-fail-closed",
    "fail-open": "caddy-site-fail-open",
    "behind-lb": "caddy-site-behind-lb",
}


@pytest.fixture
def start_proxy(caddy_bin, workdir, procs):
    def start(kind, daemon, stub):
        proxy = h.start_caddy(caddy_bin, workdir, CADDY_BLOCKS[kind], daemon.address, stub.port)
        procs.append(proxy)
        return proxy

    return start


class TestCaddy(ProxyScenarios):
    # forward_auth cannot reach its upstream: 502.
    fail_closed_status = 502
