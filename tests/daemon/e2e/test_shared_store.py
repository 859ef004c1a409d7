"""Three mxlimitd processes with --store share one budget through a real redis-server (issue #15): what one process
would allow, the three allow together; without the store each allows its own. Redis killed and restarted mid-run
costs no error. Skipped, with a message, where redis-server is not installed."""

import shutil
import signal
import subprocess
import time

import os

import pytest

import e2e_harness as h


def skip_unless_installed(why):
    """Skips, or fails when MXLIMIT_REQUIRE_REDIS is set (.ci/run sets it: CI runs every Redis test)."""
    if os.environ.get("MXLIMIT_REQUIRE_REDIS"):
        pytest.fail("MXLIMIT_REQUIRE_REDIS is set: " + why)
    pytest.skip(why)

BALANCER = "203.0.113.77"
ADMIN_TOKEN = "e2e-shared-admin-token-0123456789"


@pytest.fixture
def redis(workdir, procs):
    server = shutil.which("redis-server") or shutil.which("redis-server", path="/usr/bin:/usr/sbin")
    if not server:
        skip_unless_installed("redis-server is not installed (scripts/bootstrap installs it): the shared-store tests need it")

    def start(port=None):
        port = port or h.free_port()
        proc = h.Process("redis", [server, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly",
                                   "no", "--dir", workdir], workdir)
        procs.append(proc)
        h.wait_for_port(port, proc)
        return port, proc

    return start


def make_certificates(directory):
    """A CA and a server certificate it signed for localhost and 127.0.0.1, with the openssl command line."""
    openssl = shutil.which("openssl")
    if not openssl:
        pytest.fail("openssl is not installed (scripts/bootstrap installs it): the TLS test makes its CA with it")

    def run(*args):
        subprocess.run([openssl, *args], cwd=directory, check=True, capture_output=True)

    run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
        "-subj", "/CN=e2e-ca", "-keyout", "ca.key", "-out", "ca.crt")
    run("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-subj", "/CN=localhost",
        "-keyout", "server.key", "-out", "server.csr")
    (directory / "server.ext").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    run("x509", "-req", "-days", "2", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
        "-extfile", "server.ext", "-out", "server.crt")


def start_tls_redis(workdir, procs):
    """A redis-server that speaks only TLS, with a certificate from make_certificates(workdir); its port."""
    server = shutil.which("redis-server") or shutil.which("redis-server", path="/usr/bin:/usr/sbin")
    if not server:
        skip_unless_installed("redis-server is not installed (scripts/bootstrap installs it): the shared-store tests need it")
    make_certificates(workdir)
    port = h.free_port()
    proc = h.Process("redis-tls", [server, "--port", "0", "--tls-port", port, "--bind", "127.0.0.1",
                                   "--tls-cert-file", workdir / "server.crt", "--tls-key-file",
                                   workdir / "server.key", "--tls-ca-cert-file", workdir / "ca.crt",
                                   "--tls-auth-clients", "no", "--save", "", "--appendonly", "no",
                                   "--dir", workdir], workdir)
    procs.append(proc)
    h.wait_for_port(port, proc)
    return port


def policy(url, store_extra=""):
    # The same secret on every process names the same buckets in Redis. A
    # generous timeout: these tests count what the store decides, and on a
    # loaded 2-core CI machine a check can miss the default 5 ms and fall back
    # to the node's own tables (the deadline has its own tests).
    return h.policy_yaml() + f"""
store:
  url: {url}
  key_secret: e2e-shared-store-secret-0123456789
  timeout: 500ms
""" + store_extra


