"""A device's session: the /sync loop and what a person does around it."""

from . import ids
from .model import DURATION_MS, SERVER, WARMUP_MS, media_prefix, prefix

KIND = "ordinary"
END = DURATION_MS + 31_000  # long-polls still running at the end are cut


def _sync_target(d, pos, timeout):
    tok = ids.sync_token(pos)
    if d.client == "element-x":
        return "/_matrix/client/unstable/org.matrix.simplified_msc3575/sync?" \
               "pos=%d&timeout=%d" % (pos, timeout)
    if d.client == "element-android":
        return "%s/sync?filter=0&set_presence=online&timeout=%d&since=%s" % (
            prefix(d), timeout, tok)
    if d.client == "fluffychat":
        return "%s/sync?filter=1&since=%s&timeout=%d&set_presence=online" % (
            prefix(d), tok, timeout)
    if d.client == "riot-legacy":
        return "%s/sync?filter=0&timeout=%d&since=%s&access_token=<redacted>" \
               % (prefix(d), timeout, tok)
    return "%s/sync?filter=0&timeout=%d&since=%s" % (prefix(d), timeout, tok)


def _sync_method(d):
    return "POST" if d.client == "element-x" else "GET"


def _stream_pos(t):
    return 724_000 + (t + WARMUP_MS) // 180


def _sync_loop(sim, p, d):
    rnd = sim.rnd
    u = d.user
    rooms = p.user_rooms[u]
    if d.background:
        # Push wakes the app now and then for a catch-up sync.
        t = rnd.randint(-WARMUP_MS, 90_000)
        while t < DURATION_MS:
            sim.add(t, rnd.randint(60, 700), _sync_method(d),
                    _sync_target(d, _stream_pos(t), 0), d.ip, u, d.ua, KIND,
                    u, size=rnd.randint(300, 9000))
            t += rnd.randint(60_000, 170_000)
        return
    if d.starts_at is not None:
        t = d.starts_at + rnd.randint(1_500, 3_000)
        # The catch-up sync after opening the app: no timeout, big answer.
        dur = rnd.randint(400, 2_500)
        sim.add(t, dur, _sync_method(d), _sync_target(d, _stream_pos(t), 0),
                d.ip, u, d.ua, KIND, u, size=rnd.randint(40_000, 400_000))
        t += dur + rnd.randint(20, 200)
    else:
        t = -WARMUP_MS + rnd.randint(0, 30_000)
    last_receipt = -10**9
    while t < END:
        nxt = sim.next_event(rooms, t)
        if nxt is None or nxt > t + 30_000:
            ret, woke = t + 30_000 + rnd.randint(0, 15), False
        else:
            ret, woke = nxt + rnd.randint(15, 120), True
        status = "200"
        if rnd.random() < 0.004:  # network change: the client went away
            status = "200!"
        sim.add(t, ret - t, _sync_method(d), _sync_target(
            d, _stream_pos(t), 30_000), d.ip, u, d.ua, KIND, u, status=status,
            size=rnd.randint(900, 6000) if woke else rnd.randint(180, 400))
        if woke and ret - last_receipt > 4_000 and rnd.random() < 0.2:
            last_receipt = ret
            _receipt(sim, p, d, rnd.choice(rooms), ret + rnd.randint(300, 2500))
        if woke and rnd.random() < 0.01:
            sim.add(ret + 200, rnd.randint(20, 150), "POST",
                    prefix(d) + "/keys/query", d.ip, u, d.ua, KIND, u,
                    size=rnd.randint(600, 5000))
        t = ret + (rnd.randint(2_000, 9_000) if status == "200!"
                   else rnd.randint(10, 120))


def _receipt(sim, p, d, room, t):
    rnd = sim.rnd
    rp = room if d.client == "riot-legacy" else ids.enc(room)
    if d.client in ("element-web", "element-desktop"):
        target = "%s/rooms/%s/read_markers" % (prefix(d), rp)
    else:
        target = "%s/rooms/%s/receipt/m.read/%s" % (prefix(d), rp, ids.enc(
            ids.event_id(rnd)))
    sim.add(t, rnd.randint(8, 60), "POST", target, d.ip, d.user, d.ua, KIND,
            d.user, size=2)


def _thumbnail(sim, d, t, server, mid, size_px, authenticated_user):
    rnd = sim.rnd
    target = "%s/%s/%s?width=%d&height=%d&method=crop" % (
        media_prefix(d, "thumbnail"), server, mid, size_px, size_px)
    requester = authenticated_user if d.auth_media else "None"
    if d.client == "riot-legacy":
        target += "&access_token=<redacted>"
        requester = d.user
    remote = server != SERVER
    sim.add(t, rnd.randint(150, 1_800) if remote else rnd.randint(4, 60),
            "GET", target, d.ip, requester, d.ua, KIND, d.user,
            size=rnd.randint(2_000, 30_000))


