"""The samples in the shapes operators' logs really come in (issue #18 item 5).

Each is derived from a sample this package already writes, so that the same
requests can be replayed in every shape and must give the same decisions:

  sample-synapse-journald.log  the first SYNAPSE_LINES lines of
                               sample-synapse.log as `journalctl -u
                               matrix-synapse` prints them (Debian package:
                               Synapse's console handler, captured by
                               systemd), after one systemd line.
  sample-synapse.json.log      the same lines as Synapse's TerseJsonFormatter
                               writes them, after one record of another
                               logger.
  sample-nginx-xff.log         sample-nginx.log behind a load balancer:
                               $remote_addr is the balancer, the client is in
                               a trailing "$http_x_forwarded_for" (the login
                               attacker prepends a forged hop).
  sample-caddy.json.log        the valid requests of sample-nginx.log as
                               Caddy's JSON access log behind the same
                               balancer (client_ip resolved by Caddy's
                               trusted_proxies), after one entry of another
                               logger.
"""

import calendar
import json
import re

SYNAPSE_LINES = 200
HOST = "hs1"
PID = 2217
BALANCER = "10.0.0.2"
FORGED_HOP = "203.0.113.5"
# Caddy's handling times, cycled: seconds as Caddy's JSON encoder writes them.
CADDY_DURATIONS = ["0.001874", "0.012033", "0.0459", "0.000731", "0.2504"]

_SYNAPSE = re.compile(
    r"^(?P<date>\d{4}-\d\d-\d\d) (?P<time>\d\d:\d\d:\d\d),(?P<ms>\d{3}) - "
    r"(?P<logger>\S+) - (?P<lineno>\d+) - (?P<level>\w+) - (?P<rid>\S+?)"
    r"(?: - |- )(?P<msg>(?P<ip>\S+) - (?P<site>\S+) - \{(?P<req>[^}]*)\} "
    r"Processed request: .* \"(?P<method>\S+) (?P<url>\S+) (?P<proto>[^\"]+)\" "
    r"\"(?P<ua>.*)\" \[\d+ dbevts\])$")
_NGINX = re.compile(
    r"^(?P<ip>\S+) - - \[(?P<day>\d\d)/Nov/2026:(?P<hms>\d\d:\d\d:\d\d) "
    r"\+0100\] \"(?P<request>[^\"]*)\" (?P<status>\d+) (?P<size>\d+) "
    r"\"-\" \"(?P<ua>[^\"]*)\"$")
_MONTHS = "Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split()


def _epoch(date, hms):
    y, mo, d = (int(x) for x in date.split("-"))
    h, mi, s = (int(x) for x in hms.split(":"))
    return calendar.timegm((y, mo, d, h, mi, s, 0, 0, 0))


def journald(synapse_lines):
    out = ["Nov 30 09:59:58 %s systemd[1]: Started matrix-synapse.service - "
           "Synapse Matrix homeserver." % HOST]
    for line in synapse_lines[:SYNAPSE_LINES]:
        y, mo, d = line[:10].split("-")
        out.append("%s %s %s %s python3[%d]: %s" % (
            _MONTHS[int(mo) - 1], d, line[11:19], HOST, PID, line))
    return "".join(l + "\n" for l in out)


def _terse(m):
    """One access record as TerseJsonFormatter writes it (key order too)."""
    req = m.group("req")
    if req == "None":
        requester = entity = None
    elif "|" in req:
        entity, requester = req.split("|", 1)
    else:
        requester = entity = req
    created = _epoch(m.group("date"), m.group("time")) + int(m.group("ms")) / 1000
    event = {
        "log": m.group("msg"),
        "namespace": m.group("logger"),
        "level": m.group("level"),
        "time": round(created, 2),
        "request": m.group("rid"),
        "ip_address": m.group("ip"),
        "site_tag": m.group("site"),
        "requester": requester,
        "authenticated_entity": entity,
        "method": m.group("method"),
        "url": m.group("url"),
        "protocol": m.group("proto"),
        "user_agent": m.group("ua"),
    }
    return json.dumps(event, separators=(",", ":"))


def synapse_json(synapse_lines):
    out = [json.dumps({
        "log": "Connected to redis", "namespace": "synapse.replication.tcp."
        "redis", "level": "INFO", "time": 1796032798.91, "request": "sentinel"},
        separators=(",", ":"))]
    for line in synapse_lines[:SYNAPSE_LINES]:
        m = _SYNAPSE.match(line)
        if m is None:
            raise ValueError("not an access line: " + line[:80])
        out.append(_terse(m))
    return "".join(l + "\n" for l in out)


def nginx_xff(nginx_text):
    out = []
    for line in nginx_text.splitlines():
        ip = line.split(" ", 1)[0]
        hops = ip
        if ip.startswith("2001:db8:bad:cafe:"):
            hops = FORGED_HOP + ", " + ip  # the client's own guess, first
        out.append('%s%s "%s"' % (BALANCER, line[len(ip):], hops))
    return "".join(l + "\n" for l in out)


def caddy(nginx_text):
    out = ['{"level":"info","ts":1796032799.5,"logger":"tls.cache.maintenance",'
           '"msg":"started background certificate maintenance"}']
    n = 0
    for line in nginx_text.splitlines():
        m = _NGINX.match(line)
        parts = m.group("request").split(" ") if m else []
        if len(parts) != 3 or not parts[2].startswith("HTTP/"):
            continue  # Caddy answers malformed requests without an access entry
        method, uri, proto = parts
        duration = CADDY_DURATIONS[n % len(CADDY_DURATIONS)]
        n += 1
        # nginx wrote local time at +0100; Caddy writes Unix seconds, when
        # the response was done: arrival + duration.
        arrival = _epoch("2026-11-%s" % m.group("day"), m.group("hms")) - 3600
        ts = round(arrival + float(duration), 6)
        request = {
            "remote_ip": BALANCER, "remote_port": str(40000 + n),
            "client_ip": m.group("ip"), "proto": proto, "method": method,
            "host": "matrix.example.org", "uri": uri,
            "headers": {"User-Agent": [m.group("ua")], "Accept": ["*/*"]},
        }
        entry = {
            "level": "info", "ts": ts, "logger": "http.log.access.log0",
            "msg": "handled request", "request": request, "bytes_read": 0,
            "user_id": "", "duration": float(duration),
            "size": int(m.group("size")), "status": int(m.group("status")),
            "resp_headers": {"Server": ["Caddy"],
                             "Content-Type": ["application/json"]},
        }
        out.append(json.dumps(entry, separators=(",", ":")))
    return "".join(l + "\n" for l in out)


def files(synapse_lines, nginx_text):
    return {
        "sample-synapse-journald.log": journald(synapse_lines),
        "sample-synapse.json.log": synapse_json(synapse_lines),
        "sample-nginx-xff.log": nginx_xff(nginx_text),
        "sample-caddy.json.log": caddy(nginx_text),
    }