def start_daemons(mxlimitd_bin, workdir, procs, url, n=3, with_store=True, extra_policy="", admin=False,
                  store_extra="", wait_connected=True):
    daemons = []
    if admin:
        (workdir / "admin-token").write_text(ADMIN_TOKEN + "\n")
    for i in range(n):
        config = workdir / f"mxlimit-{i}.yaml"
        config.write_text((policy(url, store_extra) if with_store else h.policy_yaml()) + extra_policy)
        argv = [mxlimitd_bin, "--listen", "127.0.0.1:0", "--config", config, "--trusted-proxy", "127.0.0.1/32",
                # One token-hash secret for all: a user is the same user on every node.
                "--secret-file", workdir / "token.secret"]
        if with_store:
            argv += ["--store", url]
        if admin:
            argv += ["--admin-listen", f"unix:{h.feed_socket(workdir, f'admin-{i}.sock')}",
                     "--admin-token-file", workdir / "admin-token"]
        proc = h.Process(f"mxlimitd-{i}", argv, workdir)
        deadline = time.monotonic() + 15
        while "listening" not in proc.stdout() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        lines = proc.stdout().strip().split("\n")
        line = lines[-1]
        assert line.startswith("listening 127.0.0.1:"), proc.logs()
        daemon = h.Mxlimitd(proc, int(line.rsplit(":", 1)[1]), config)
        if admin:
            assert lines[0].startswith("admin unix:"), proc.logs()
            daemon.admin = lines[0].split(" ", 1)[1]
        procs.append(daemon)
        daemons.append(daemon)
    if with_store and wait_connected:
        # Until a daemon's connection is up its checks fall back to its own tables.
        for daemon in daemons:
            h.wait_until(lambda: "mxlimit_store_connected 1" in daemon.get("/_mxlimit/metrics").body.decode(), 10,
                         f"{daemon.address} connected to the store")
    return daemons


def public_rooms(daemon, client):
    return daemon.get("/_mxlimit/auth_request", headers={
        "X-Original-Method": "GET", "X-Original-URI": "/_matrix/client/v3/publicRooms",
        "X-Forwarded-For": client})


def send(daemon, token, txn):
    return daemon.get("/_mxlimit/auth_request", headers={
        "X-Original-Method": "PUT",
        "X-Original-URI": f"/_matrix/client/v3/rooms/!r:example.org/send/m.room.message/{txn}",
        "X-Forwarded-For": BALANCER, "Authorization": f"Bearer {token}"})


def allowed_round_robin(daemons, call, n):
    statuses = [call(daemons[i % len(daemons)], i).status for i in range(n)]
    assert set(statuses) <= {204, 403}, statuses
    return statuses.count(204)


def test_three_daemons_share_one_budget(mxlimitd_bin, workdir, procs, redis):
    port, _ = redis()
    url = f"redis://127.0.0.1:{port}/0"
    daemons = start_daemons(mxlimitd_bin, workdir, procs, url)
    # e2e-public-rooms: burst 3 per client address. Round-robin over three nodes: three in all, not nine.
    assert allowed_round_robin(daemons, lambda d, i: public_rooms(d, "198.51.100.20"), 12) == 3
    # e2e-send: burst 3 per user (the token's hash), whichever node the requests reach.
    assert allowed_round_robin(daemons, lambda d, i: send(d, "syt_shared_token", f"t{i}"), 12) == 3
    # Every node that denied says why, with a wait.
    r = public_rooms(daemons[1], "198.51.100.20")
    assert r.status == 403 and r.headers.get("X-Mxlimit-Policy") == "e2e-public-rooms", r
    assert int(r.headers.get("Retry-After")) > 0, r
    metrics = daemons[0].get("/_mxlimit/metrics").body.decode()
    assert 'mxlimit_store_decisions_total{result="store"}' in metrics, metrics[-2000:]
    assert "mxlimit_store_connected 1" in metrics, metrics[-2000:]


def test_without_store_each_daemon_counts_alone(mxlimitd_bin, workdir, procs):
    """The multiplication the store removes: three nodes, three budgets."""
    daemons = start_daemons(mxlimitd_bin, workdir, procs, "", with_store=False)
    assert allowed_round_robin(daemons, lambda d, i: public_rooms(d, "198.51.100.21"), 12) == 9


def test_redis_restart_costs_no_error(mxlimitd_bin, workdir, procs, redis):
    port, server = redis()
    url = f"redis://127.0.0.1:{port}/0"
    daemons = start_daemons(mxlimitd_bin, workdir, procs, url)
    assert allowed_round_robin(daemons, lambda d, i: public_rooms(d, "198.51.100.22"), 6) == 3
    server.stop(signal.SIGKILL)
    # Down: every node still answers, from its own tables (the fallback); never a 5xx.
    for i in range(30):
        r = public_rooms(daemons[i % 3], f"198.51.100.{100 + i % 5}")
        assert r.status in (204, 403), r
    # Back on the same port, empty: within about a second the nodes share again.
    redis(port)
    time.sleep(1.2)  # Every node's breaker past its open period.

    def sharing(d):
        metrics = d.get("/_mxlimit/metrics").body.decode()
        return "mxlimit_store_connected 1" in metrics and "mxlimit_store_breaker_open 0" in metrics

    # A node learns that its connection is back on its next request; a request
    # of an address outside the test's ones lets each find out.
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not all(sharing(d) for d in daemons):
        for d in daemons:
            public_rooms(d, "198.51.100.99")
        time.sleep(0.1)
    assert all(sharing(d) for d in daemons), "a node did not reconnect within 5 s"
    assert allowed_round_robin(daemons, lambda d, i: public_rooms(d, "198.51.100.23"), 12) == 3


