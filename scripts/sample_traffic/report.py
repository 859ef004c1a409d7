"""README.md for examples/data, with figures computed from the records.

Every number in the README comes from the generated lines (the records are
what a replay sees: arrival = finish timestamp - processing time), so the
prose cannot drift from the data.
"""

import ipaddress
import re

from .attacks import CLAIMER, CLAIMER_IP, LOGIN_NET, SCANNER_IP, SPAMMER, \
    SPAMMER_IP
from .model import DURATION_MS, SEED

LEGIT = ("ordinary", "bridge", "admin", "federation")
ATTACKS = [
    ("attack-login", "(a) /login from a rotating IPv6 /64"),
    ("attack-send-loop", "(b) send loop over fresh room and txn IDs"),
    ("attack-scanner", "(c) unknown-path scanner"),
    ("attack-keys-claim", "(d) /keys/claim flood"),
]


def client_key(ip):
    """The per-IP bucket key: IPv4 /32, IPv6 /64 (the library's defaults)."""
    addr = ipaddress.ip_address(ip)
    if addr.version == 6:
        return str(ipaddress.ip_network(ip + "/64", strict=False))
    return ip


def path_of(target):
    return target.split("?", 1)[0]


def is_send(r):
    return r["method"] == "PUT" and re.search(
        r"^/_matrix/client/(r0|v3)/rooms/[^/]+/send/", r["target"])


def is_login(r):
    return r["method"] == "POST" and re.search(
        r"^/_matrix/client/(r0|v3)/login$", path_of(r["target"]))


def is_keys(r):
    return re.search(r"^/_matrix/client/(r0|v3)/keys/", r["target"])


def gcra(records, key_of, per_second, burst):
    """mxlimit's GCRA (include/mxlimit/rate.h) over the records selected by
    key_of (None = not charged). Returns {kind: [allowed, denied]}."""
    interval = int(round(1_000_000 / per_second))  # microseconds
    tau = burst * interval
    tat = {}
    out = {}
    for r in records:
        key = key_of(r)
        if key is None:
            continue
        now = r["time_ms"] * 1000
        base = max(tat.get(key, now), now)
        kind = r["kind"]
        counts = out.setdefault(kind, [0, 0])
        if base + interval - now <= tau:
            tat[key] = base + interval
            counts[0] += 1
        else:
            counts[1] += 1
    return out


def peak(times, window_ms):
    """The most events inside any window of `window_ms`."""
    best, lo = 0, 0
    for hi in range(len(times)):
        while times[hi] - times[lo] >= window_ms:
            lo += 1
        best = max(best, hi - lo + 1)
    return best


def group_times(records, key_of):
    groups = {}
    for r in records:
        k = key_of(r)
        if k is not None:
            groups.setdefault(k, []).append(r["time_ms"])
    return groups


def top_peaks(records, key_of, n=3):
    rows = []
    for key, times in group_times(records, key_of).items():
        rows.append((len(times), peak(times, 1_000), peak(times, 10_000),
                     peak(times, 60_000), key))
    rows.sort(key=lambda row: (-row[3], -row[0], row[4]))
    return rows[:n]


def _count(records, pred):
    return sum(1 for r in records if pred(r))


