"""Parses what write_expositions wrote with the parsers a scraper uses.

    check_expositions.py parsers WRITER WORKDIR   prometheus_client, text and
                                                  OpenMetrics
    check_expositions.py promtool WRITER WORKDIR  promtool check metrics

Runs WRITER WORKDIR first. A missing parser or promtool is a failure, never a
skip: scripts/bootstrap installs them (python3-prometheus-client,
prometheus). Run it with Debian's /usr/bin/python3, which sees the Debian
package.
"""

import os
import shutil
import subprocess
import sys

FAMILIES = {
    # name as the text parser reports it: (type, name in OpenMetrics)
    "mxlimit_table_size": ("gauge", "mxlimit_table_size"),
    "mxlimit_table_capacity": ("gauge", "mxlimit_table_capacity"),
    "mxlimit_table_admissions": ("counter", "mxlimit_table_admissions"),
    "mxlimit_table_evictions": ("counter", "mxlimit_table_evictions"),
    "mxlimit_table_hits": ("counter", "mxlimit_table_hits"),
    "mxlimit_leases_released": ("counter", "mxlimit_leases_released"),
    "mxlimit_leases_expired": ("counter", "mxlimit_leases_expired"),
    "mxlimit_exempt_requests": ("counter", "mxlimit_exempt_requests"),
    "mxlimit_policy_info": ("gauge", "mxlimit_policy"),
    "mxlimit_policy_requests": ("counter", "mxlimit_policy_requests"),
    "mxlimit_policy_never_denials": ("counter", "mxlimit_policy_never_denials"),
    "mxlimit_route_denials": ("counter", "mxlimit_route_denials"),
    "mxlimit_fallback_decisions": ("counter", "mxlimit_fallback_decisions"),
}
CASES = ["limiter", "sharded", "names", "hostile"]


class Failure(Exception):
    pass


def expect(condition, message):
    if not condition:
        raise Failure(message)


def read(workdir, name):
    with open(os.path.join(workdir, name), encoding="utf-8") as f:
        return f.read()


def samples(families):
    """{(sample name, sorted labels): value} over every family."""
    out = {}
    for family in families:
        for s in family.samples:
            key = (s.name, tuple(sorted(s.labels.items())))
            expect(key not in out, f"sample {key} appears twice")
            out[key] = s.value
    return out


def parse_text(text, where):
    from prometheus_client.parser import text_string_to_metric_families

    families = list(text_string_to_metric_families(text))
    names = [f.name for f in families]
    # A family split by another's samples comes back as several families
    # of one name: the bug this test exists for.
    expect(len(names) == len(set(names)), f"{where}: families repeat: {names}")
    return families


def parse_openmetrics(text, where):
    from prometheus_client.openmetrics.parser import (
        text_string_to_metric_families,
    )

    try:
        return list(text_string_to_metric_families(text))
    except ValueError as e:
        raise Failure(f"{where}: OpenMetrics parser: {e}") from e


def check_case(workdir, case):
    text = read(workdir, case + ".prom")
    om = read(workdir, case + ".om")
    expect(text.endswith("\n") and "# EOF" not in text,
           f"{case}.prom: must end with a newline and hold no # EOF")
    expect(om.endswith("# EOF\n"), f"{case}.om: must end with # EOF")
    text_families = parse_text(text, case + ".prom")
    om_families = parse_openmetrics(om, case + ".om")
    by_name = {f.name: f for f in text_families}
    om_by_name = {f.name: f for f in om_families}
    for name, (kind, om_name) in FAMILIES.items():
        expect(name in by_name, f"{case}.prom: no family {name}")
        expect(by_name[name].type == kind,
               f"{case}.prom: {name} is {by_name[name].type}, not {kind}")
        expect(om_name in om_by_name, f"{case}.om: no family {om_name}")
    expect(om_by_name["mxlimit_policy"].type == "info",
           f"{case}.om: mxlimit_policy is not an info family")
    expect(set(by_name) == set(FAMILIES),
           f"{case}.prom: unexpected families {set(by_name) - set(FAMILIES)}")
    # Both renderings say the same thing, sample for sample.
    text_samples = samples(text_families)
    om_samples = samples(om_families)
    expect(text_samples == om_samples,
           f"{case}: text and OpenMetrics samples differ:\n"
           f"  only text: {set(text_samples) - set(om_samples)}\n"
           f"  only OpenMetrics: {set(om_samples) - set(text_samples)}")
    return text_samples


def value(samples_, name, **labels):
    key = (name, tuple(sorted(labels.items())))
    expect(key in samples_, f"no sample {key}")
    return samples_[key]