def test_a_tier_set_on_one_daemon_holds_on_all_three(mxlimitd_bin, workdir, procs, redis):
    """Runtime tiers with a store are the store's (docs/shared-state.md, "Runtime tiers"): set through one
    daemon's admin API, listed and applied by all three within about two seconds; cleared likewise."""
    from test_admin import admin
    port, _ = redis()
    url = f"redis://127.0.0.1:{port}/0"
    tiers = "\ntiers:\n  bridge: { scale: 10 }\n"
    daemons = start_daemons(mxlimitd_bin, workdir, procs, url, extra_policy=tiers, admin=True)
    status, body = admin(daemons[0], "PUT", "/_mxlimit/admin/v1/tiers/networks/198.51.100.30",
                         {"tier": "bridge"}, token=ADMIN_TOKEN)
    assert status == 200, body

    def listed(d):
        status, body = admin(d, "GET", "/_mxlimit/admin/v1/tiers", token=ADMIN_TOKEN)
        return [(a["subject"], a["tier"]) for a in body["assignments"]]

    for d in daemons:
        h.wait_until(lambda: listed(d) == [("198.51.100.30/32", "bridge")], 5, f"{d.address} has the tier")
    # e2e-public-rooms at scale 10: a burst of 30 shared by the three, against 3 for an address outside the tier.
    # (6 a minute at scale 10 is one a second: a slow run may refill one or two.)
    assert 30 <= allowed_round_robin(daemons, lambda d, i: public_rooms(d, "198.51.100.30"), 45) <= 32
    assert allowed_round_robin(daemons, lambda d, i: public_rooms(d, "198.51.100.31"), 6) == 3
    status, body = admin(daemons[2], "DELETE", "/_mxlimit/admin/v1/tiers/networks/198.51.100.30",
                         token=ADMIN_TOKEN)
    assert status == 200, body
    for d in daemons:
        h.wait_until(lambda: listed(d) == [], 5, f"{d.address} dropped the tier")
    assert 'msg="shared tier assignments applied"' in daemons[1].proc.stderr()


def test_over_tls_the_daemons_share_budgets_and_tiers(mxlimitd_bin, workdir, procs):
    """rediss:// (issue #35, item 1): a Redis that only speaks TLS, the daemons verifying it against the CA of
    store.tls.ca_file; checks and runtime tiers (on their own connection) both go through it."""
    from test_admin import admin
    port = start_tls_redis(workdir, procs)
    url = f"rediss://localhost:{port}/0"
    tiers = "\ntiers:\n  bridge: { scale: 10 }\n"
    daemons = start_daemons(mxlimitd_bin, workdir, procs, url, extra_policy=tiers, admin=True,
                            store_extra=f"  tls:\n    ca_file: {workdir / 'ca.crt'}\n")
    assert allowed_round_robin(daemons, lambda d, i: public_rooms(d, "198.51.100.40"), 12) == 3
    status, body = admin(daemons[0], "PUT", "/_mxlimit/admin/v1/tiers/networks/198.51.100.41",
                         {"tier": "bridge"}, token=ADMIN_TOKEN)
    assert status == 200, body
    for d in daemons:
        h.wait_until(lambda: [(a["subject"], a["tier"]) for a in
                              admin(d, "GET", "/_mxlimit/admin/v1/tiers", token=ADMIN_TOKEN)[1]["assignments"]]
                     == [("198.51.100.41/32", "bridge")], 5, f"{d.address} has the tier")
    assert 30 <= allowed_round_robin(daemons, lambda d, i: public_rooms(d, "198.51.100.41"), 45) <= 32


