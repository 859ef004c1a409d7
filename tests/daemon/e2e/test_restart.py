"""mxlimitd restarted with --state-dir (docs/mxlimitd.md, "State across restarts"), behind nginx as
docs/deploy-nginx.md has it, with the built-in policies on: a client drained before a restart is still denied after
it; runtime tiers come back; a kill -9 loses what the docs say; a broken state file is a warning, not a refused
start."""

import json
import signal
import time

import pytest

import e2e_harness as h
from test_admin import API, TOKEN, admin, logins_allowed, nginx, tiered_policy  # noqa: F401 (nginx: a fixture)

DOC = "mxlimitd.md"
BLOCK = "mxlimitd-state-command"


@pytest.fixture
def start(mxlimitd_bin, workdir, procs):
    """start(listen="127.0.0.1:0") -> Mxlimitd with the documented --state-dir command line."""
    (workdir / "admin-token").write_text(TOKEN + "\n")

    def run(listen="127.0.0.1:0"):
        daemon = h.start_mxlimitd(mxlimitd_bin, workdir, tiered_policy(), doc_block=BLOCK, doc=DOC, listen=listen)
        procs.append(daemon)
        return daemon

    return run


def restart(start, daemon, sig):
    """Stops `daemon` with `sig` and starts it again on the same port (nginx keeps pointing at it)."""
    if sig == signal.SIGKILL:
        daemon.kill()
    else:
        assert daemon.proc.stop(sig) == 0, daemon.proc.logs()
    daemon.killed = True  # stopped on purpose; the new one is checked at teardown
    return start(listen=daemon.address)


def test_sigterm_mid_attack_keeps_the_attacker_denied(start, nginx, workdir):
    daemon = start()
    proxy = nginx(daemon)
    # The attacker spends login-per-ip's burst of 5; a bystander one login.
    assert logins_allowed(proxy, "127.0.0.5") == 5
    assert logins_allowed(proxy, "127.0.0.7", limit=1) == 1
    status, body = admin(daemon, "PUT", f"{API}/tiers/networks/127.0.0.6", {"tier": "bridge"})
    assert status == 200, body
    daemon = restart(start, daemon, signal.SIGTERM)
    log = daemon.proc.stderr()
    assert 'msg="buckets restored"' in log, log
    assert 'msg="tier assignments restored"' in log and "restored=1" in log, log
    # Still denied after the restart; the bystander has 4 left; a new client has 5.
    assert logins_allowed(proxy, "127.0.0.5") == 0
    assert logins_allowed(proxy, "127.0.0.7") == 4
    assert logins_allowed(proxy, "127.0.0.8") == 5
    status, body = admin(daemon, "GET", f"{API}/tiers")
    assert status == 200, body
    assert [(a["subject"], a["tier"]) for a in body["assignments"]] == [("127.0.0.6/32", "bridge")], body


def test_kill_9_loses_the_charges_since_the_last_snapshot_and_no_tier(start, nginx, workdir):
    daemon = start()
    proxy = nginx(daemon)
    status, body = admin(daemon, "PUT", f"{API}/tiers/users/%40bot%3Aexample.org",
                         {"tier": "bridge", "expires_in_ms": 3_600_000})
    assert status == 200, body
    assert logins_allowed(proxy, "127.0.0.5") == 5
    # No snapshot was taken yet (the interval is 60 s): a kill -9 loses these charges, as documented.
    daemon = restart(start, daemon, signal.SIGKILL)
    assert 'msg="no bucket snapshot; starting with empty tables"' in daemon.proc.stderr()
    assert logins_allowed(proxy, "127.0.0.5") == 5
    # The tier assignment was written when it was made.
    status, body = admin(daemon, "GET", f"{API}/tiers")
    assert [(a["subject"], a["tier"]) for a in body["assignments"]] == [("@bot:example.org", "bridge")], body
    assert 0 < body["assignments"][0]["expires_in_ms"] <= 3_600_000, body
    # Now a clean stop: its snapshot holds the second attack, and a later kill -9 goes back to it.
    daemon = restart(start, daemon, signal.SIGTERM)
    assert logins_allowed(proxy, "127.0.0.5") == 0
    daemon = restart(start, daemon, signal.SIGKILL)
    assert logins_allowed(proxy, "127.0.0.5") == 0


def test_a_broken_state_dir_is_a_warning_and_a_fresh_start(start, nginx, workdir):
    state = workdir / "state"
    state.mkdir(mode=0o700)
    (state / "buckets.snapshot").write_bytes(b"MXLSNAP\x00" + b"\xff" * 1000)
    lines = [json.dumps({"kind": "user", "subject": "@a:example.org", "tier": "bridge"}),
             "{not json", json.dumps({"kind": "user", "subject": "@b:example.org", "tier": "gold"}),
             json.dumps({"kind": "network", "subject": "10.0.0.0/8", "tier": "suspect", "expires_at_ms": 1}),
             "x" * 10000]
    (state / "tiers.jsonl").write_text("\n".join(lines) + "\n")
    daemon = start()
    log = daemon.proc.stderr()
    assert 'level=warn msg="bucket snapshot not restored; starting with empty tables"' in log, log
    assert log.count('msg="tier assignment not restored"') == 3, log
    assert "restored=1 expired=1" in log, log
    proxy = nginx(daemon)
    assert logins_allowed(proxy, "127.0.0.5") == 5
    status, body = admin(daemon, "GET", f"{API}/tiers")
    assert [(a["subject"], a["tier"]) for a in body["assignments"]] == [("@a:example.org", "bridge")], body
    # A clean stop writes a good snapshot over the broken one.
    daemon = restart(start, daemon, signal.SIGTERM)
    assert 'msg="buckets restored"' in daemon.proc.stderr()
    assert logins_allowed(proxy, "127.0.0.5") == 0
