"""Ordinary traffic: people chatting and reading, a bridge, federation peers.

Order matters: sends (local, bridge, federation) create room events first;
then every device's /sync long-poll loop wakes on those events, and the
follow-up requests (receipts, thumbnails) hang off the wake-ups.
"""

from . import ids
from .model import DURATION_MS, SERVER, START, WARMUP_MS, prefix, txn_id

KIND = "ordinary"
FED_UA = {
    "matrix.example.com": "Synapse/1.157.1",
    "chat.example.net": "Synapse/1.150.0",
    "hs.example.de": "Synapse/1.157.0",
    "mx.example.fr": "conduwuit/0.5.0",
    "tiny.example.io": "Synapse/1.142.3",
}


def ordinary_traffic(sim, p):
    rnd = sim.rnd
    p.devices_by_user = {}
    for d in p.devices:
        p.devices_by_user.setdefault(d.user, []).append(d)
    p.activity = {}
    for u in p.users:
        p.activity[u] = rnd.choices(["chatty", "normal", "lurker", "offline"],
                                    [22, 40, 28, 10])[0]
    p.images = []  # (room, time, media id)
    p.room_encrypted = {r: e for r, e, _ in p.rooms}
    p.room_weight = {r: w for r, _, w in p.rooms}
    _pick_startups(sim, p)
    for u in p.users:
        _user_sends(sim, p, u)
    _bridge(sim, p)
    federation_traffic(sim, p)
    for d in p.devices:
        if p.activity[d.user] == "offline":
            continue
        if d.starts_at is not None:
            _startup(sim, p, d)
        _sync_loop(sim, p, d)
        _browsing(sim, p, d)
    _image_fetches(sim, p)
    _registration(sim, p)
    _admin(sim, p)


def _online(p, d):
    return p.activity[d.user] != "offline"


def _pick_startups(sim, p):
    """A few apps open during the window; three of them log in first."""
    rnd = sim.rnd
    candidates = [d for d in p.devices if _online(p, d) and not d.background]
    starters = rnd.sample(candidates, 12)
    for i, d in enumerate(starters):
        d.starts_at = rnd.randint(10_000, 270_000)
        d.logs_in = i < 3
        d.mistypes = i == 0


def _active_device(p, u, rnd):
    devs = p.devices_by_user[u]
    fg = [d for d in devs if not d.background] or devs
    return rnd.choice(fg)