def _span(records):
    ts = [r["time_ms"] for r in records]
    return "%d–%d s" % (min(ts) // 1000, max(ts) // 1000) if ts else "-"


def _table(header, rows):
    out = ["| " + " | ".join(header) + " |",
           "|" + "|".join("---" for _ in header) + "|"]
    for row in rows:
        out.append("| " + " | ".join(str(c) for c in row) + " |")
    return "\n".join(out)


def readme(records, n_lines, attack_info, population):
    from .readme_text import render
    legit = [r for r in records if r["kind"] in LEGIT]
    by_kind = {}
    for r in records:
        by_kind.setdefault(r["kind"], []).append(r)
    facts = {
        "seed": SEED, "lines": n_lines, "requests": len(records),
        "other_lines": n_lines - len(records),
        "minutes": DURATION_MS // 60_000,
        "legit": len(legit),
        "users_active": len({r["user"] for r in records
                             if r["kind"] == "ordinary" and r["user"]}),
        "ips_legit": len({r["ip"] for r in legit}),
        "federation": len(by_kind.get("federation", [])),
        "bridge": len(by_kind.get("bridge", [])),
        "syncs": _count(legit, lambda r: "sync" in path_of(r["target"])),
    }
    attack_rows = []
    identities = {
        "attack-login": "`%s::/64` (%d addresses), anonymous `{None}`" % (
            LOGIN_NET, len({r["ip"] for r in by_kind["attack-login"]})),
        "attack-send-loop": "`%s` from `%s`" % (SPAMMER, SPAMMER_IP),
        "attack-scanner": "`%s`, anonymous `{None}`" % SCANNER_IP,
        "attack-keys-claim": "`%s` from `%s`" % (CLAIMER, CLAIMER_IP),
    }
    for kind, title in ATTACKS:
        rs = by_kind[kind]
        attack_rows.append((title, identities[kind], len(rs), _span(rs),
                            "%.1f/s" % (len(rs) / max(1, (rs[-1]["time_ms"] -
                                                          rs[0]["time_ms"]) /
                                                      1000.0))))
    facts["attack_table"] = _table(
        ["attack", "who", "requests", "arrivals", "mean rate"], attack_rows)
    facts["claimer_syncs"] = len(by_kind.get("attack-keys-claim-sync", []))
    facts["scanner_unknown"] = _count(
        by_kind["attack-scanner"],
        lambda r: r["status"] == "404")

    # Outcomes under Synapse's defaults and the keys cap.
    login = gcra(records, lambda r: client_key(r["ip"]) if is_login(r)
                 else None, 0.003, 5)
    sends = gcra(records, lambda r: r["user"] if is_send(r) and r["user"]
                 else None, 0.2, 10)
    keys = gcra(records, lambda r: r["user"] if is_keys(r) and r["user"]
                else None, 2.0, 120)
    catch_all = gcra(records, lambda r: client_key(r["ip"]), 10.0, 50)

    def row(name, limit, result, attack_kind):
        a = result.get(attack_kind, [0, 0])
        legit_denied = sum(result.get(k, [0, 0])[1] for k in LEGIT)
        legit_seen = sum(sum(result.get(k, [0, 0])) for k in LEGIT)
        return (name, limit, "%d allowed, **%d denied**" % (a[0], a[1]),
                "%d requests, %d denied" % (legit_seen, legit_denied))

    facts["outcome_table"] = _table(
        ["attack", "limit (where the number comes from)", "attacker",
         "everyone else on that limit"],
        [row("(a)", "POST /login per IP, IPv6 per /64: 0.003/s burst 5 "
             "(Synapse `rc_login.address`)", login, "attack-login"),
         row("(b)", "room sends per user: 0.2/s burst 10 (Synapse "
             "`rc_message`)", sends, "attack-send-loop"),
         row("(d)", "`/keys/*` per user: 120/min burst 120 (the policies "
             "issue)", keys, "attack-keys-claim"),
         row("(c)", "illustration only: any request per IP, 10/s burst 50",
             catch_all, "attack-scanner")])
    facts["catch_all_others"] = ", ".join(
        "%s %d denied" % (label, catch_all.get(k, [0, 0])[1])
        for k, label in (("attack-login", "(a)"), ("attack-send-loop", "(b)"),
                         ("attack-keys-claim", "(d)")))

    peaks_ip = top_peaks(legit, lambda r: client_key(r["ip"]))
    facts["busiest_ip"] = peaks_ip[0][4]
    peaks_user = top_peaks(legit, lambda r: r["user"] or None)
    peaks_send = top_peaks(legit, lambda r: r["user"] if is_send(r) else None,
                           1)
    peaks_keys = top_peaks(legit, lambda r: r["user"] if is_keys(r) else None,
                           1)
    peaks_login = top_peaks(legit, lambda r: client_key(r["ip"])
                            if is_login(r) else None, 1)
    header = ["busiest legitimate …", "key", "requests", "max in 1 s",
              "max in 10 s", "max in 60 s"]
    rows = []
    for label, peaks in [("client address", peaks_ip),
                         ("user (any request)", peaks_user),
                         ("user, room sends", peaks_send),
                         ("user, `/keys/*`", peaks_keys),
                         ("address, POST /login", peaks_login)]:
        for total, p1, p10, p60, key in peaks:
            rows.append((label, "`%s`" % key, total, p1, p10, p60))
            label = "″"
    facts["peaks_table"] = _table(header, rows)
    return render(facts, population)
