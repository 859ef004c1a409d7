"""The two small samples: hand-checkable tsv and nginx files.

Written out line by line (no randomness) so a person can read each line
against examples/data/README.md and golden tests can assert on them.
"""

TSV_ROWS = [
    # (time ms, method, target, ip, user)
    # Ordinary: bob syncs and chats; carol claims keys once for a new session.
    (0, "GET", "/_matrix/client/v3/sync?timeout=30000&since=s100_1",
     "198.51.100.7", "@bob:example.org"),
    (250, "GET", "/_matrix/client/versions", "198.51.100.7", "-"),
    # (a) the login attacker: eight addresses of one IPv6 /64, 0.5 s apart.
    (1000, "POST", "/_matrix/client/v3/login", "2001:db8:bad:cafe::1", "-"),
    (1500, "POST", "/_matrix/client/v3/login", "2001:db8:bad:cafe::2", "-"),
    (2000, "POST", "/_matrix/client/r0/login", "2001:db8:bad:cafe:1::3", "-"),
    (2000, "POST", "/_matrix/client/v3/login", "203.0.113.5", "-"),
    (2500, "POST", "/_matrix/client/v3/login", "2001:db8:bad:cafe::4", "-"),
    (3000, "POST", "/_matrix/client/v3/login", "2001:db8:bad:cafe:ff::5", "-"),
    (3500, "POST", "/_matrix/client/v3/login", "2001:db8:bad:cafe::6", "-"),
    (4000, "POST", "/_matrix/client/r0/login", "2001:db8:bad:cafe::7", "-"),
    (4500, "POST", "/_matrix/client/v3/login", "2001:db8:bad:cafe::8", "-"),
    # (c) the scanner: unknown paths from one address.
    (5000, "GET", "/.env", "192.0.2.99", "-"),
    (5020, "GET", "/wp-login.php", "192.0.2.99", "-"),
    (5040, "GET", "/_matrix/client/v3/nonexistent/aaaa", "192.0.2.99", "-"),
    (5060, "GET", "/.git/config", "192.0.2.99", "-"),
    (5080, "GET", "/_matrix/client/v3/nonexistent/bbbb", "192.0.2.99", "-"),
    (5100, "GET", "/phpmyadmin/index.php", "192.0.2.99", "-"),
    # Media: an anonymous legacy download and an authenticated thumbnail.
    (6000, "GET", "/_matrix/media/v3/download/example.org/AbCdEfGhIj",
     "198.51.100.8", "-"),
    (6100, "GET", "/_matrix/client/v1/media/thumbnail/example.org/AbCdEfGhIj"
     "?width=96&height=96&method=crop", "198.51.100.9", "@dave:example.org"),
    # (b) alice sends 12 messages to 12 made-up rooms in 1.1 s, r0 and v3.
] + [
    (10000 + i * 100, "PUT", "/_matrix/client/%s/rooms/!room%02d%%3Aexample.org"
     "/send/m.room.message/txn%d" % ("r0" if i % 2 else "v3", i, i),
     "203.0.113.20", "@alice:example.org") for i in range(12)
] + [
    (12000, "PUT", "/_matrix/client/v3/rooms/!team%3Aexample.org/typing/"
     "%40bob%3Aexample.org", "198.51.100.7", "@bob:example.org"),
    (15000, "PUT", "/_matrix/client/v3/rooms/!team%3Aexample.org/send/"
     "m.room.message/m1.1", "198.51.100.7", "@bob:example.org"),
    (15400, "POST", "/_matrix/client/v3/rooms/!team%3Aexample.org/"
     "read_markers", "198.51.100.9", "@dave:example.org"),
    (20000, "PUT", "/_matrix/federation/v1/send/1796032820000", "203.0.113.50",
     "-"),
    (20500, "GET", "/_matrix/key/v2/server", "203.0.113.50", "-"),
    # (d) carol: one legitimate claim, then a burst of four more.
    (30000, "POST", "/_matrix/client/v3/keys/query", "198.51.100.10",
     "@carol:example.org"),
    (30100, "POST", "/_matrix/client/v3/keys/claim", "198.51.100.10",
     "@carol:example.org"),
    (30200, "POST", "/_matrix/client/v3/keys/claim", "198.51.100.10",
     "@carol:example.org"),
    (30300, "POST", "/_matrix/client/r0/keys/claim", "198.51.100.10",
     "@carol:example.org"),
    (30400, "POST", "/_matrix/client/v3/keys/claim", "198.51.100.10",
     "@carol:example.org"),
    (30500, "POST", "/_matrix/client/v3/keys/claim", "198.51.100.10",
     "@carol:example.org"),
    (30000, "GET", "/_matrix/client/v3/sync?timeout=30000&since=s140_1",
     "198.51.100.7", "@bob:example.org"),
    (40000, "PUT", "/_matrix/client/v3/rooms/!team%3Aexample.org/send/"
     "m.room.message/m1.2", "198.51.100.7", "@bob:example.org"),
    (45000, "PUT", "/_matrix/client/v3/rooms/!team%3Aexample.org/send/"
     "m.room.message/m9.1", "198.51.100.9", "@dave:example.org"),
    (50000, "GET", "/_matrix/client/v3/profile/%40bob%3Aexample.org",
     "198.51.100.9", "@dave:example.org"),
    (55000, "POST", "/_matrix/client/v3/login", "2001:db8:bad:cafe::9", "-"),
    (60000, "GET", "/_matrix/client/v3/sync?timeout=30000&since=s180_1",
     "198.51.100.7", "@bob:example.org"),
    (60100, "GET", "/_matrix/client/v3/sync?timeout=30000&since=s180_1",
     "2001:db8:1:2::17", "@erin:example.org"),
]