def check_parsers(workdir):
    try:
        import prometheus_client  # noqa: F401
    except ImportError as e:
        raise Failure(
            f"cannot import prometheus_client ({e}); run scripts/bootstrap "
            "(Debian python3-prometheus-client) and use /usr/bin/python3"
        ) from e
    found = {case: check_case(workdir, case) for case in CASES}

    lone, sharded = found["limiter"], found["sharded"]
    # The same traffic, decided alike: every counter but the tables'.
    def counters(s):
        return {k: v for k, v in s.items()
                if not k[0].startswith("mxlimit_table_")}
    expect(counters(lone) == counters(sharded),
           "a ShardedLimiter counts the traffic differently from a Limiter")
    expect(value(lone, "mxlimit_table_capacity", table="ip") ==
           value(sharded, "mxlimit_table_capacity", table="ip"),
           "a ShardedLimiter's capacity is not the configured one")
    # What write_expositions.cc's traffic must show.
    expect(value(lone, "mxlimit_policy_requests_total", policy="login-strict",
                 scope="ip", result="denied") == 3, "login-strict denials")
    expect(value(lone, "mxlimit_policy_never_denials_total",
                 policy="blocked-directory", scope="ip") == 5, "never denials")
    expect(value(lone, "mxlimit_route_denials_total",
                 route="/_matrix/client/v3/login") == 3, "route denials")
    expect(value(lone, "mxlimit_fallback_decisions_total",
                 result="denied") == 2, "fallback denials")
    expect(value(lone, "mxlimit_fallback_decisions_total",
                 result="allowed") == 3, "fallback allowed")
    expect(value(lone, "mxlimit_exempt_requests_total") == 5, "exempt")
    expect(value(lone, "mxlimit_policy_requests_total", policy="shadow-sync",
                 scope="user", result="shadow_denied") == 4, "shadow denials")
    expect(value(lone, "mxlimit_policy_requests_total", policy="login-per-network",
                 scope="ip", result="denied_by_other") == 3, "denied by another policy")
    expect(value(lone, "mxlimit_policy_info", policy="login-strict",
                 layer="route", scope="ip", mode="enforce", builtin="false",
                 rate="2/hour", burst="2") == 1, "policy info")
    expect(value(lone, "mxlimit_policy_info", policy="shadow-sync",
                 layer="observe", scope="user", mode="shadow",
                 builtin="false", rate="1/hour", burst="1") == 1,
           "shadow policy info")
    expect(value(lone, "mxlimit_policy_info", policy="blocked-directory",
                 layer="route", scope="ip", mode="enforce", builtin="false",
                 rate="blocked") == 1, "blocked policy info")

    # Label values come back exactly as written.
    names = found["names"]
    long_name = "n" * 100
    for name in ["a", "..", "-:-", "0", "_", "x.y:z-w_v", long_name]:
        value(names, "mxlimit_policy_requests_total", policy=name,
              scope="ip", result="allowed")
    value(names, "mxlimit_policy_info", policy="free", layer="route",
          scope="user", mode="enforce", builtin="false", rate="unlimited")
    hostile = found["hostile"]
    evil = 'evil"} 1\n# TYPE injected counter\\'
    expect(value(hostile, "mxlimit_policy_requests_total", policy=evil,
                 scope="ip", result="allowed") == 7, "escaped policy name")
    expect(value(hostile, "mxlimit_policy_info", policy=evil,
                 layer='lay\\er"\n', scope="ip", mode="enforce",
                 builtin="false", rate="10/minute", burst="3") == 1,
           "escaped layer")
    expect(value(hostile, "mxlimit_route_denials_total",
                 route='/_matrix/{a}"b\\c\nd') == 4, "escaped route")

    daemon = os.path.join(workdir, "daemon.prom")
    if os.path.exists(daemon):
        families = parse_text(read(workdir, "daemon.prom"), "daemon.prom")
        expect(any(f.name.startswith("mxlimitd_") for f in families),
               "daemon.prom: no mxlimitd_ family")
        # With a store, its families sit between the limiter's and the
        # daemon's; every name once.
        names = [f.name for f in families]
        expect("mxlimit_store_decisions" in names,
               "daemon.prom: no mxlimit_store_decisions family")
        expect(len(names) == len(set(names)),
               "daemon.prom: a family appears twice")


def check_promtool(workdir):
    promtool = shutil.which("promtool")
    expect(promtool is not None,
           "promtool not found; run scripts/bootstrap (Debian prometheus)")
    files = [c + ".prom" for c in CASES]
    if os.path.exists(os.path.join(workdir, "daemon.prom")):
        files.append("daemon.prom")
    for name in files:
        with open(os.path.join(workdir, name), "rb") as f:
            run = subprocess.run([promtool, "check", "metrics"], stdin=f,
                                 capture_output=True, text=True, check=False)
        expect(run.returncode == 0 and not run.stdout.strip() and
               not run.stderr.strip(),
               f"promtool check metrics {name}: exit {run.returncode}\n"
               f"{run.stdout}{run.stderr}")


def main(argv):
    if len(argv) != 4 or argv[1] not in ("parsers", "promtool"):
        print(__doc__, file=sys.stderr)
        return 2
    mode, writer, workdir = argv[1:]
    os.makedirs(workdir, exist_ok=True)
    subprocess.run([writer, workdir], check=True)
    try:
        (check_parsers if mode == "parsers" else check_promtool)(workdir)
    except Failure as e:
        print(f"FAIL: {e}", file=sys.stderr)
        return 1
    print(f"ok: {mode}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