def _browsing(sim, p, d):
    """Room switches, presence, and the odd settings or profile look-up."""
    rnd = sim.rnd
    u = d.user
    pre = prefix(d)
    start = d.starts_at + 5_000 if d.starts_at is not None else -WARMUP_MS
    if d.background:
        return
    t = start + rnd.randint(5_000, 90_000)
    rooms = p.user_rooms[u]
    while t < DURATION_MS:
        room = rnd.choice(rooms)
        rp = room if d.client == "riot-legacy" else ids.enc(room)
        if d.client in ("element-web", "element-desktop"):
            sim.add(t, rnd.randint(8, 40), "PUT",
                    "%s/user/%s/account_data/im.vector.setting.breadcrumbs" % (
                        pre, ids.enc(u)), d.ip, u, d.ua, KIND, u, size=2)
        if rnd.random() < 0.5:
            sim.add(t + 40, rnd.randint(40, 450), "GET",
                    "%s/rooms/%s/messages?dir=b&from=t%d-%d_0_0_0_0_0_0_0_0"
                    "&limit=30" % (pre, rp, rnd.randint(100, 999),
                                   _stream_pos(t)), d.ip, u, d.ua, KIND, u,
                    size=rnd.randint(4_000, 40_000))
        if rnd.random() < 0.25:
            sim.add(t + 60, rnd.randint(30, 600), "GET",
                    "%s/rooms/%s/members?at=%s&not_membership=leave" % (
                        pre, rp, ids.sync_token(_stream_pos(t))), d.ip, u,
                    d.ua, KIND, u, size=rnd.randint(2_000, 60_000))
        if rnd.random() < 0.6:
            for i in range(rnd.randint(1, 5)):
                server = SERVER if rnd.random() < 0.8 else "matrix.example.com"
                _thumbnail(sim, d, t + 150 + i * rnd.randint(20, 200), server,
                           ids.media_id(rnd), 96, u)
        if rnd.random() < 0.7:
            _receipt(sim, p, d, room, t + rnd.randint(600, 3_000))
        if rnd.random() < 0.05:
            sim.add(t + 100, rnd.randint(20, 300), "GET",
                    "%s/rooms/%s/state" % (pre, rp), d.ip, u, d.ua, KIND, u,
                    size=rnd.randint(3_000, 50_000))
        t += rnd.randint(40_000, 200_000)
    once = [
        (0.5 if d.client in ("element-web", "element-desktop") else 0.1,
         "PUT", "%s/presence/%s/status" % (pre, ids.enc(u)), 2),
        (0.3, "GET", "/_matrix/client/versions", 1_400),
        (0.15, "GET", pre + "/voip/turnServer", 280),
        (0.08, "GET", pre + "/pushrules/", 4_500),
        (0.2, "GET", "%s/profile/%s" % (pre, ids.enc(rnd.choice(p.users))), 80),
        (0.08, "POST", pre + "/keys/upload", 40),
        (0.05, "GET", "%s/keys/changes?from=%s&to=%s" % (
            pre, ids.sync_token(724_100), ids.sync_token(726_000)), 120),
        (0.06, "GET", "%s/user/%s/filter/0" % (pre, ids.enc(u)), 300),
    ]
    for prob, method, target, size in once:
        if rnd.random() < prob:
            t = rnd.randint(max(0, start), DURATION_MS)
            requester = "None" if target.endswith("/versions") else u
            duration = rnd.randint(2, 60)
            if "/presence/" in target:
                t = _spaced_presence(sim, u, t)
                if t is None:
                    continue
            sim.add(t, duration, method, target, d.ip, requester,
                    d.ua, KIND, u, size=size)


# Synapse's rc_presence.per_user (per_second 0.1, burst_count 1) answers a
# second status update by one user within 10 s with 429, so a log from a real
# server shows a user's devices' updates at least that far apart (with a
# margin for the time between arrival and the log line).
PRESENCE_SPACING_MS = 12_000


def _spaced_presence(sim, user, t):
    """`t`, or the first time after the user's earlier updates that keeps
    them apart; None when that falls past the end. Draws no random numbers."""
    times = sim.__dict__.setdefault("presence_times", {}).setdefault(user, [])
    if any(abs(t - x) < PRESENCE_SPACING_MS for x in times):
        t = max(times) + PRESENCE_SPACING_MS
    if t > DURATION_MS:
        return None
    times.append(t)
    return t


