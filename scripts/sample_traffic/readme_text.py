"""The prose of examples/data/README.md; figures come from report.py."""

TEMPLATE = """\
# Sample traffic

Three access logs for trying `mxlimit replay` and for its golden tests, and
four more with the same requests in the shapes operators' logs come in. All
are written by `scripts/gen_sample_traffic.py` (Python 3 standard
library, fixed seed {seed}: two runs give byte-identical files). Regenerate
with `python3 scripts/gen_sample_traffic.py`; `--check` exits 1 when the
committed files are stale. Every figure in the `sample-synapse.log` section
is computed by that script from the generated lines, as a replay sees them
(arrival = finish timestamp minus processing time), so that section and the
data cannot disagree; the two small files are written out line by line and
described by hand.

Addresses are from the documentation ranges (192.0.2.0/24, 198.51.100.0/24,
203.0.113.0/24, 2001:db8::/32) plus LAN addresses for the bridge and the load
balancer; server names are under `example.*`.

## `sample-synapse.log`: five minutes of a homeserver

{minutes} minutes (10:00:00 to 10:05:00 on 2026-11-30, server time) of
`example.org`'s request log in Synapse's exact access-log format
(`synapse.access.http.8008`, the `(ru) (db)` timing layout, request ids
`METHOD-N` counted in arrival order, lines in finish order).

- **{lines} lines: {requests} requests and {other_lines} other lines**: an
  `ERROR` from `synapse.http.server` with its six-line traceback (the request
  it belongs to is logged right after it, status 500), and three lines from
  other loggers. A replay must count those {other_lines} as invalid and go on.
- The log opens mid-stream: long-polls that arrived before 10:00:00 finish
  after it, so the earliest arrival times are up to 30 s before the first
  timestamp.

### The ordinary server ({legit} requests)

- **People**: {users_active} local users active in the window (150
  accounts; some offline), on one or two devices each, from {ips_legit}
  addresses in all (with federation peers). Clients: Element Web and Desktop
  (`v3`, authenticated media), Element Android (`r0` paths, legacy
  `/_matrix/media/r0`), Element X (`POST …/org.matrix.simplified_msc3575/sync`),
  FluffyChat, and an old Riot that still puts `access_token=<redacted>` in the
  query and leaves `:` unencoded in room IDs. One office NAT address
  (`203.0.113.10`) is shared by six people and the server admin.
- **What they do**: long-poll `/sync` ({syncs} syncs; a sync returns when an
  event arrives in one of the user's rooms, else after 30 s; mobile apps in
  the background only do a catch-up sync now and then; a few `200!` where the
  client went away), typing, sends (`m.room.message`, `m.room.encrypted`,
  `m.reaction`, redactions; txn ids in each client's style), read markers and
  receipts, `/keys/query`, `/keys/upload`, an occasional legitimate
  `/keys/claim`, `sendToDevice`, room history, members, state, profiles,
  presence, push rules, thumbnails and downloads (authenticated
  `/_matrix/client/v1/media/…` and legacy `/_matrix/media/v3|r0/…`, the
  legacy ones anonymous `{{None}}`), uploads (`/_matrix/media/v3/upload`).
  Twelve apps open during the window (`.well-known`, `/versions`,
  capabilities, filter, catch-up sync); three of them log in first (one
  mistypes the password once: a 403 then a 200). A newcomer registers
  (`/register` 401 then 200) from `198.51.100.201` and joins `#welcome`.
- **A bridge** ({bridge} requests): `@telegrambot:example.org` at `10.20.0.5`
  sending as its puppets: requester `{{@telegrambot:example.org|@telegram_…}}`,
  charged to the puppet (the acted-for user).
- **An admin** acting as a user: `{{@admin:example.org|@…}}`.
- **Federation** ({federation} requests): five peers
  (`matrix.example.com` 203.0.113.50, `chat.example.net` 198.51.100.80,
  `hs.example.de` 2001:db8:de::8448, `mx.example.fr` 192.0.2.140,
  `tiny.example.io` 2001:db8:77:1::2): `/send/{{txnId}}` transactions, profile
  and device queries, `/event`, `/state_ids`, `/get_missing_events`, media
  (federation and legacy), `/_matrix/key/v2/server` (anonymous), one
  `make_join` + `send_join` (`@jo:hs.example.de`) and one notary
  `/_matrix/key/v2/query`. Requester `{{server.name}}`: no user is charged.

How busy the legitimate traffic gets (IPv6 grouped per /64):

{peaks_table}

### The attacks

{attack_table}

- **(a)** a password-guessing script (`python-requests`), a fresh address of
  the same /64 for every `POST /_matrix/client/v3/login` (some `r0`), all
  answered 403. Per-address limits never see the same client twice; per-/64
  buckets see one client.
- **(b)** a logged-in bot (`matrix-nio`) sending to a made-up room each time
  (`PUT /_matrix/client/v3|r0/rooms/!<random>:example.org/send/m.room.message/
  txnN`, room IDs encoded `%21…%3A…`), answered 403 (not in room).
- **(c)** a scanner (`zgrab`) at ~40 requests/s for a minute: web-app probes
  (`/.env`, `/wp-login.php`, `/.git/config`, …), made-up Matrix paths
  (`/_matrix/client/v3/nonexistent/…`) and a few real endpoints
  (`/_matrix/client/versions`, `/_synapse/admin/…`); {scanner_unknown} of
  its requests got a 404.
- **(d)** a logged-in account draining one-time keys
  (`POST /_matrix/client/v3|r0/keys/claim`, 200), whose client otherwise
  just syncs ({claimer_syncs} syncs, not counted as attack requests above).

### What a replay should show

With the library's defaults (per-IP keys: IPv4 /32, IPv6 /64), replaying the
records through each limit alone gives the figures below (same GCRA as
`include/mxlimit/rate.h`). The built-in policies combine such limits, so
their exact counts differ, but the headline must hold: every attack limited,
the legitimate traffic untouched.

{outcome_table}

The catch-all row illustrates how far apart the scanner and the busiest
legitimate address are; it is not a built-in value (under it, the other
attackers: {catch_all_others}). The legitimate peaks table above is the
margin to keep when choosing such numbers: `{busiest_ip}` is the busiest
legitimate address.

## `sample.tsv`: {tsv_lines} lines, by hand

`TIME_MS METHOD TARGET IP USER`, tab-separated, times from 0 to 60 100 ms.

| who | lines | expected under Synapse-like limits |
|---|---|---|
| `2001:db8:bad:cafe::/64`, anonymous | 9 `POST /login` (8 within 1.0–4.5 s, `v3` and `r0`, one more at 55 s) | 5 allowed, 4 denied (0.003/s burst 5 per /64) |
| `203.0.113.5`, anonymous | 1 `POST /login` at 2.0 s | allowed: its own address |
| `192.0.2.99`, anonymous | 6 unknown paths in 100 ms | all on the one fallback route |
| `@alice:example.org` at `203.0.113.20` | 12 sends to 12 made-up rooms in 1.1 s, `v3`/`r0` alternating | 10 allowed, 2 denied (0.2/s burst 10): only if `r0` and `v3` share one counter and room IDs do not split it |
| `@carol:example.org` | 1 `/keys/query` + 5 `/keys/claim` (one `r0`) in 0.5 s | allowed (120/min) |
| `@bob`, `@dave`, `@erin`, `198.51.100.8`, `203.0.113.50` (federation) | syncs, typing, sends, read markers, media, `/versions`, `/send/{{txnId}}`, key fetch | allowed |

## `sample-nginx.log`: {nginx_lines} lines of nginx `combined`

Server clock at UTC+1 (`[30/Nov/2026:11:00:00 +0100]` is 10:00:00 UTC), no
Matrix user anywhere (nginx does not know it), so only per-IP limits apply.

- **3 invalid lines** from `192.0.2.99`: request `"-"`, TLS bytes sent to
  the plain-HTTP port (`"\\x16\\x03\\x01…"`), and `"GET /"` without a protocol.
- `2001:db8:bad:cafe::/64`: 10 `POST /login` at 11:00:02–11:00:11 →
  5 allowed, 5 denied at 0.003/s burst 5 per /64.
- `192.0.2.99`: 6 unknown paths at 11:00:06 (the fallback route).
- `203.0.113.20`: 12 sends to made-up rooms in 3 s, answered 403 (no user:
  only per-IP limits can see this one here).
- Everyone else (syncs, `/versions`, a send, media, federation `/send`,
  keys, one successful login from `203.0.113.5`): allowed.

## The same requests as operators' logs show them

Derived from the files above by `scripts/sample_traffic/operator_formats.py`,
so that each replays to the same decisions as its source (the CLI tests check
this line by line). Each has one line that is not a request, which a replay
must count as invalid.

- `sample-synapse-journald.log` ({journald_lines} lines): the first
  {json_requests} lines of `sample-synapse.log` as `journalctl -u
  matrix-synapse` prints the Debian package's console output
  (`Nov 30 10:00:00 hs1 python3[2217]: 2026-11-30 10:00:00,150 - …`), after
  systemd's "Started matrix-synapse.service" line.
- `sample-synapse.json.log` ({json_lines} lines): the same {json_requests}
  requests as Synapse's `TerseJsonFormatter` writes them (`log`, `namespace`,
  `level`, `time` rounded to 10 ms, then the request context: `request`,
  `ip_address`, `site_tag`, `requester`, `authenticated_entity`, `method`,
  `url`, `protocol`, `user_agent`), after a record of
  `synapse.replication.tcp.redis`.
- `sample-nginx-xff.log` ({nginx_lines} lines): `sample-nginx.log` behind a
  load balancer at `{balancer}`: that is every `$remote_addr`, and the client
  is in a trailing `"$http_x_forwarded_for"`. The login attacker puts a forged
  `{forged}` first in its header. Replayed with `--trusted-proxy 10.0.0.0/8`
  it gives the decisions of `sample-nginx.log`; without, every request is the
  balancer's.
- `sample-caddy.json.log` ({caddy_lines} lines): the {caddy_requests} valid
  requests of `sample-nginx.log` as Caddy's JSON access log behind the same
  balancer (`remote_ip` the balancer, `client_ip` the client, `ts` the
  arrival plus `duration`), after a `tls.cache.maintenance` entry. Caddy does
  not log the three malformed requests.
"""


def render(facts, population):
    from .small_samples import NGINX_ROWS, TSV_ROWS
    del population  # the facts carry everything the text needs
    from . import operator_formats as op
    return TEMPLATE.format(tsv_lines=len(TSV_ROWS),
                           nginx_lines=len(NGINX_ROWS),
                           journald_lines=op.SYNAPSE_LINES + 1,
                           json_lines=op.SYNAPSE_LINES + 1,
                           json_requests=op.SYNAPSE_LINES,
                           balancer=op.BALANCER, forged=op.FORGED_HOP,
                           caddy_lines=len(NGINX_ROWS) - 3 + 1,
                           caddy_requests=len(NGINX_ROWS) - 3, **facts)
