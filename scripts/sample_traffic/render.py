"""Synapse's request-log lines, written when each request finishes."""

import datetime

from . import ids
from .model import DURATION_MS, FIRST_REQUEST_SEQ, START

LOGGER = "synapse.access.http.8008"
LINENO = 473


def _timestamp(t_ms):
    when = START + datetime.timedelta(milliseconds=t_ms)
    return when.strftime("%Y-%m-%d %H:%M:%S") + ",%03d" % (t_ms % 1000)


def charged_user(requester):
    """The user the replay charges: the parser's documented choice."""
    if not requester.startswith("@"):
        return ""
    return requester.split("|")[-1]


def _noise(sim, p):
    """Lines of other loggers mixed into the file, and one failed request
    whose traceback precedes its access line."""
    rnd = sim.rnd
    dev = next(d for d in p.devices
               if p.activity[d.user] != "offline" and d.api == "v3")
    room = p.user_rooms[dev.user][0]
    failed = sim.add(73_102, 312, "GET",
                     "/_matrix/client/v3/rooms/%s/context/%s?limit=10" % (
                         ids.enc(room), ids.enc(ids.event_id(rnd))),
                     dev.ip, dev.user, dev.ua, "ordinary", dev.user,
                     status="500", size=66)
    venv = "/opt/venvs/matrix-synapse/lib/python3.12/site-packages"
    sim.other_lines.append((failed.finish - 1, [
        "{TS} - synapse.http.server - 130 - ERROR - {REQ} - Failed handle "
        "request via 'RoomEventContextServlet': <XForwardedForRequest at "
        "0x7f3a1c2b5e50 method='GET' uri='%s' clientproto='HTTP/1.1' "
        "site='8008'>" % failed.target,
        "Traceback (most recent call last):",
        '  File "%s/synapse/http/server.py", line 332, in '
        "_async_render_wrapper" % venv,
        "    callback_return = await self._async_render(request)",
        '  File "%s/synapse/handlers/room.py", line 1504, in '
        "get_event_context" % venv,
        "    raise SynapseError(500, \"Internal server error\")",
        "synapse.api.errors.SynapseError: 500: Internal server error",
    ], failed))
    sim.other_lines.append((131_877, [
        "{TS} - synapse.federation.sender.per_destination_queue - 380 - "
        "WARNING - federation_transaction_transmission_loop-4413 - TX "
        "[tiny.example.io] Failed to send transaction: Failed to send request"
        ": HttpResponseException: 502: Bad Gateway"], None))
    sim.other_lines.append((188_040, [
        "{TS} - synapse.handlers.device - 1246 - INFO - "
        "_maybe_retry_device_resync-71 - Resyncing device list for "
        "@jo:hs.example.de"], None))
    sim.other_lines.append((246_513, [
        "{TS} - synapse.http.matrixfederationclient - 767 - INFO - "
        "PUT-188734 - {PUT-O-9431} [tiny.example.io] Got response headers: "
        "502 Bad Gateway"], None))


def render_synapse_log(sim, population):
    """Returns (lines, records) for the requests logged inside the window."""
    rnd = sim.rnd
    _noise(sim, population)
    order = sorted(range(len(sim.requests)),
                   key=lambda i: (sim.requests[i].arrival, i))
    for n, i in enumerate(order):
        sim.requests[i].seq = FIRST_REQUEST_SEQ + n
    entries = []
    records = []
    for i in order:
        r = sim.requests[i]
        big = r.size > 100_000
        send = rnd.randint(3, 30) if big else rnd.choice([0, 0, 0, 0, 1, 2])
        logged = r.finish + send
        if not 0 <= logged < DURATION_MS:
            continue
        dur_s = r.duration / 1000.0
        busy = min(r.duration, rnd.randint(1, 40))
        ru_u = busy / 1000.0
        ru_s = min(busy, rnd.randint(0, 6)) / 1000.0
        db_n = rnd.randint(0, 6)
        db_sched = rnd.randint(0, 2) / 1000.0 if db_n else 0.0
        db_txn = min(r.duration, db_n * rnd.randint(1, 4)) / 1000.0
        dbevts = rnd.randint(1, 12) if r.method in ("GET", "POST") and \
            "sync" in r.target and r.size > 800 else 0
        line = ("%s - %s - %d - INFO - %s-%d - %s - 8008 - {%s} Processed "
                "request: %.3fsec/%.3fsec (%.3fsec, %.3fsec) (%.3fsec/%.3fsec/"
                "%d) %dB %s \"%s %s HTTP/1.1\" \"%s\" [%d dbevts]") % (
            _timestamp(logged), LOGGER, LINENO, r.method, r.seq, r.ip,
            r.requester, dur_s, send / 1000.0, ru_u, ru_s, db_sched, db_txn,
            db_n, r.size, r.status, r.method, r.target, r.ua, dbevts)
        entries.append((logged, r.seq, 1, [line]))
        records.append({
            "time_ms": logged - r.duration, "method": r.method,
            "target": r.target, "ip": r.ip, "user": charged_user(r.requester),
            "requester": r.requester, "kind": r.kind, "actor": r.actor,
            "status": r.status})
    for t, lines, req in sim.other_lines:
        req_id = "%s-%d" % (req.method, req.seq) if req else "-"
        text = [l.replace("{TS}", _timestamp(t)).replace("{REQ}", req_id)
                for l in lines]
        entries.append((t, req.seq if req else 0, 0, text))
    entries.sort(key=lambda e: (e[0], e[1], e[2]))
    out = []
    for _, _, _, lines in entries:
        out.extend(lines)
    records.sort(key=lambda r: r["time_ms"])
    return out, records
