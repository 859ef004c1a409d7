#!/usr/bin/env python3
"""`mxlimit replay --report FILE.html` writes a well-formed, self-contained page whose charts add up.

For each case it runs `mxlimit replay --json --report PAGE ...` once, then parses PAGE with html.parser and checks:
  - well-formed: every element closed, in order (void elements excepted), one <svg> per chart;
  - self-contained: no <script>, no event handler, no http:// or https:// anywhere, nothing loaded (src, href,
    url(), @import);
  - the main chart's series sum to the summary's counts (--json of the same run): allowed + shadow-denied is the
    summary's allowed, shadow-denied its shadow_denied, denied its denied;
  - each policy panel is its policy's row of the summary (allowed, shadow-denied, denied, denied by other), and
    the "other policies" panel the sum of the policies without a panel of their own;
  - the client panels are the summary's top limited clients, each series summing to count - max_overcount; so
    are the shadow client panels (top_shadow_limited_clients), shown whenever a shadow-mode policy is in force;
  - the totals table repeats the summary; the title names the log, the format and the config;
  - the per-policy table (allowed, denied, shadow, denied by other) is the summary's, row for row, and so is the
    text summary's (`mxlimit replay` without --json); each policy's four columns add up to the requests it applied
    to: for the built-in aggregate caps, which apply to every request (per user: with a user), that is checked
    against the summary's requests;
  - strings from the log (a user ID, an invalid line, with markup and quotes) are escaped, and read back as
    they were.

usage: check_report.py MXLIMIT SOURCE_DIR
"""

import html.parser
import json
import os
import subprocess
import sys
import tempfile

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
HOSTILE_USER = "@<script>alert(\"x\")</script>'&\"q\":example.org"
HOSTILE_LINE = "<script>alert(\"y\")</script> & \" ' <b>"

failures = []


def fail(case, message):
    failures.append(f"{case}: {message}")
    print(f"FAIL: {case}: {message}")