def _user_sends(sim, p, u):
    rnd = sim.rnd
    activity = p.activity[u]
    n = {"chatty": rnd.randint(5, 12), "normal": rnd.randint(1, 4),
         "lurker": rnd.choice([0, 0, 0, 1]), "offline": 0}[activity]
    if n == 0:
        return
    # Conversations: one to three sessions, messages 4-40 s apart.
    times = []
    sessions = rnd.randint(1, 3)
    per = [n // sessions + (1 if i < n % sessions else 0)
           for i in range(sessions)]
    for count in per:
        t = rnd.randint(-WARMUP_MS // 2, DURATION_MS - 20_000)
        for _ in range(count):
            times.append(t)
            t += rnd.randint(5_000, 60_000)
    times.sort()
    rooms = p.user_rooms[u]
    weights = [p.room_weight[r] for r in rooms]
    shared_keys = set()
    for t in times:
        d = _active_device(p, u, rnd)
        if d.starts_at is not None and t < d.starts_at + 5_000:
            t = d.starts_at + rnd.randint(8_000, 30_000)
        room = rnd.choices(rooms, weights)[0]
        _send_message(sim, p, d, room, t, shared_keys)


def _room_path(d, room):
    # The legacy client leaves ':' unencoded; the others encode it.
    return room if d.client == "riot-legacy" else ids.enc(room)


def _send_message(sim, p, d, room, t, shared_keys):
    rnd = sim.rnd
    u = d.user
    pre = prefix(d)
    rp = _room_path(d, room)
    if d.client != "riot-legacy" and rnd.random() < 0.75:
        tt = t - rnd.randint(2_000, 9_000)
        sim.add(tt, rnd.randint(4, 25), "PUT",
                "%s/rooms/%s/typing/%s" % (pre, rp, ids.enc(u)), d.ip, u,
                d.ua, KIND, u, size=2)
    encrypted = p.room_encrypted[room]
    r = rnd.random()
    event_type = "m.room.encrypted" if encrypted else "m.room.message"
    if r < 0.08:
        mid = ids.media_id(rnd)
        up = t - rnd.randint(1_500, 4_000)
        sim.add(up, rnd.randint(250, 1_400), "POST",
                "/_matrix/media/v3/upload?filename=IMG_%04d.jpg" %
                rnd.randint(1, 9999), d.ip, u, d.ua, KIND, u, size=71)
        p.images.append((room, t + 200, mid))
    elif r < 0.15:
        event_type = "m.reaction"
    elif r < 0.17:
        eid = ids.event_id(rnd)
        dur = rnd.randint(30, 200)
        sim.add(t, dur, "PUT", "%s/rooms/%s/redact/%s/%s" % (
            pre, rp, ids.enc(eid), txn_id(d, t)), d.ip, u, d.ua, KIND, u,
            size=59)
        sim.room_event(room, t + dur)
        return
    if encrypted and (d, room) not in shared_keys:
        # New Megolm session: query devices, maybe claim keys, share the key.
        shared_keys.add((d, room))
        if rnd.random() < 0.6:
            sim.add(t - 700, rnd.randint(20, 120), "POST",
                    pre + "/keys/query", d.ip, u, d.ua, KIND, u,
                    size=rnd.randint(800, 6000))
        if rnd.random() < 0.25:
            sim.add(t - 450, rnd.randint(15, 90), "POST",
                    pre + "/keys/claim", d.ip, u, d.ua, KIND, u,
                    size=rnd.randint(200, 900))
        sim.add(t - 250, rnd.randint(15, 120), "PUT", "%s/sendToDevice/%s/%s" % (
            pre, "m.room.encrypted", txn_id(d, t)), d.ip, u, d.ua, KIND, u,
            size=2)
    dur = rnd.randint(30, 260)
    sim.add(t, dur, "PUT", "%s/rooms/%s/send/%s/%s" % (
        pre, rp, event_type, txn_id(d, t)), d.ip, u, d.ua, KIND, u, size=59)
    sim.room_event(room, t + dur)


def _bridge(sim, p):
    """An appservice posting as its puppets: "{@bot|@puppet}" requesters."""
    rnd = sim.rnd
    b = p.bridge
    t = rnd.randint(-WARMUP_MS, 0)
    txn = rnd.randint(1000, 5000)
    while t < DURATION_MS:
        puppet = rnd.choice(b["puppets"])
        room = rnd.choice(b["rooms"])
        requester = "%s|%s" % (b["sender"], puppet)
        txn += 1
        dur = rnd.randint(40, 300)
        sim.add(t, dur, "PUT",
                "/_matrix/client/v3/rooms/%s/send/m.room.message/mautrix-go_%d"
                "_%d?user_id=%s" % (ids.enc(room), ids.epoch_ms(START, t),
                                    txn, ids.enc(puppet)),
                b["ip"], requester, b["ua"], "bridge", puppet, size=59)
        sim.room_event(room, t + dur)
        t += rnd.randint(2_000, 16_000)
    for _ in range(3):  # the bot checks its own session
        sim.add(rnd.randint(0, DURATION_MS), rnd.randint(3, 15), "GET",
                "/_matrix/client/v3/account/whoami", b["ip"], b["sender"],
                b["ua"], "bridge", b["sender"], size=96)


def federation_traffic(sim, p):
    rnd = sim.rnd
    local_users = p.users
    for name, ip, per_minute in p.remote_servers:
        ua = FED_UA[name]
        rooms = [r for r in p.remote_rooms if name in p.remote_rooms[r]]

        def add(t, dur, method, target, requester=name, status="200",
                size=None):
            sim.add(t, dur, method, target, ip, requester, ua, "federation",
                    name, status=status, size=size)

        # Transactions carrying PDUs and EDUs into shared rooms.
        t = -WARMUP_MS + rnd.randint(0, 5_000)
        while t < DURATION_MS and rooms:
            dur = rnd.randint(25, 450)
            add(t, dur, "PUT", "/_matrix/federation/v1/send/%d" %
                ids.epoch_ms(START, t - rnd.randint(5, 60)), size=27)
            for room in rnd.sample(rooms, min(len(rooms), rnd.randint(1, 2))):
                sim.room_event(room, t + dur)
            t += int(rnd.expovariate(per_minute / 60_000.0)) + 50
        # Lookups, a few per minute for the big peers.
        n_lookups = per_minute * 2 + rnd.randint(0, 4)
        for _ in range(n_lookups):
            t = rnd.randint(0, DURATION_MS)
            u = rnd.choice(local_users)
            kind = rnd.random()
            if kind < 0.3:
                add(t, rnd.randint(3, 30), "GET",
                    "/_matrix/federation/v1/query/profile?user_id=%s&field="
                    "displayname" % ids.enc(u), size=28)
            elif kind < 0.5:
                add(t, rnd.randint(10, 80), "POST",
                    "/_matrix/federation/v1/user/keys/query",
                    size=rnd.randint(500, 4000))
            elif kind < 0.62:
                add(t, rnd.randint(5, 60), "GET",
                    "/_matrix/federation/v1/user/devices/%s" % ids.enc(u),
                    size=rnd.randint(400, 3000))
            elif kind < 0.8 and rooms:
                add(t, rnd.randint(8, 90), "GET",
                    "/_matrix/federation/v1/event/%s" % ids.enc(
                        ids.event_id(rnd)), size=rnd.randint(700, 1500))
            elif kind < 0.88 and rooms:
                room = rnd.choice(rooms)
                add(t, rnd.randint(40, 900), "GET",
                    "/_matrix/federation/v1/state_ids/%s?event_id=%s" % (
                        ids.enc(room), ids.enc(ids.event_id(rnd))),
                    size=rnd.randint(3000, 40000))
            elif kind < 0.94 and rooms:
                add(t, rnd.randint(30, 400), "POST",
                    "/_matrix/federation/v1/get_missing_events/%s" %
                    ids.enc(rnd.choice(rooms)), size=rnd.randint(900, 9000))
            else:
                mid = ids.media_id(rnd)
                if rnd.random() < 0.5:
                    add(t, rnd.randint(5, 120), "GET",
                        "/_matrix/federation/v1/media/download/%s" % mid,
                        size=rnd.randint(20_000, 400_000))
                else:
                    add(t, rnd.randint(5, 120), "GET",
                        "/_matrix/media/v3/download/%s/%s?allow_remote=false"
                        "&allow_redirect=true" % (SERVER, mid),
                        requester="None", size=rnd.randint(20_000, 400_000))
        # Each peer fetches our signing key and version once in a while.
        add(rnd.randint(0, DURATION_MS), rnd.randint(2, 9), "GET",
            "/_matrix/key/v2/server", requester="None", size=410)
        if rnd.random() < 0.6:
            add(rnd.randint(0, DURATION_MS), rnd.randint(1, 4), "GET",
                "/_matrix/federation/v1/version", requester="None", size=52)
    # A remote user joins a local room; a small server asks us as notary.
    room = p.rooms[1][0]
    joiner = "@jo:hs.example.de"
    t = 133_410
    sim.add(t, 85, "GET", "/_matrix/federation/v1/make_join/%s/%s?ver=1&ver=2"
            "&ver=3&ver=4&ver=5&ver=6&ver=7&ver=8&ver=9&ver=10&ver=11" % (
                ids.enc(room), ids.enc(joiner)), "2001:db8:de::8448",
            "hs.example.de", FED_UA["hs.example.de"], "federation",
            "hs.example.de", size=910)
    sim.add(t + 900, 2_350, "PUT", "/_matrix/federation/v2/send_join/%s/%s"
            "?omit_members=true" % (ids.enc(room), ids.enc(ids.event_id(rnd))),
            "2001:db8:de::8448", "hs.example.de", FED_UA["hs.example.de"],
            "federation", "hs.example.de", size=48_211)
    sim.room_event(room, t + 3_300)
    sim.add(201_005, 640, "POST", "/_matrix/key/v2/query", "2001:db8:77:1::2",
            "tiny.example.io", FED_UA["tiny.example.io"], "federation",
            "tiny.example.io", size=2_210)


from .sessions import (_admin, _browsing, _image_fetches,  # noqa: E402
                       _registration, _startup, _sync_loop)
