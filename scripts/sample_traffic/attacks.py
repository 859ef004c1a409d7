"""The four attacks mixed into the ordinary traffic.

Each is one actor with a fixed identity, so the README can name it and the
replay's summary can be checked against it.
"""

from . import ids
from .model import DURATION_MS, SERVER

LOGIN_NET = "2001:db8:bad:cafe"  # the /64 the login attacker rotates in
SPAMMER = "@xk7q2vb:" + SERVER
SPAMMER_IP = "192.0.2.66"
SCANNER_IP = "198.51.100.23"
CLAIMER = "@mallory:" + SERVER
CLAIMER_IP = "203.0.113.77"

SCAN_PATHS = [
    "/wp-admin/setup-config.php", "/wp-login.php", "/xmlrpc.php", "/.env",
    "/.env.production", "/api/.env", "/admin/.env", "/.git/config",
    "/.git/HEAD", "/.aws/credentials", "/config.json", "/server-status",
    "/phpmyadmin/index.php", "/pma/index.php", "/actuator/health",
    "/actuator/env", "/vendor/phpunit/phpunit/src/Util/PHP/eval-stdin.php",
    "/cgi-bin/luci/;stok=/locale", "/owa/auth/logon.aspx", "/boaform/admin/"
    "formLogin", "/.DS_Store", "/backup.zip", "/wp-content/plugins/",
    "/solr/admin/info/system", "/console/", "/HNAP1/", "/.well-known/"
    "security.txt", "/robots.txt", "/sitemap.xml", "/index.php?s=/Index/"
    "\\think\\app/invokefunction", "/_synapse/admin/v1/server_version",
    "/_matrix/client/versions", "/_matrix/federation/v1/version",
    "/_matrix/client/r0/admin/whois/%40admin%3Aexample.org",
    "/_synapse/admin/v2/users?from=0&limit=100",
]
# Real endpoints the scanner also probes, with the status Synapse gives.
SCAN_STATUS = {"/_synapse/admin/v1/server_version": "200",
               "/_matrix/client/versions": "200",
               "/_matrix/federation/v1/version": "200",
               "/_matrix/client/r0/admin/whois/%40admin%3Aexample.org": "401",
               "/_synapse/admin/v2/users?from=0&limit=100": "401"}


def add_attacks(sim, p):
    rnd = sim.rnd
    info = {}

    # (a) Password guessing from one IPv6 /64, a new address per attempt:
    # per-address limits never see the same client twice.
    t = 45_000
    while t < 285_000:
        ip = "%s:%x:%x:%x:%x" % (LOGIN_NET, rnd.randint(0, 0xffff),
                                 rnd.randint(0, 0xffff), rnd.randint(0, 0xffff),
                                 rnd.randint(1, 0xffff))
        api = "r0" if rnd.random() < 0.15 else "v3"
        sim.add(t, rnd.randint(90, 260), "POST",
                "/_matrix/client/%s/login" % api, ip, "None",
                "python-requests/2.32.3", "attack-login", LOGIN_NET + "::/64",
                status="403", size=rnd.choice([70, 70, 71]))
        t += int(rnd.expovariate(4.0 / 1000)) + 1
    info["login"] = {"net": LOGIN_NET + "::/64", "from_s": 45, "to_s": 285,
                     "rate": "4/s (Poisson)"}

    # (b) A script looping over invented room IDs and txn IDs, as fast as the
    # server answers: per-route keys would mint a bucket per room.
    t = 100_000
    n = 0
    while t < 220_000:
        n += 1
        room = ids.room_id(rnd, SERVER)
        api = "r0" if n % 3 == 0 else "v3"
        dur = rnd.randint(4, 22)
        sim.add(t, dur, "PUT", "/_matrix/client/%s/rooms/%s/send/"
                "m.room.message/txn%d" % (api, ids.enc_strict(room), n),
                SPAMMER_IP, SPAMMER, "matrix-nio/0.25.2", "attack-send-loop",
                SPAMMER, status="403", size=74)
        t += dur + rnd.randint(55, 95)
    info["send_loop"] = {"user": SPAMMER, "ip": SPAMMER_IP, "from_s": 100,
                         "to_s": 220, "rate": "~12/s, one new room each"}

    # (c) An unknown-path scanner: web-app probes and made-up Matrix paths.
    t = 60_000
    i = 0
    while t < 120_000:
        if rnd.random() < 0.35:
            path = "/_matrix/client/v3/nonexistent/%s" % ids.media_id(rnd)[:8]
        else:
            path = SCAN_PATHS[i % len(SCAN_PATHS)]
            i += 1
        sim.add(t, rnd.randint(1, 4), "GET", path, SCANNER_IP, "None",
                "Mozilla/5.0 zgrab/0.x", "attack-scanner", SCANNER_IP,
                status=SCAN_STATUS.get(path, "404"), size=rnd.choice([68, 69]))
        t += rnd.randint(10, 40)
    info["scanner"] = {"ip": SCANNER_IP, "from_s": 60, "to_s": 120,
                       "rate": "~40/s"}

    # (d) One account claiming one-time keys in a loop (draining every
    # device's OTKs), while its client otherwise behaves and syncs.
    t = 150_000
    ua = ("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like "
          "Gecko) Element/1.11.85 Chrome/130.0.6723.137 Electron/33.2.0 "
          "Safari/537.36")
    while t < 270_000:
        api = "r0" if rnd.random() < 0.2 else "v3"
        dur = rnd.randint(15, 80)
        sim.add(t, dur, "POST", "/_matrix/client/%s/keys/claim" % api,
                CLAIMER_IP, CLAIMER, ua, "attack-keys-claim", CLAIMER,
                size=rnd.randint(200, 900))
        t += dur + rnd.randint(60, 140)
    t = -30_000 + rnd.randint(0, 5_000)
    while t < DURATION_MS:
        dur = rnd.randint(5_000, 30_000)
        sim.add(t, dur, "GET", "/_matrix/client/v3/sync?filter=0&timeout=30000"
                "&since=%s" % ids.sync_token(724_000 + (t + 40_000) // 180),
                CLAIMER_IP, CLAIMER, ua, "attack-keys-claim-sync", CLAIMER,
                size=rnd.randint(200, 3000))
        t += dur + rnd.randint(20, 100)
    info["keys_claim"] = {"user": CLAIMER, "ip": CLAIMER_IP, "from_s": 150,
                          "to_s": 270, "rate": "~8/s"}
    return info