def test_a_store_the_ca_did_not_sign_is_refused_and_checks_fall_back(mxlimitd_bin, workdir, procs):
    """The server is always verified: with another CA the daemon never connects, says why, and decides alone."""
    port = start_tls_redis(workdir, procs)
    other = workdir / "other"
    other.mkdir()
    make_certificates(other)
    [daemon] = start_daemons(mxlimitd_bin, workdir, procs, f"rediss://127.0.0.1:{port}", n=1,
                             store_extra=f"  tls:\n    ca_file: {other / 'ca.crt'}\n", wait_connected=False)
    h.wait_until(lambda: "certificate" in daemon.proc.stderr(), 5, "the refused certificate is logged")
    assert "mxlimit_store_connected 0" in daemon.get("/_mxlimit/metrics").body.decode()
    statuses = [public_rooms(daemon, "198.51.100.42").status for _ in range(5)]
    assert statuses == [204, 204, 204, 403, 403], statuses


def redis_cli_args(port, *args):
    cli = shutil.which("redis-cli")
    out = subprocess.run([cli, "-p", str(port), *args], capture_output=True, text=True, timeout=5)
    return out.stdout.split()


def test_behind_sentinel_the_daemons_follow_a_failover(mxlimitd_bin, workdir, procs, redis):
    """redis-sentinel:// (issue #35, item 2): two daemons find the primary through three Sentinels; the primary is
    killed; within seconds both share buckets on the promoted replica, and a tier set through the admin API after
    the failover reaches both."""
    from test_admin import admin
    if not shutil.which("redis-cli"):
        skip_unless_installed("redis-cli is not installed (scripts/bootstrap installs redis-tools)")
    server = shutil.which("redis-server") or shutil.which("redis-server", path="/usr/bin:/usr/sbin")
    primary_port, primary = redis()
    replica_port = h.free_port()
    replica = h.Process("redis-replica", [server, "--port", replica_port, "--bind", "127.0.0.1", "--save", "",
                                          "--appendonly", "no", "--dir", workdir, "--replicaof", "127.0.0.1",
                                          primary_port], workdir)
    procs.append(replica)
    h.wait_for_port(replica_port, replica)
    sentinel_ports = []
    for i in range(3):
        port = h.free_port()
        conf = workdir / f"sentinel-{i}.conf"
        conf.write_text(f"port {port}\nbind 127.0.0.1\ndir {workdir}\n"
                        f"sentinel monitor mymaster 127.0.0.1 {primary_port} 2\n"
                        "sentinel down-after-milliseconds mymaster 400\n"
                        "sentinel failover-timeout mymaster 4000\n")
        proc = h.Process(f"sentinel-{i}", [server, conf, "--sentinel"], workdir)
        procs.append(proc)
        h.wait_for_port(port, proc)
        sentinel_ports.append(port)

    def settled():
        for port in sentinel_ports:
            fields = redis_cli_args(port, "SENTINEL", "master", "mymaster")
            info = dict(zip(fields[::2], fields[1::2]))
            if info.get("num-slaves") != "1" or info.get("num-other-sentinels") != "2":
                return False
        return True

    h.wait_until(settled, 20, "the Sentinels know the replica and each other")
    url = "redis-sentinel://" + ",".join(f"127.0.0.1:{p}" for p in sentinel_ports) + "/mymaster"
    tiers = "\ntiers:\n  bridge: { scale: 10 }\n"
    daemons = start_daemons(mxlimitd_bin, workdir, procs, url, n=2, extra_policy=tiers, admin=True)
    assert allowed_round_robin(daemons, lambda d, i: public_rooms(d, "198.51.100.50"), 8) == 3

    primary.stop(signal.SIGKILL, timeout=5)
    h.wait_until(lambda: redis_cli_args(sentinel_ports[0], "SENTINEL", "get-master-addr-by-name", "mymaster")
                 == ["127.0.0.1", str(replica_port)], 20, "the Sentinels promote the replica")
    # Meanwhile every check had an answer (the fallback's). Then each daemon's checks go to the new primary
    # again: the Sentinels' CLIENT KILL on the promoted server, and the breaker's probe, may take a moment more.
    def store_decisions(d):
        for line in d.get("/_mxlimit/metrics").body.decode().split("\n"):
            if line.startswith('mxlimit_store_decisions_total{result="store"}'):
                return int(line.split()[-1])
        return 0

    def decided_by_store(d):
        before = store_decisions(d)
        public_rooms(d, "198.51.100.59")
        return store_decisions(d) > before

    for d in daemons:
        h.wait_until(lambda: decided_by_store(d), 5, f"{d.address} decides with the new primary")
    # On the new primary the two share one budget again.
    assert allowed_round_robin(daemons, lambda d, i: public_rooms(d, "198.51.100.51"), 8) == 3
    status, body = admin(daemons[0], "PUT", "/_mxlimit/admin/v1/tiers/networks/198.51.100.52",
                         {"tier": "bridge"}, token=ADMIN_TOKEN)
    assert status == 200, body
    for d in daemons:
        h.wait_until(lambda: [(a["subject"], a["tier"]) for a in
                              admin(d, "GET", "/_mxlimit/admin/v1/tiers", token=ADMIN_TOKEN)[1]["assignments"]]
                     == [("198.51.100.52/32", "bridge")], 5, f"{d.address} has the tier")