def tsv_sample():
    rows = sorted(enumerate(TSV_ROWS), key=lambda e: (e[1][0], e[0]))
    return "".join("\t".join(str(f) for f in row) + "\n" for _, row in rows)


UA_WEB = ("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like "
          "Gecko) Chrome/131.0.0.0 Safari/537.36")
UA_ANDROID = "Element/1.6.24 (Google Pixel 7; Android 14; MatrixAndroidSdk2)"

# (second, ip, request, status, bytes, user agent). The server's clock is
# UTC+1: 11:00:00 +0100 is 10:00:00 UTC.
NGINX_ROWS = [
    (0, "198.51.100.7", "GET /_matrix/client/v3/sync?timeout=30000&since="
     "s100_1 HTTP/1.1", 200, 412, UA_WEB),
    (0, "2001:db8:1:2::17", "GET /_matrix/client/r0/sync?filter=0&timeout="
     "30000&since=s100_1 HTTP/1.1", 200, 388, UA_ANDROID),
    (1, "198.51.100.7", "GET /_matrix/client/versions HTTP/1.1", 200, 1402,
     UA_WEB),
] + [
    (2 + i, "2001:db8:bad:cafe::%x" % (0x10 + i * 7),
     "POST /_matrix/client/%s/login HTTP/1.1" % ("r0" if i % 4 == 3 else "v3"),
     403, 70, "python-requests/2.32.3") for i in range(10)
] + [
    (4, "192.0.2.99", "-", 400, 0, "-"),
    (5, "192.0.2.99", "\\x16\\x03\\x01\\x00\\xF1\\x01\\x00\\x00\\xED\\x03\\x03",
     400, 157, "-"),
    (5, "192.0.2.99", "GET /", 400, 157, "-"),
] + [
    (6, "192.0.2.99", "GET %s HTTP/1.1" % path, 404, 68, "Mozilla/5.0 zgrab/0.x")
    for path in ["/.env", "/wp-login.php", "/.git/config",
                 "/_matrix/client/v3/nonexistent/x1", "/actuator/health",
                 "/_matrix/client/r0/nonexistent/x2"]
] + [
    (8 + i // 4, "203.0.113.20", "PUT /_matrix/client/v3/rooms/!r%d%%3A"
     "example.org/send/m.room.message/txn%d HTTP/1.1" % (i, i), 403, 74,
     "matrix-nio/0.25.2") for i in range(12)
] + [
    (12, "198.51.100.7", "PUT /_matrix/client/v3/rooms/!team%3Aexample.org/"
     "send/m.room.message/m1.1 HTTP/1.1", 200, 59, UA_WEB),
    (12, "198.51.100.9", "GET /_matrix/client/v1/media/thumbnail/example.org/"
     "AbCdEfGhIj?width=96&height=96&method=crop HTTP/2.0", 200, 5120, UA_WEB),
    (13, "198.51.100.8", "GET /_matrix/media/v3/download/example.org/"
     "AbCdEfGhIj HTTP/1.1", 200, 88211, "curl/8.11.0"),
    (14, "203.0.113.50", "PUT /_matrix/federation/v1/send/1796032814000 "
     "HTTP/1.1", 200, 27, "Synapse/1.157.1"),
    (15, "203.0.113.50", "GET /_matrix/key/v2/server HTTP/1.1", 200, 410,
     "Synapse/1.157.1"),
    (20, "198.51.100.10", "POST /_matrix/client/v3/keys/query HTTP/1.1", 200,
     2400, UA_WEB),
    (21, "198.51.100.10", "POST /_matrix/client/v3/keys/claim HTTP/1.1", 200,
     512, UA_WEB),
    (30, "198.51.100.7", "GET /_matrix/client/v3/sync?timeout=30000&since="
     "s140_1 HTTP/1.1", 200, 388, UA_WEB),
    (30, "2001:db8:1:2::17", "GET /_matrix/client/r0/sync?filter=0&timeout="
     "30000&since=s140_1 HTTP/1.1", 200, 388, UA_ANDROID),
    (31, "203.0.113.5", "POST /_matrix/client/v3/login HTTP/1.1", 200, 420,
     UA_WEB),
]


def nginx_sample():
    out = []
    for sec, ip, request, status, size, ua in sorted(
            NGINX_ROWS, key=lambda r: r[0]):
        out.append('%s - - [30/Nov/2026:11:00:%02d +0100] "%s" %d %d "-" "%s"\n'
                   % (ip, sec, request, status, size, ua))
    return "".join(out)