def _startup(sim, p, d):
    """Opening the app: discovery, maybe a login, capabilities, filters."""
    rnd = sim.rnd
    u = d.user
    pre = prefix(d)
    t = d.starts_at
    steps = [("GET", "/.well-known/matrix/client", "None", 78),
             ("GET", "/_matrix/client/versions", "None", 1_400)]
    if d.logs_in:
        steps.append(("GET", pre + "/login", "None", 310))
        if d.mistypes:
            steps.append(("POST", pre + "/login", "None", 62, "403"))
        steps.append(("POST", pre + "/login", "None", 420))
    steps += [("GET", pre + "/capabilities", u, 420),
              ("GET", pre + "/pushrules/", u, 4_500),
              ("POST", "%s/user/%s/filter" % (pre, ids.enc(u)), u, 22),
              ("GET", pre + "/account/whoami", u, 96),
              ("GET", media_prefix(d, "config"), u, 28),
              ("GET", pre + "/thirdparty/protocols", u, 2),
              ("POST", pre + "/keys/upload", u, 40),
              ("POST", pre + "/keys/query", u, 2_400)]
    for step in steps:
        method, target, requester, size = step[:4]
        status = step[4] if len(step) > 4 else "200"
        dur = rnd.randint(120, 300) if target.endswith("/login") and \
            method == "POST" else rnd.randint(2, 80)
        if status == "403":
            t += 1_000  # the failed attempt, then typing the password again
        sim.add(t, dur, method, target, d.ip, requester, d.ua, KIND, u,
                status=status, size=size)
        t += dur + (rnd.randint(3_000, 9_000) if status == "403"
                    else rnd.randint(5, 200))


def _image_fetches(sim, p):
    """People looking at a room see an image arrive and load its thumbnail."""
    rnd = sim.rnd
    for room, t, mid in p.images:
        for u in p.members[room]:
            for d in p.devices_by_user[u]:
                if d.background or p.activity[u] == "offline":
                    continue
                if d.starts_at is not None and t < d.starts_at:
                    continue
                if rnd.random() < 0.45:
                    _thumbnail(sim, d, t + rnd.randint(300, 3_000), SERVER,
                               mid, 800, u)


def _registration(sim, p):
    """A newcomer registers (UIA: 401 then 200), joins, says hello."""
    rnd = sim.rnd
    ip, user = "198.51.100.201", "@newbie:" + SERVER
    ua = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15" \
         " (KHTML, like Gecko) Version/18.1 Safari/605.1.15"
    t = 176_220
    for method, target, requester, status, dur, size in [
            ("GET", "/_matrix/client/versions", "None", "200", 3, 1_400),
            ("GET", "/_matrix/client/v3/register/available?username=newbie",
             "None", "200", 9, 20),
            ("POST", "/_matrix/client/v3/register", "None", "401", 14, 240),
            ("POST", "/_matrix/client/v3/register", "None", "200", 380, 340),
            ("GET", "/_matrix/client/v3/capabilities", user, "200", 6, 420),
            ("POST", "/_matrix/client/v3/join/%s" % ids.enc(
                "#welcome:" + SERVER), user, "200", 640, 38)]:
        sim.add(t, dur, method, target, ip, requester, ua, KIND, user,
                status=status, size=size)
        t += dur + rnd.randint(800, 6_000)
    welcome = p.rooms[0][0]
    sim.add(t + 9_000, 120, "PUT",
            "/_matrix/client/v3/rooms/%s/send/m.room.message/m%d.0" % (
                ids.enc(welcome), 1796032800000 + t), ip, user, ua, KIND,
            user, size=59)
    sim.add(t + 2_000, 30_000, "GET",
            "/_matrix/client/v3/sync?filter=0&timeout=30000&since=%s" %
            ids.sync_token(_stream_pos(t)), ip, user, ua, KIND, user, size=310)


def _admin(sim, p):
    """A server admin looks into a support case, acting as the user."""
    rnd = sim.rnd
    admin, ip = "@admin:" + SERVER, p.office_ip
    ua = "curl/8.11.0"
    target_user = p.users[7]
    t = 222_700
    sim.add(t, 18, "GET", "/_synapse/admin/v2/users/%s" % ids.enc(target_user),
            ip, admin, ua, "admin", admin, size=1_210)
    for i, path in enumerate(["/_matrix/client/v3/joined_rooms",
                              "/_matrix/client/v3/account/whoami",
                              "/_matrix/client/v3/pushrules/"]):
        sim.add(t + 8_000 + i * rnd.randint(1_000, 4_000), rnd.randint(4, 40),
                "GET", path, ip, "%s|%s" % (admin, target_user), ua, "admin",
                target_user, size=rnd.randint(90, 4_000))
