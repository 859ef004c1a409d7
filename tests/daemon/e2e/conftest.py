"""Fixtures of the mxlimitd end-to-end tests: the binaries under test, a scratch directory per test, the stub
homeserver, and mxlimitd / nginx / caddy processes that are stopped by PID whatever happens.

Environment:
  MXLIMITD_BIN         the mxlimitd binary (required; ctest passes $<TARGET_FILE:mxlimitd>)
  MXLIMIT_E2E_SCRATCH  where each test's configs and logs go (default: a fresh temporary directory); they are kept,
                       so the logs of a failed run can be read afterwards
A missing nginx, caddy, node or npm fails the test that needs it: CI installs them (scripts/bootstrap).
"""

import os
import re
import shutil
import signal
import sys
import tempfile
from pathlib import Path

import pytest

sys.dont_write_bytecode = True  # nothing in the source tree
sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as h  # noqa: E402
from stub_homeserver import StubHomeserver  # noqa: E402


def _tool(name, env_var=None, extra_dirs=("/usr/sbin", "/usr/local/sbin")):
    path = os.environ.get(env_var) if env_var else None
    if not path:
        path = shutil.which(name) or next(
            (str(Path(d) / name) for d in extra_dirs if os.access(Path(d) / name, os.X_OK)), None)
    if not path or not os.access(path, os.X_OK):
        pytest.fail(f"{name} is not installed, and this end-to-end test runs the real one: install it "
                    f"(scripts/bootstrap installs nginx, caddy, nodejs and npm from Debian's packages)",
                    pytrace=False)
    return path


@pytest.fixture(scope="session")
def mxlimitd_bin():
    path = os.environ.get("MXLIMITD_BIN")
    if not path:
        pytest.fail("MXLIMITD_BIN is not set: run these tests through ctest (daemon.e2e.*) or set it to the "
                    "mxlimitd binary", pytrace=False)
    if not os.access(path, os.X_OK):
        pytest.fail(f"MXLIMITD_BIN={path} is not an executable file: build the mxlimitd target first",
                    pytrace=False)
    return path


@pytest.fixture(scope="session")
def nginx_bin():
    return _tool("nginx", "MXLIMIT_E2E_NGINX")


@pytest.fixture(scope="session")
def caddy_bin():
    return _tool("caddy", "MXLIMIT_E2E_CADDY")


@pytest.fixture(scope="session")
def scratch_root():
    root = os.environ.get("MXLIMIT_E2E_SCRATCH")
    if root:
        Path(root).mkdir(parents=True, exist_ok=True)
        return Path(root)
    return Path(tempfile.mkdtemp(prefix="mxlimit-e2e-"))


@pytest.fixture
def workdir(request, scratch_root):
    """This test's own directory under the scratch root, emptied first."""
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.nodeid.split("/")[-1])
    path = scratch_root / name
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


@pytest.fixture
def procs(request):
    """Every process a test starts; on teardown each is stopped by its PID, last started first. mxlimitd must
    exit 0 on SIGTERM (it drains, then exits) unless the test killed it."""
    started = []
    request.node.mxlimit_procs = started
    yield started
    problems = []
    for item in reversed(started):
        proc = item.proc if hasattr(item, "proc") else item
        if proc.poll() is not None:
            if isinstance(item, h.Mxlimitd) and not item.killed:
                problems.append(f"mxlimitd exited on its own during the test (status {proc.returncode})\n"
                                + proc.logs())
            continue
        status = proc.stop(signal.SIGTERM)
        if isinstance(item, h.Mxlimitd) and status != 0:
            problems.append(f"mxlimitd did not exit 0 on SIGTERM (status {status})\n" + proc.logs())
    if problems:
        pytest.fail("\n\n".join(problems), pytrace=False)


@pytest.fixture
def stub():
    server = StubHomeserver()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def mxlimitd(mxlimitd_bin, workdir, procs):
    """start(policy_text=None, doc_block="mxlimitd-command", doc="deploy-nginx.md") -> Mxlimitd, stopped on
    teardown."""

    def start(policy_text=None, doc_block="mxlimitd-command", doc="deploy-nginx.md"):
        daemon = h.start_mxlimitd(mxlimitd_bin, workdir, policy_text or h.policy_yaml(), doc_block=doc_block,
                                  doc=doc)
        procs.append(daemon)
        return daemon

    return start


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """On a failure, the logs of every process the test started go into the report."""
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        for item_proc in getattr(item, "mxlimit_procs", []):
            proc = item_proc.proc if hasattr(item_proc, "proc") else item_proc
            report.sections.append((f"{proc.name} (pid {proc.pid}) logs", proc.logs()))
