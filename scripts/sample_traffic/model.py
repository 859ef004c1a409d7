"""The ordinary homeserver: people, devices, rooms, federation peers.

Every request is built with an arrival time and a processing time in integer
milliseconds; the log line is written when it finishes, as Synapse does.
Times are relative to START; the simulation starts WARMUP_MS early so the log
opens mid-stream (long-polls that arrived before 10:00:00 finish after it).
"""

import bisect
import datetime

from . import ids

SEED = 20261130
START = datetime.datetime(2026, 11, 30, 10, 0, 0)
DURATION_MS = 300_000
WARMUP_MS = 40_000
SERVER = "example.org"
FIRST_REQUEST_SEQ = 187_204

# (key, user agent, client API prefix, authenticated media, mobile)
CLIENTS = [
    ("element-web",
     "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, "
     "like Gecko) Chrome/131.0.0.0 Safari/537.36", "v3", True, False),
    ("element-desktop",
     "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
     "Element/1.11.85 Chrome/130.0.6723.137 Electron/33.2.0 Safari/537.36",
     "v3", True, False),
    ("element-android",
     "Element/1.6.24 (Google Pixel 7; Android 14; UQ1A.240105.004; Flavour "
     "GooglePlay; MatrixAndroidSdk2 1.6.24)", "r0", False, True),
    ("element-x",
     "Element X iOS/25.11.3 (iPhone15,2; iOS 18.1; Scale/3.00)", "v3", True,
     True),
    ("fluffychat", "Dart/3.5 (dart:io)", "v3", True, True),
    ("riot-legacy",
     "Riot.im/0.9.12 (Linux; U; Android 9; SM-G960F Build/PPR1; Flavour FDroid; "
     "MatrixAndroidSDK 0.9.23)", "r0", False, True),
]
CLIENT_WEIGHTS = [30, 22, 18, 14, 10, 3]

FIRST_NAMES = (
    "alice bob carol dave erin frank grace heidi ivan judy karl lena mia "
    "nora oscar peggy quinn rupert sybil trent ursula victor wendy xavier "
    "yusuf zoe amir bea chen dana emil fatima gus hana igor jonas kai lucia "
    "mateo nadia olga pavel rosa sven tomas uma vera wei yara").split()
SUFFIXES = ["", ".m", "_k", "2", "-dev", ".work"]


class Request:
    __slots__ = ("arrival", "duration", "method", "target", "ip", "requester",
                 "status", "size", "ua", "kind", "actor", "seq")

    def __init__(self, arrival, duration, method, target, ip, requester,
                 status, size, ua, kind, actor):
        self.arrival = arrival
        self.duration = max(1, int(duration))
        self.method = method
        self.target = target
        self.ip = ip
        self.requester = requester
        self.status = status
        self.size = size
        self.ua = ua
        self.kind = kind
        self.actor = actor
        self.seq = 0

    @property
    def finish(self):
        return self.arrival + self.duration


class Simulation:
    def __init__(self, rnd):
        self.rnd = rnd
        self.requests = []
        # Non-request lines: (time_ms, [lines]) in Synapse's format.
        self.other_lines = []
        self.room_events = {}  # room id -> sorted event times (ms)

    def add(self, arrival, duration, method, target, ip, requester, ua,
            kind, actor, status="200", size=None):
        if size is None:
            size = self.rnd.randint(2, 900)
        r = Request(int(arrival), duration, method, target, ip, requester,
                    status, size, ua, kind, actor)
        self.requests.append(r)
        return r

    def room_event(self, room, t):
        bisect.insort(self.room_events.setdefault(room, []), int(t))

    def next_event(self, rooms, after):
        best = None
        for room in rooms:
            times = self.room_events.get(room)
            if not times:
                continue
            i = bisect.bisect_right(times, after)
            if i < len(times) and (best is None or times[i] < best):
                best = times[i]
        return best


class Device:
    def __init__(self, user, client, ip):
        (self.client, self.ua, self.api, self.auth_media,
         self.mobile) = client
        self.user = user
        self.ip = ip
        self.background = False
        self.starts_at = None  # set when the app opens during the window
        self.logs_in = False
        self.mistypes = False
        self.txn = 0


class Population:
    def __init__(self):
        self.users = []      # user ids, ordinary only
        self.devices = []
        self.rooms = []      # (room id, encrypted, popularity)
        self.members = {}    # room id -> [user ids]
        self.user_rooms = {}  # user id -> [room ids]
        self.remote_rooms = {}  # room id -> [remote server names]
        self.remote_servers = []  # (name, ip, events per minute)
        self.bridge = None
        self.office_ip = "203.0.113.10"


