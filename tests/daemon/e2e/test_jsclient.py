"""A real client: matrix-js-sdk (from npm, pinned in jsclient/package-lock.json) sends messages through nginx +
mxlimitd to the stub homeserver until it is rate-limited; its own rate-limit handling must wait at least the
retry_after_ms the server sent, and then succeed.

matrix-js-sdk 37 sends m.room.message events through the MatrixScheduler that createClient installs (no
startClient needed); on a 429 the scheduler's RETRY_BACKOFF_RATELIMIT waits `Retry-After` (or, without the header,
retry_after_ms) and sends the same transaction again. jsclient/send_messages.mjs records every exchange.

The npm install is done once per lockfile into MXLIMIT_E2E_SCRATCH/jsclient (`npm ci`, network to the npm
registry), with npm's cache beside it, so reruns are fast and the source tree stays clean.
"""

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import e2e_harness as h

JSCLIENT_SOURCE = Path(__file__).resolve().parent / "jsclient"
MESSAGES = 6  # e2e-send: 3 at once per token, then one every 2 s, so about 3 are limited once each
ROOM_ID = "!e2e:example.org"
SEND = re.compile(r"/_matrix/client/v3/rooms/[^/]+/send/m\.room\.message/([^/?]+)")


@pytest.fixture(scope="session")
def node_bin():
    node = shutil.which("node")
    if not node:
        pytest.fail("node is not installed, and this test runs matrix-js-sdk with it: install nodejs (>= 20) and "
                    "npm (scripts/bootstrap)", pytrace=False)
    version = subprocess.run([node, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    major = int(version.lstrip("v").split(".")[0])
    if major < 20:
        pytest.fail(f"node {version} is too old for matrix-js-sdk 37.5 (needs >= 20)", pytrace=False)
    return node


@pytest.fixture(scope="session")
def jsclient_dir(scratch_root, node_bin):
    """jsclient/ installed with `npm ci` under the scratch root; reinstalled only when the lockfile changes."""
    npm = shutil.which("npm")
    if not npm:
        pytest.fail("npm is not installed: install npm (scripts/bootstrap)", pytrace=False)
    target = scratch_root / "jsclient"
    target.mkdir(parents=True, exist_ok=True)
    manifest = (JSCLIENT_SOURCE / "package.json").read_bytes()
    lock = (JSCLIENT_SOURCE / "package-lock.json").read_bytes()
    digest = hashlib.sha256(manifest + b"\0" + lock).hexdigest()
    stamp = target / "installed.sha256"
    with open(target / ".lock", "w") as lock_file:
        fcntl.flock(lock_file, fcntl.LOCK_EX)  # two runs sharing a build tree install once
        if not (stamp.exists() and stamp.read_text() == digest and (target / "node_modules").is_dir()):
            shutil.rmtree(target / "node_modules", ignore_errors=True)
            stamp.unlink(missing_ok=True)
            (target / "package.json").write_bytes(manifest)
            (target / "package-lock.json").write_bytes(lock)
            env = dict(os.environ, npm_config_cache=str(scratch_root / "npm-cache"), npm_config_update_notifier="false")
            done = subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=target, env=env,
                                  capture_output=True, text=True, timeout=300)
            if done.returncode != 0:
                pytest.fail(f"npm ci failed in {target} (status {done.returncode}); it needs the npm registry\n"
                            f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}", pytrace=False)
            stamp.write_text(digest)
    shutil.copyfile(JSCLIENT_SOURCE / "send_messages.mjs", target / "send_messages.mjs")
    return target


@pytest.fixture
def start_nginx(nginx_bin, workdir, procs):
    def start(daemon, stub):
        proxy = h.start_nginx(nginx_bin, workdir, "nginx-server-fail-closed", daemon.address, stub.port)
        procs.append(proxy)
        return proxy

    return start


def test_matrix_js_sdk_waits_retry_after_ms_and_then_delivers(jsclient_dir, node_bin, mxlimitd, stub, start_nginx,
                                                              workdir):
    daemon = mxlimitd()
    proxy = start_nginx(daemon, stub)
    report_path = workdir / "jsclient-report.json"
    argv = [node_bin, "send_messages.mjs", "--base-url", f"http://127.0.0.1:{proxy.port}",
            "--token", "tok-jsclient", "--user-id", "@alice:example.org", "--room-id", ROOM_ID,
            "--count", str(MESSAGES), "--out", str(report_path)]
    run = subprocess.run(argv, cwd=jsclient_dir, capture_output=True, text=True, timeout=60)
    (workdir / "node.stdout").write_text(run.stdout)
    (workdir / "node.stderr").write_text(run.stderr)
    assert run.returncode == 0, f"node exited {run.returncode}\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    report = json.loads(report_path.read_text())
    exchanges, results = report["exchanges"], report["results"]

    # Every message was delivered, each once, with the homeserver's event ID.
    assert all(r["ok"] for r in results), results
    sends_seen = [r for r in stub.received if r.method == "PUT" and SEND.search(r.path)]
    txns_seen = [SEND.search(r.path).group(1) for r in sends_seen]
    assert len(txns_seen) == MESSAGES and len(set(txns_seen)) == MESSAGES, txns_seen
    assert sorted(r["eventId"] for r in results) == sorted(r.response["event_id"] for r in sends_seen)

    # It was limited, and each 429 was the Matrix one.
    sends = [e for e in exchanges if e["method"] == "PUT" and SEND.search(e["url"])]
    assert all("error" not in e for e in sends), sends
    limited = [e for e in sends if e["status"] == 429]
    assert limited, f"never rate-limited: {sends}"
    assert {e["status"] for e in sends} == {200, 429}, sends
    for e in limited:
        assert e["body"]["errcode"] == "M_LIMIT_EXCEEDED", e
        assert isinstance(e["body"].get("retry_after_ms"), int) and e["body"]["retry_after_ms"] > 0, e
        assert e["retryAfter"] is not None and e["retryAfter"].isdigit(), e

    # The SDK waited at least retry_after_ms before sending the same transaction again, and that try passed.
    waits = []
    for i, e in enumerate(sends):
        if e["status"] != 429:
            continue
        txn = SEND.search(e["url"]).group(1)
        retry = next((later for later in sends[i + 1:] if SEND.search(later["url"]).group(1) == txn), None)
        assert retry is not None, f"transaction {txn} was limited and never sent again"
        waited = retry["sentMs"] - e["answeredMs"]
        waits.append((txn, e["body"]["retry_after_ms"], round(waited)))
        assert waited >= e["body"]["retry_after_ms"], (
            f"transaction {txn}: retried {waited:.0f} ms after a 429 that said retry_after_ms "
            f"{e['body']['retry_after_ms']}")
        assert retry["status"] == 200, f"transaction {txn}: the retry after the wait was denied again: {retry}"
    # The denied tries never reached the homeserver: it saw one PUT per message.
    assert len(sends) == MESSAGES + len(limited)
    print("waits (txn, retry_after_ms, waited ms):", waits)