def test_on_a_cluster_the_daemons_share_budgets_and_tiers(mxlimitd_bin, workdir, procs):
    """redis-cluster:// (issue #35, item 3): three daemons given the seeds of a three-primary Redis Cluster share
    one budget per address and per user, whichever primaries those buckets live on, and a tier set through one
    daemon reaches all three (its hash and version share one slot)."""
    from test_admin import admin
    cli = shutil.which("redis-cli")
    server = shutil.which("redis-server") or shutil.which("redis-server", path="/usr/bin:/usr/sbin")
    if not cli or not server:
        skip_unless_installed("redis-server and redis-cli are not installed (scripts/bootstrap installs them)")
    ports = []
    for i in range(3):
        port = h.free_port()
        node_dir = workdir / f"cluster-{i}"
        node_dir.mkdir()
        proc = h.Process(f"cluster-{i}", [server, "--port", port, "--bind", "127.0.0.1", "--save", "",
                                          "--appendonly", "no", "--dir", node_dir, "--cluster-enabled", "yes",
                                          "--cluster-port", h.free_port(), "--cluster-node-timeout", "1000"],
                         workdir)
        procs.append(proc)
        h.wait_for_port(port, proc)
        ports.append(port)
    subprocess.run([cli, "--cluster", "create", *[f"127.0.0.1:{p}" for p in ports], "--cluster-yes"],
                   check=True, capture_output=True, timeout=30)
    h.wait_until(lambda: all("cluster_state:ok" in " ".join(redis_cli_args(p, "CLUSTER", "INFO")) for p in ports),
                 20, "the cluster is up")
    url = "redis-cluster://" + ",".join(f"127.0.0.1:{p}" for p in ports)
    tiers = "\ntiers:\n  bridge: { scale: 10 }\n"
    daemons = start_daemons(mxlimitd_bin, workdir, procs, url, extra_policy=tiers, admin=True)
    # Per address and per user, each several subjects: their buckets land on different primaries.
    for k in range(3):
        assert allowed_round_robin(daemons, lambda d, i: public_rooms(d, f"198.51.100.{60 + k}"), 12) == 3
        assert allowed_round_robin(daemons, lambda d, i: send(d, f"syt_cluster_token_{k}", f"t{i}"), 12) == 3
    status, body = admin(daemons[0], "PUT", "/_mxlimit/admin/v1/tiers/networks/198.51.100.70",
                         {"tier": "bridge"}, token=ADMIN_TOKEN)
    assert status == 200, body
    for d in daemons:
        h.wait_until(lambda: [(a["subject"], a["tier"]) for a in
                              admin(d, "GET", "/_mxlimit/admin/v1/tiers", token=ADMIN_TOKEN)[1]["assignments"]]
                     == [("198.51.100.70/32", "bridge")], 5, f"{d.address} has the tier")
    assert 30 <= allowed_round_robin(daemons, lambda d, i: public_rooms(d, "198.51.100.70"), 45) <= 32
    metrics = daemons[1].get("/_mxlimit/metrics").body.decode()
    assert "mxlimit_store_connected 1" in metrics, metrics[-2000:]
    # The checks went to every primary: forty more addresses make one that took none unlikely (3 x (2/3)^47).
    for k in range(40):
        public_rooms(daemons[k % 3], f"198.51.101.{k}")
    for p in ports:
        stats = " ".join(redis_cli_args(p, "INFO", "commandstats"))
        assert "cmdstat_evalsha:calls=" in stats, (p, stats)