def build_population(rnd):
    p = Population()
    names = []
    for suffix in SUFFIXES:
        for first in FIRST_NAMES:
            names.append(first + suffix)
    rnd.shuffle(names)
    p.users = ["@%s:%s" % (n, SERVER) for n in names[:150]]

    # Rooms: a few big public rooms, team rooms, and DMs (encrypted).
    for i in range(6):
        p.rooms.append((ids.room_id(rnd, SERVER), False, 4.0 / (i + 1)))
    for _ in range(24):
        p.rooms.append((ids.room_id(rnd, SERVER), rnd.random() < 0.6, 1.0))
    for _ in range(8):  # rooms hosted elsewhere that locals joined
        p.rooms.append((ids.room_id(rnd, "matrix.example.com"), False, 2.0))
    for room, _, _ in p.rooms:
        p.members[room] = []
    for u in p.users:
        p.user_rooms[u] = []
    big = [r for r, _, _ in p.rooms[:6]]
    for u in p.users:
        rooms = []
        for i, r in enumerate(big):
            if rnd.random() < (0.7 if i == 0 else 0.3):
                rooms.append(r)
        pool = [r for r, _, _ in p.rooms[6:]]
        for r in rnd.sample(pool, rnd.randint(1, 3)):
            rooms.append(r)
        for r in rooms:
            p.members[r].append(u)
            p.user_rooms[u].append(r)
    # DMs: pairs of users, encrypted.
    for _ in range(40):
        a, b = rnd.sample(p.users, 2)
        room = ids.room_id(rnd, SERVER)
        p.rooms.append((room, True, 1.5))
        p.members[room] = [a, b]
        p.user_rooms[a].append(room)
        p.user_rooms[b].append(room)

    p.remote_servers = [
        ("matrix.example.com", "203.0.113.50", 12),
        ("chat.example.net", "198.51.100.80", 6),
        ("hs.example.de", "2001:db8:de::8448", 6),
        ("mx.example.fr", "192.0.2.140", 4),
        ("tiny.example.io", "2001:db8:77:1::2", 1),
    ]
    names = [s[0] for s in p.remote_servers]
    for room, _, _ in p.rooms[1:6] + p.rooms[30:38]:
        p.remote_rooms[room] = rnd.sample(names, rnd.randint(1, 3))

    # Devices: addresses in the documentation ranges, an office NAT shared by
    # a handful of people, some IPv6 households.
    used_ips = set()

    def fresh_ipv4():
        while True:
            net = rnd.choice(["198.51.100", "203.0.113", "192.0.2"])
            ip = "%s.%d" % (net, rnd.randint(100, 250))
            if ip not in used_ips and ip not in RESERVED_IPS:
                used_ips.add(ip)
                return ip

    def fresh_ipv6():
        while True:
            ip = "2001:db8:%x:%x:%x:%x:%x:%x" % tuple(
                [rnd.randint(0x100, 0xfff), rnd.randint(1, 0xff)] +
                [rnd.randint(0, 0xffff) for _ in range(4)])
            if ip not in used_ips and not ip.startswith("2001:db8:bad:"):
                used_ips.add(ip)
                return ip

    for i, u in enumerate(p.users):
        n_devices = 1 if rnd.random() < 0.55 else 2
        for d in range(n_devices):
            client = rnd.choices(CLIENTS, CLIENT_WEIGHTS)[0]
            if i % 25 == 0 and d == 0:
                ip = p.office_ip
            elif client[4] and rnd.random() < 0.5:
                ip = fresh_ipv6()
            else:
                ip = fresh_ipv4()
            dev = Device(u, client, ip)
            dev.background = dev.mobile and rnd.random() < 0.55
            p.devices.append(dev)
    # A bridge (appservice) acting for its puppets, on the LAN.
    p.bridge = {
        "sender": "@telegrambot:" + SERVER,
        "ip": "10.20.0.5",
        "ua": "mautrix-telegram/0.15.2 mautrix-python/0.20.6 aiohttp/3.10.10 "
              "Python/3.12",
        "puppets": ["@telegram_%d:%s" % (rnd.randint(10**8, 10**9), SERVER)
                    for _ in range(12)],
        "rooms": [r for r, _, _ in p.rooms[8:12]],
    }
    return p


# Addresses that belong to the attackers (see attacks.py): never ordinary.
RESERVED_IPS = {"192.0.2.66", "198.51.100.23", "203.0.113.77",
                "203.0.113.50", "198.51.100.80", "192.0.2.140", "203.0.113.10"}


def prefix(dev):
    return "/_matrix/client/" + dev.api


def media_prefix(dev, kind):
    if dev.auth_media:
        return "/_matrix/client/v1/media/" + kind
    return "/_matrix/media/%s/%s" % ("r0" if dev.api == "r0" else "v3", kind)


def txn_id(dev, t):
    dev.txn += 1
    wall = ids.epoch_ms(START, t)
    if dev.client in ("element-web", "element-desktop"):
        return "m%d.%d" % (wall, dev.txn)
    if dev.client == "fluffychat":
        return str(wall)
    return "%d%d" % (wall, dev.txn)


from .ordinary import ordinary_traffic  # noqa: E402,F401
from .render import render_synapse_log  # noqa: E402,F401