class Page(html.parser.HTMLParser):
    """Collects what the checks need, and the nesting errors."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack = []
        self.errors = []
        self.tags = []  # (tag, attrs dict, ancestors)
        self.text = {}  # id(tag record) -> text
        self.title = ""
        self._text_into = []

    def handle_starttag(self, tag, attrs):
        record = (tag, dict(attrs), tuple(t for t, _ in self.stack))
        self.tags.append(record)
        if tag in VOID:
            return
        self.stack.append((tag, record))
        self._text_into.append([])

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs), tuple(t for t, _ in self.stack)))

    def handle_endtag(self, tag):
        if tag in VOID:
            self.errors.append(f"end tag of void element </{tag}>")
            return
        if not self.stack or self.stack[-1][0] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1][0] if self.stack else 'nothing'}")
            return
        _, record = self.stack.pop()
        text = "".join(self._text_into.pop())
        self.text[id(record)] = text
        if self._text_into:
            self._text_into[-1].append(text)
        if tag == "title" and "svg" not in record[2]:
            self.title = text

    def handle_data(self, data):
        if self._text_into:
            self._text_into[-1].append(data)


def counts(attrs):
    value = attrs.get("data-counts", "")
    return [int(x) for x in value.split(",")] if value else []


def series_of(page, chart_index):
    """{series name: counts} of the chart_index-th <svg>."""
    svgs = [i for i, t in enumerate(page.tags) if t[0] == "svg"]
    start = svgs[chart_index]
    end = svgs[chart_index + 1] if chart_index + 1 < len(svgs) else len(page.tags)
    return {t[1]["data-series"]: counts(t[1]) for t in page.tags[start:end]
            if t[0] == "g" and "data-series" in t[1]}


def check_self_contained(case, raw, page):
    lowered = raw.lower()
    for needle in ("http://", "https://", "url(", "@import", "<script", "javascript:"):
        if needle in lowered:
            fail(case, f"the page contains {needle!r}")
    for tag, attrs, _ in page.tags:
        if tag in ("script", "iframe", "object", "embed", "link", "img"):
            fail(case, f"the page has a <{tag}>")
        for name in attrs:
            if name in ("src", "href", "xlink:href") or name.startswith("on"):
                fail(case, f"<{tag}> has a {name} attribute")


def check_structure(case, page):
    if page.errors:
        fail(case, f"not well-formed: {page.errors[:5]}")
    if page.stack:
        fail(case, f"unclosed elements: {[t for t, _ in page.stack]}")
    tags = [t[0] for t in page.tags]
    if tags[:3] != ["html", "head", "meta"] or tags.count("html") != 1 or tags.count("body") != 1:
        fail(case, f"not one html/head/body document: starts {tags[:3]}")
    for tag, attrs, ancestors in page.tags:
        if tag == "svg" and "svg" in ancestors:
            fail(case, "an <svg> inside another")
        if tag in ("path", "g", "line", "text") and "svg" not in ancestors:
            fail(case, f"<{tag}> outside an <svg>")
        if tag == "g" and "data-series" in attrs and len(counts(attrs)) == 0:
            fail(case, "a series without counts")


def check_main_chart(case, page, summary):
    main = series_of(page, 0)
    allowed, shadow, denied = (sum(main.get(k, [])) for k in ("allowed", "shadow-denied", "denied"))
    if allowed + shadow != summary["allowed"]:
        fail(case, f"main chart: allowed {allowed} + shadow-denied {shadow} != summary allowed {summary['allowed']}")
    if shadow != summary["shadow_denied"]:
        fail(case, f"main chart: shadow-denied {shadow} != summary {summary['shadow_denied']}")
    if denied != summary["denied"]:
        fail(case, f"main chart: denied {denied} != summary {summary['denied']}")
    lengths = {len(v) for v in main.values()}
    if len(lengths) != 1 or not 0 < lengths.pop() <= 600:
        fail(case, f"main chart: series of lengths {[len(v) for v in main.values()]}")
    return len(main["allowed"])


PANEL_SERIES = {"allowed": "allowed", "shadow-denied": "shadow_denied", "denied": "denied",
                "denied-by-other": "denied_by_other"}


def check_client_panels(case, page, figures, first_chart, top, attr, series):
    names = [t[1][attr] for t in figures]
    if names != [e["key"] for e in top]:
        fail(case, f"{attr} panels {names} are not the summary's {[e['key'] for e in top]}")
    for i, (figure, entry) in enumerate(zip(figures, top)):
        drawn = sum(series_of(page, first_chart + i).get(series, []))
        if int(figure[1]["data-count"]) != entry["count"]:
            fail(case, f"client {entry['key']}: count {figure[1]['data-count']} != summary {entry['count']}")
        if drawn != entry["count"] - entry["max_overcount"]:
            fail(case, f"client {entry['key']}: series sum {drawn} != count - max_overcount")


def check_panels(case, page, summary, bins):
    svg_count = sum(1 for t in page.tags if t[0] == "svg")
    policy_figures = [t for t in page.tags if t[0] == "figure" and "data-policy" in t[1]]
    client_figures = [t for t in page.tags if t[0] == "figure" and "data-client" in t[1]]
    shadow_figures = [t for t in page.tags if t[0] == "figure" and "data-shadow-client" in t[1]]
    if svg_count != 1 + len(policy_figures) + len(client_figures) + len(shadow_figures):
        fail(case, f"{svg_count} <svg> for 1 + {len(policy_figures)} + {len(client_figures)} + "
                   f"{len(shadow_figures)} charts")
    # Each panel is its policy's row of the summary; "other policies" sums the rest.
    rows = {p["name"]: p for p in summary["policies"]}
    shown = set()
    for i, figure in enumerate(policy_figures):
        name = figure[1]["data-policy"]
        chart = series_of(page, 1 + i)
        if any(len(v) != bins for v in chart.values()):
            fail(case, f"policy panel {name} has series of another length than the main chart's")
        got = {column: sum(chart.get(series, [])) for series, column in PANEL_SERIES.items()}
        if name == "other policies":
            want = {column: sum(p[column] for n, p in rows.items() if n not in shown)
                    for column in PANEL_SERIES.values()}
        elif name in rows:
            shown.add(name)
            want = {column: rows[name][column] for column in PANEL_SERIES.values()}
        else:
            fail(case, f"a panel for {name!r}, no such policy in the summary")
            continue
        if got != want:
            fail(case, f"policy panel {name}: {got} != the summary's {want}")
    applied = [n for n, p in rows.items() if applied_to(p) > 0]
    if not any(t[1]["data-policy"] == "other policies" for t in policy_figures) and set(applied) != shown:
        fail(case, f"policies {sorted(set(applied) - shown)} applied to requests but have no panel")
    check_client_panels(case, page, client_figures, 1 + len(policy_figures), summary["top_limited_clients"],
                        "data-client", "denied")
    check_client_panels(case, page, shadow_figures, 1 + len(policy_figures) + len(client_figures),
                        summary["top_shadow_limited_clients"], "data-shadow-client", "shadow-denied")
    has_shadow_section = any(t[0] == "section" and t[1].get("id") == "shadow-clients" for t in page.tags)
    if summary["shadow_denied"] > 0 and not has_shadow_section:
        fail(case, "shadow denials, but no section of the clients shadow policies would limit")
    if summary["denied"] == 0 and summary["shadow_denied"] > 0:
        if any(text.strip() == "No client was denied." for text in page.text.values()):
            fail(case, "says no client was denied without pointing at those shadow policies would limit")
    return [t[1]["data-policy"] for t in policy_figures]


def check_totals_table(case, page, summary):
    rows = {t[1]["data-total"]: t for t in page.tags if t[0] == "tr" and "data-total" in t[1]}
    for key in ("requests", "allowed", "denied", "denied_never", "shadow_denied", "exempt", "invalid_lines"):
        if key not in rows:
            fail(case, f"the totals table has no row {key}")
            continue
        cells = page.text.get(id(rows[key]), "")
        # The row's text: label, count, share.
        idx = page.tags.index(rows[key])
        tds = [page.text.get(id(t), "") for t in page.tags[idx + 1:idx + 4] if t[0] == "td"]
        if len(tds) < 2 or tds[1] != str(summary[key]):
            fail(case, f"totals row {key}: {cells!r}, summary has {summary[key]}")


POLICY_COLUMNS = ("allowed", "denied", "shadow_denied", "denied_by_other")


def applied_to(row):
    return sum(row[k] for k in POLICY_COLUMNS)


def check_policy_tables(case, page, summary, text):
    """The HTML and text per-policy tables are the summary's: every policy that applied to a request, in set
    order, with its four columns."""
    want = [(p["name"], p["scope"]) + tuple(p[k] for k in POLICY_COLUMNS)
            for p in summary["policies"] if applied_to(p) > 0]
    rows = []
    for i, (tag, attrs, _) in enumerate(page.tags):
        if tag != "tr" or "data-policy-row" not in attrs:
            continue
        tds = [page.text.get(id(t), "") for t in page.tags[i + 1:i + 7] if t[0] == "td"]
        rows.append((tds[0], tds[1]) + tuple(int(x) for x in tds[2:6]))
    if rows != want:
        fail(case, f"the page's per-policy table {rows} is not the summary's {want}")
    lines = text.split("\n")
    header = lines.index("per policy                      scope    allowed     denied  shadow  denied-by-other")
    text_rows = []
    for line in lines[header + 1:]:
        if not line.startswith("  "):
            break
        f = line.split()
        text_rows.append((f[0], f[1]) + tuple(int(x) for x in f[2:6]))
    if text_rows != want:
        fail(case, f"the text per-policy table {text_rows} is not the summary's {want}")
    by_name = {p["name"]: p for p in summary["policies"]}
    checked = summary["requests"] - summary["exempt"]
    if "aggregate-per-ip" in by_name and applied_to(by_name["aggregate-per-ip"]) != checked:
        fail(case, f"aggregate-per-ip's columns add up to {applied_to(by_name['aggregate-per-ip'])}, "
                   f"not the {checked} checked requests")


def run_case(case, bin_path, root, args, expect_client=None, expect_shadow=False, expect_shadow_clients=None):
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as tmp:
        page_path = os.path.join(tmp, "report.html")
        proc = subprocess.run([bin_path, "replay", "--json", "--report", page_path] + args, cwd=root,
                              capture_output=True, timeout=120)
        if proc.returncode != 0:
            fail(case, f"exit {proc.returncode}: {proc.stderr.decode(errors='replace')}")
            return
        summary = json.loads(proc.stdout)
        raw_bytes = open(page_path, "rb").read()
        text = subprocess.run([bin_path, "replay"] + args, cwd=root, capture_output=True,
                              timeout=120).stdout.decode(errors="replace")
    try:
        raw = raw_bytes.decode("utf-8")
    except UnicodeDecodeError as e:
        fail(case, f"the page is not UTF-8: {e}")
        return
    page = Page()
    page.feed(raw)
    page.close()
    check_structure(case, page)
    check_self_contained(case, raw, page)
    for part in (summary["input"], summary["format"], summary["config"]):
        if part not in page.title:
            fail(case, f"title {page.title!r} does not name {part!r}")
    if summary["requests"] == 0:
        if sum(1 for t in page.tags if t[0] == "svg") != 0:
            fail(case, "charts for a log without requests")
        print(f"ok: {case}: no requests, no charts")
        return
    bins = check_main_chart(case, page, summary)
    policies = check_panels(case, page, summary, bins)
    check_totals_table(case, page, summary)
    check_policy_tables(case, page, summary, text)
    if expect_shadow and summary["shadow_denied"] == 0:
        fail(case, "expected shadow denials in this case")
    if expect_shadow_clients is not None:
        got = [e["key"] for e in summary["top_shadow_limited_clients"]]
        if got != expect_shadow_clients:
            fail(case, f"shadow-limited clients {got}, expected {expect_shadow_clients}")
    if expect_client is not None:
        if [e["key"] for e in summary["top_limited_clients"]] != [expect_client]:
            fail(case, f"expected {expect_client!r} as the one limited client")
        if "<script>" in raw or "alert(\"" in raw or "<b>" in raw:
            fail(case, "a string from the log is not escaped")
        if not any(HOSTILE_LINE in text for text in page.text.values()):
            fail(case, "the quoted invalid line does not read back as it was")
    print(f"ok: {case}: {summary['requests']} requests, {bins} bins, {len(policies)} policy panels")


def main():
    bin_path, root = sys.argv[1], sys.argv[2]
    run_case("sample-synapse", bin_path, root, ["examples/data/sample-synapse.log"])
    run_case("shadow", bin_path, root,
             ["--config", "tests/cli/data/block.yaml", "examples/data/sample.tsv"], expect_shadow=True)
    # Observe only: nothing is denied, and the page shows who would have been (the sample's four attackers).
    run_case("observe-only", bin_path, root,
             ["--config", "tests/cli/data/observe.yaml", "examples/data/sample-synapse.log"], expect_shadow=True,
             expect_shadow_clients=["198.51.100.23", "@xk7q2vb:example.org", "2001:db8:bad:cafe::/64",
                                    "@mallory:example.org"])
    run_case("example-config", bin_path, root,
             ["--config", "examples/mxlimit.yaml", "tests/cli/data/synapse-small.log"])
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as tmp:
        # Policy names are restricted by the loader; what a log says is not: a user with markup and quotes in
        # its ID, sending fast enough to be limited, and an invalid line that is all markup (quoted in the page).
        log = os.path.join(tmp, "hostile.tsv")
        with open(log, "w", encoding="utf-8", newline="\n") as f:
            for i in range(40):
                f.write(f"{i * 10}\tPUT\t/_matrix/client/v3/rooms/!a:b/send/m.room.message/t{i}\t192.0.2.7\t"
                        f"{HOSTILE_USER}\n")
            f.write(HOSTILE_LINE + "\n")
        run_case("hostile-names", bin_path, root, ["--config", "tests/cli/data/block.yaml", log],
                 expect_client=HOSTILE_USER)
    empty = tempfile.NamedTemporaryFile(dir=os.environ.get("TMPDIR"), suffix=".tsv", delete=False)
    empty.close()
    try:
        run_case("empty-log", bin_path, root, ["--format", "tsv", empty.name])
    finally:
        os.unlink(empty.name)
    if failures:
        print(f"{len(failures)} failures")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
