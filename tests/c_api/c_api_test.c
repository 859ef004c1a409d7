/* The C ABI (include/mxlimit/c.h) from C, single-threaded: every function,
 * the default configuration's limits, operator policies, reloads, config
 * errors and every argument error. c_api_threads_test.c covers concurrent
 * use; c_api_alloc_test.c proves the request path allocates nothing.
 *
 * Usage: c_api_test DATA_DIR (tests/data: bad_config.yaml and its .errors). */

#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mxlimit/c.h"
#include "tests/c_api/c_test.h"

static const char* g_data_dir;
static char g_tmp_dir[] = "/tmp/mxlimit_c_api_test_XXXXXX";

/* --- Helpers ------------------------------------------------------------- */

static void parse_ip(const char* text, uint8_t out[16]) {
  EXPECT_STATUS(mxlimit_parse_ip(text, strlen(text), out), MXLIMIT_OK);
}

/* mxlimit_check with C strings; `user` NULL for an anonymous request. */
static mxlimit_decision check_at(mxlimit_limiter* limiter, const char* method,
                                 const char* target, const char* ip,
                                 const char* user, int64_t now) {
  uint8_t client[16];
  parse_ip(ip, client);
  mxlimit_decision d = MXLIMIT_DECISION_INIT;
  EXPECT_STATUS(
      mxlimit_check(limiter, method, strlen(method), target, strlen(target),
                    client, user, user ? strlen(user) : 0, 1, 0, now, &d),
      MXLIMIT_OK);
  return d;
}

static mxlimit_decision peek_at(const mxlimit_limiter* limiter,
                                const char* method, const char* target,
                                const char* ip, const char* user, int64_t cost,
                                int64_t now) {
  uint8_t client[16];
  parse_ip(ip, client);
  mxlimit_decision d = MXLIMIT_DECISION_INIT;
  EXPECT_STATUS(
      mxlimit_peek(limiter, method, strlen(method), target, strlen(target),
                   client, user, user ? strlen(user) : 0, cost, 0, now, &d),
      MXLIMIT_OK);
  return d;
}

static void charge_at(mxlimit_limiter* limiter, const char* method,
                      const char* target, const char* ip, const char* user,
                      int64_t cost, int64_t now) {
  uint8_t client[16];
  parse_ip(ip, client);
  EXPECT_STATUS(
      mxlimit_charge(limiter, method, strlen(method), target, strlen(target),
                     client, user, user ? strlen(user) : 0, cost, 0, now),
      MXLIMIT_OK);
}

static mxlimit_limiter* new_from_yaml(const char* yaml) {
  mxlimit_limiter* limiter = NULL;
  char* err = NULL;
  const int rc = mxlimit_limiter_new_from_yaml(
      yaml, yaml ? strlen(yaml) : 0, "test.yaml", NULL, &limiter, &err);
  EXPECT_STATUS(rc, MXLIMIT_OK);
  if (err != NULL) fprintf(stderr, "unexpected error: %s\n", err);
  EXPECT(err == NULL);
  mxlimit_free(err);
  return limiter;
}

/* Reads a whole file into a malloc'd, NUL-terminated string. */
static char* read_file(const char* path) {
  FILE* f = fopen(path, "rb");
  EXPECT(f != NULL);
  if (f == NULL) return NULL;
  fseek(f, 0, SEEK_END);
  const long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  char* text = malloc((size_t)size + 1);
  const size_t got = fread(text, 1, (size_t)size, f);
  text[got] = '\0';
  fclose(f);
  return text;
}

static void write_file(const char* path, const char* text) {
  FILE* f = fopen(path, "wb");
  EXPECT(f != NULL);
  if (f == NULL) return;
  fputs(text, f);
  fclose(f);
}

static int64_t ceil_div(int64_t ns, int64_t unit) {
  return ns <= 0 ? 0 : ns / unit + (ns % unit != 0);
}

/* --- Version and status names --------------------------------------------- */

static void test_version(void) {
  EXPECT_INT(mxlimit_version(), MXLIMIT_VERSION_NUMBER);
  EXPECT_INT(mxlimit_version() >> 16, MXLIMIT_VERSION_MAJOR);
  EXPECT_INT((mxlimit_version() >> 8) & 0xFF, MXLIMIT_VERSION_MINOR);
  EXPECT_INT(mxlimit_version() & 0xFF, MXLIMIT_VERSION_PATCH);
}

static void test_status_names(void) {
  EXPECT(strcmp(mxlimit_status_name(MXLIMIT_OK), "MXLIMIT_OK") == 0);
  EXPECT(strcmp(mxlimit_status_name(MXLIMIT_EINVAL), "MXLIMIT_EINVAL") == 0);
  EXPECT(strcmp(mxlimit_status_name(MXLIMIT_EPRECONDITION),
                "MXLIMIT_EPRECONDITION") == 0);
  EXPECT(strcmp(mxlimit_status_name(MXLIMIT_EUNAUTHENTICATED),
                "MXLIMIT_EUNAUTHENTICATED") == 0);
  EXPECT(strcmp(mxlimit_status_name(-1), "MXLIMIT_E?") == 0);
  EXPECT(strcmp(mxlimit_status_name(17), "MXLIMIT_E?") == 0);
  /* The canonical numbers, which bindings may hard-code. */
  EXPECT_INT(MXLIMIT_EINVAL, 3);
  EXPECT_INT(MXLIMIT_ENOTFOUND, 5);
  EXPECT_INT(MXLIMIT_EPRECONDITION, 9);
  EXPECT_INT(MXLIMIT_ERANGE, 11);
}

/* --- The default configuration: the built-in policies ----------------------
 */

static void test_default_config_limits_login_per_address(void) {
  mxlimit_limiter* limiter = new_from_yaml(NULL); /* no text: the defaults */
  if (limiter == NULL) return;
  const char* login = "/_matrix/client/r0/login";
  const int64_t t0 = 1000000000;

  /* Built-in login-per-ip: burst 5, then 259 a day. */
  for (int i = 0; i < 5; ++i) {
    const mxlimit_decision d =
        check_at(limiter, "POST", login, "203.0.113.7", NULL, t0);
    EXPECT_INT(d.allowed, 1);
    EXPECT_INT(d.limited_by, MXLIMIT_SCOPE_NONE);
    EXPECT_STRN(d.policy, d.policy_len, "");
    EXPECT_STRN(d.route_key, d.route_key_len, "/_matrix/client/v3/login");
    EXPECT_INT(d.remaining, 4 - i);
  }
  const mxlimit_decision d =
      check_at(limiter, "POST", login, "203.0.113.7", NULL, t0);
  EXPECT_INT(d.allowed, 0);
  EXPECT_INT(d.never, 0);
  EXPECT_INT(d.exempt, 0);
  EXPECT_INT(d.limited_by, MXLIMIT_SCOPE_IP);
  EXPECT_STRN(d.policy, d.policy_len, "login-per-ip");
  EXPECT_STRN(d.route_key, d.route_key_len, "/_matrix/client/v3/login");
  EXPECT_INT(d.remaining, 0);
  /* One emission interval: a day / 259. */
  const int64_t interval = (int64_t)86400 * 1000000000 / 259;
  EXPECT(d.retry_after_ns >= interval - 1 && d.retry_after_ns <= interval + 1);

  /* The 429 pieces, rounded up. */
  char header[MXLIMIT_RETRY_AFTER_MAX];
  char body[MXLIMIT_BODY_MAX];
  char expected[128];
  size_t len = 0;
  EXPECT_STATUS(mxlimit_format_retry_after(&d, header, sizeof(header), &len),
                MXLIMIT_OK);
  snprintf(expected, sizeof(expected), "%" PRId64,
           ceil_div(d.retry_after_ns, 1000000000));
  EXPECT(strcmp(header, expected) == 0);
  EXPECT(strcmp(header, "334") == 0);
  EXPECT_INT(len, strlen(expected));
  EXPECT_STATUS(mxlimit_format_body(&d, body, sizeof(body), &len), MXLIMIT_OK);
  snprintf(expected, sizeof(expected),
           "{\"errcode\":\"M_LIMIT_EXCEEDED\",\"error\":\"Too many "
           "requests\",\"retry_after_ms\":%" PRId64 "}",
           ceil_div(d.retry_after_ns, 1000000));
  EXPECT(strcmp(body, expected) == 0);
  EXPECT_INT(len, strlen(expected));

  /* Waiting exactly the wait is enough; a nanosecond less is not. */
  EXPECT_INT(check_at(limiter, "POST", login, "203.0.113.7", NULL,
                      t0 + d.retry_after_ns - 1)
                 .allowed,
             0);
  EXPECT_INT(check_at(limiter, "POST", login, "203.0.113.7", NULL,
                      t0 + d.retry_after_ns)
                 .allowed,
             1);

  /* Another address, and another route of the same one, are untouched.
   * (Time only goes forward: an earlier `now` would grant nothing.) */
  const int64_t t1 = t0 + d.retry_after_ns;
  EXPECT_INT(check_at(limiter, "POST", login, "198.51.100.1", NULL, t1).allowed,
             1);
  const mxlimit_decision sync =
      check_at(limiter, "GET", "/_matrix/client/v3/sync?timeout=30000",
               "203.0.113.7", "@alice:example.org", t1);
  EXPECT_INT(sync.allowed, 1);
  EXPECT_STRN(sync.route_key, sync.route_key_len, "/_matrix/client/v3/sync");

  /* The embedder's exemption: nothing is checked. */
  uint8_t client[16];
  parse_ip("203.0.113.7", client);
  mxlimit_decision exempt = MXLIMIT_DECISION_INIT;
  EXPECT_STATUS(mxlimit_check(limiter, "POST", 4, login, strlen(login), client,
                              NULL, 0, 1, MXLIMIT_EXEMPT, t1, &exempt),
                MXLIMIT_OK);
  EXPECT_INT(exempt.allowed, 1);
  EXPECT_INT(exempt.exempt, 1);

  /* An unknown path shares the fallback key. */
  const mxlimit_decision unknown =
      check_at(limiter, "GET", "/wp-admin/", "203.0.113.7", NULL, t1);
  EXPECT_STRN(unknown.route_key, unknown.route_key_len, "<fallback>");
  mxlimit_limiter_free(limiter);
}

static void test_default_config_limits_message_send_per_user(void) {
  mxlimit_limiter* limiter = new_from_yaml("");
  if (limiter == NULL) return;
  /* Built-in message-send: per user, burst 10, then 12 a minute; each
   * request from its own address, so only the user scope can deny. */
  char target[128];
  char ip[32];
  for (int i = 0; i < 10; ++i) {
    snprintf(target, sizeof(target),
             "/_matrix/client/v3/rooms/!r:example.org/send/m.room.message/t%d",
             i);
    snprintf(ip, sizeof(ip), "192.0.2.%d", i + 1);
    EXPECT_INT(
        check_at(limiter, "PUT", target, ip, "@bob:example.org", 0).allowed, 1);
  }
  const mxlimit_decision d =
      check_at(limiter, "PUT",
               "/_matrix/client/v3/rooms/!r:example.org/send/m.room.message/"
               "t10",
               "192.0.2.99", "@bob:example.org", 0);
  EXPECT_INT(d.allowed, 0);
  EXPECT_INT(d.limited_by, MXLIMIT_SCOPE_USER);
  EXPECT_STRN(d.policy, d.policy_len, "message-send");
  EXPECT_STRN(d.route_key, d.route_key_len,
              "/_matrix/client/v3/rooms/{roomId}/send/{eventType}/{txnId}");
  EXPECT_INT(d.retry_after_ns, 5000000000); /* a minute / 12 */
  /* Another user is untouched. */
  EXPECT_INT(check_at(limiter, "PUT",
                      "/_matrix/client/v3/rooms/!r:example.org/send/"
                      "m.room.message/u1",
                      "192.0.2.99", "@carol:example.org", 0)
                 .allowed,
             1);
  mxlimit_limiter_free(limiter);
}

static void test_default_config_limits_joins_per_room(void) {
  mxlimit_limiter* limiter = new_from_yaml("");
  if (limiter == NULL) return;
  /* Built-in joins-per-room: burst 10 per room, whoever joins. Each join by
   * another user from another address: only the room scope can deny. */
  char user[64];
  char ip[32];
  for (int i = 0; i < 10; ++i) {
    snprintf(user, sizeof(user), "@u%d:example.org", i);
    snprintf(ip, sizeof(ip), "192.0.2.%d", i + 1);
    EXPECT_INT(check_at(limiter, "POST",
                        "/_matrix/client/v3/rooms/%21wave%3Aexample.org/join",
                        ip, user, 0)
                   .allowed,
               1);
  }
  const mxlimit_decision d =
      check_at(limiter, "POST", "/_matrix/client/v3/join/!wave:example.org",
               "192.0.2.99", "@late:example.org", 0);
  EXPECT_INT(d.allowed, 0);
  EXPECT_INT(d.limited_by, MXLIMIT_SCOPE_ROOM);
  EXPECT_STRN(d.policy, d.policy_len, "joins-per-room");
  mxlimit_limiter_free(limiter);
}

static void test_subjects_and_delays(void) {
  /* An origin-scope policy, and a delaying one. */
  mxlimit_limiter* limiter = new_from_yaml(
      "policies:\n"
      "  - name: fed\n"
      "    match: /_matrix/federation/*\n"
      "    scope: origin\n"
      "    share_threshold: true\n"
      "    rate_limit: { unit: minute, requests_per_unit: 1, burst: 2 }\n"
      "  - name: slow-rooms\n"
      "    match: /_matrix/client/v3/publicRooms\n"
      "    rate_limit: { unit: second, requests_per_unit: 10, burst: 1 }\n"
      "    on_limit: delay\n"
      "    max_delay: 500ms\n");
  if (limiter == NULL) return;
  uint8_t client[16];
  parse_ip("203.0.113.5", client);
  const char* fed = "/_matrix/federation/v1/version";
  mxlimit_decision d = MXLIMIT_DECISION_INIT;
  for (int i = 0; i < 2; ++i) {
    EXPECT_STATUS(
        mxlimit_check_subjects(limiter, "GET", 3, fed, strlen(fed), client,
                               NULL, 0, "matrix.org", 10, NULL, 0, 1, 0, 0, &d),
        MXLIMIT_OK);
    EXPECT_INT(d.allowed, 1);
  }
  EXPECT_STATUS(
      mxlimit_check_subjects(limiter, "GET", 3, fed, strlen(fed), client, NULL,
                             0, "matrix.org", 10, NULL, 0, 1, 0, 0, &d),
      MXLIMIT_OK);
  EXPECT_INT(d.allowed, 0);
  EXPECT_INT(d.limited_by, MXLIMIT_SCOPE_ORIGIN);
  EXPECT_STRN(d.policy, d.policy_len, "fed");
  /* Verified, the name alone is another bucket; another origin too. */
  EXPECT_STATUS(mxlimit_check_subjects(limiter, "GET", 3, fed, strlen(fed),
                                       client, NULL, 0, "matrix.org", 10, NULL,
                                       0, 1, MXLIMIT_ORIGIN_VERIFIED, 0, &d),
                MXLIMIT_OK);
  EXPECT_INT(d.allowed, 1);
  /* The plain call has no origin: the policy does not apply. */
  EXPECT_INT(check_at(limiter, "GET", fed, "203.0.113.5", NULL, 0).allowed, 1);

  const char* rooms = "/_matrix/client/v3/publicRooms";
  EXPECT_STATUS(mxlimit_check(limiter, "GET", 3, rooms, strlen(rooms), client,
                              NULL, 0, 1, MXLIMIT_MAY_DELAY, 0, &d),
                MXLIMIT_OK);
  EXPECT_INT(d.allowed, 1);
  EXPECT_INT(d.delay_ns, 0);
  EXPECT_STATUS(mxlimit_check(limiter, "GET", 3, rooms, strlen(rooms), client,
                              NULL, 0, 1, MXLIMIT_MAY_DELAY, 0, &d),
                MXLIMIT_OK);
  EXPECT_INT(d.allowed, 1);
  EXPECT_INT(d.delay_ns, 100000000);
  EXPECT_STRN(d.policy, d.policy_len, "slow-rooms");
  /* Without the flag, the same wait is a denial. */
  EXPECT_STATUS(mxlimit_check(limiter, "GET", 3, rooms, strlen(rooms), client,
                              NULL, 0, 1, 0, 0, &d),
                MXLIMIT_OK);
  EXPECT_INT(d.allowed, 0);
  EXPECT_INT(d.retry_after_ns, 200000000);
  EXPECT_INT(d.delay_ns, 0);
  /* An unknown flag is still refused. */
  EXPECT_STATUS(mxlimit_check(limiter, "GET", 3, rooms, strlen(rooms), client,
                              NULL, 0, 1, 64u, 0, &d),
                MXLIMIT_EINVAL);
  mxlimit_limiter_free(limiter);
}

/* The built-in initial-sync-in-flight: two initial syncs per user hold a
   lease each, released by mxlimit_release or ended by their lease time. */
static void test_leases(void) {
  mxlimit_limiter* limiter = new_from_yaml(NULL);
  if (limiter == NULL) return;
  const char* sync = "/_matrix/client/v3/sync";
  const char* user = "@a:example.org";
  mxlimit_decision first =
      check_at(limiter, "GET", sync, "203.0.113.9", user, 0);
  EXPECT_INT(first.allowed, 1);
  EXPECT_INT(first.lease_count, 1);
  mxlimit_decision second =
      check_at(limiter, "GET", sync, "203.0.113.9", user, 0);
  EXPECT_INT(second.allowed, 1);
  EXPECT_INT(second.lease_count, 1);
  EXPECT_INT(first.leases[0] != second.leases[0], 1);
  mxlimit_decision third =
      check_at(limiter, "GET", sync, "203.0.113.9", user, 0);
  EXPECT_INT(third.allowed, 0);
  EXPECT_INT(third.lease_count, 0);
  EXPECT_INT(third.limited_by, MXLIMIT_SCOPE_USER);
  EXPECT_STRN(third.policy, third.policy_len, "initial-sync-in-flight");
  EXPECT_INT(third.retry_after_ns, 180000000000);
  /* An incremental sync is not counted. */
  EXPECT_INT(check_at(limiter, "GET", "/_matrix/client/v3/sync?since=s1",
                      "203.0.113.9", user, 0)
                 .allowed,
             1);
  EXPECT_STATUS(mxlimit_release(limiter, first.leases, first.lease_count, 0),
                MXLIMIT_OK);
  EXPECT_INT(check_at(limiter, "GET", sync, "203.0.113.9", user, 0).allowed, 1);
  /* Twice: nothing more is freed. */
  EXPECT_STATUS(mxlimit_release(limiter, first.leases, first.lease_count, 0),
                MXLIMIT_OK);
  EXPECT_INT(check_at(limiter, "GET", sync, "203.0.113.9", user, 0).allowed, 0);
  /* After the lease time (180 s) every lease has ended. */
  EXPECT_INT(
      check_at(limiter, "GET", sync, "203.0.113.9", user, 181000000000).allowed,
      1);
  EXPECT_STATUS(mxlimit_release(NULL, first.leases, 1, 0), MXLIMIT_EINVAL);
  EXPECT_STATUS(mxlimit_release(limiter, NULL, 1, 0), MXLIMIT_EINVAL);
  EXPECT_STATUS(mxlimit_release(limiter, first.leases, 5, 0), MXLIMIT_EINVAL);
  EXPECT_STATUS(mxlimit_release(limiter, NULL, 0, 0), MXLIMIT_OK);

  /* A caller built before leases existed passes the second version's size:
     nothing past delay_ns is written. */
  mxlimit_decision old;
  memset(&old, 0xAA, sizeof(old));
  old.struct_size = (uint32_t)offsetof(mxlimit_decision, leases);
  uint8_t client[16];
  parse_ip("203.0.113.10", client);
  EXPECT_STATUS(mxlimit_check(limiter, "GET", 3, sync, strlen(sync), client,
                              "@b:example.org", 14, 1, 0, 0, &old),
                MXLIMIT_OK);
  EXPECT_INT(old.allowed, 1);
  /* It could never give its leases back, so it is not held to the in-flight
     limit: a third initial sync passes. */
  for (int i = 0; i < 2; ++i) {
    old.struct_size = (uint32_t)offsetof(mxlimit_decision, leases);
    EXPECT_STATUS(mxlimit_check(limiter, "GET", 3, sync, strlen(sync), client,
                                "@b:example.org", 14, 1, 0, 0, &old),
                  MXLIMIT_OK);
    EXPECT_INT(old.allowed, 1);
  }
  const unsigned char* tail = (const unsigned char*)&old.leases;
  for (size_t i = 0; i < sizeof(old) - offsetof(mxlimit_decision, leases);
       ++i) {
    EXPECT_INT(tail[i], 0xAA);
  }
  mxlimit_limiter_free(limiter);
}

/* --- Operator policies: never, shadow, user scope, peek, charge ----------- */

static const char kPolicies[] =
    "policies:\n"
    "  - name: blocked\n"
    "    match: /_matrix/client/v3/publicRooms\n"
    "    rate_limit: { unit: minute, requests_per_unit: 0 }\n"
    "  - name: keys-trial\n"
    "    match: /_matrix/client/v3/keys/query\n"
    "    shadow_mode: true\n"
    "    rate_limit: { unit: minute, requests_per_unit: 1 }\n"
    "  - name: sync-per-user\n"
    "    match: /_matrix/client/v3/sync\n"
    "    scope: user\n"
    "    rate_limit: { unit: second, requests_per_unit: 1, burst: 2 }\n";

static void test_never_has_no_retry_after(void) {
  mxlimit_limiter* limiter = new_from_yaml(kPolicies);
  if (limiter == NULL) return;
  const mxlimit_decision d = check_at(
      limiter, "GET", "/_matrix/client/v3/publicRooms", "192.0.2.1", NULL, 0);
  EXPECT_INT(d.allowed, 0);
  EXPECT_INT(d.never, 1);
  EXPECT_INT(d.retry_after_ns, 0);
  EXPECT_STRN(d.policy, d.policy_len, "blocked");
  char header[MXLIMIT_RETRY_AFTER_MAX] = "x";
  size_t len = 99;
  EXPECT_STATUS(mxlimit_format_retry_after(&d, header, sizeof(header), &len),
                MXLIMIT_OK);
  EXPECT_INT(len, 0); /* send no Retry-After */
  EXPECT(header[0] == '\0');
  char body[MXLIMIT_BODY_MAX];
  EXPECT_STATUS(mxlimit_format_body(&d, body, sizeof(body), NULL), MXLIMIT_OK);
  EXPECT(strcmp(body,
                "{\"errcode\":\"M_LIMIT_EXCEEDED\",\"error\":\"Too "
                "many requests\"}") == 0);
  mxlimit_limiter_free(limiter);
}

static void test_shadow_policy_reports_without_denying(void) {
  mxlimit_limiter* limiter = new_from_yaml(kPolicies);
  if (limiter == NULL) return;
  const char* keys = "/_matrix/client/v3/keys/query";
  const mxlimit_decision first =
      check_at(limiter, "POST", keys, "192.0.2.1", "@a:example.org", 0);
  EXPECT_INT(first.allowed, 1);
  EXPECT_INT(first.shadow_denied, 0);
  EXPECT_STRN(first.shadow_policy, first.shadow_policy_len, "");
  const mxlimit_decision second =
      check_at(limiter, "POST", keys, "192.0.2.1", "@a:example.org", 0);
  EXPECT_INT(second.allowed, 1);
  EXPECT_INT(second.shadow_denied, 1);
  EXPECT_STRN(second.shadow_policy, second.shadow_policy_len, "keys-trial");
  EXPECT_STRN(second.policy, second.policy_len, "");
  mxlimit_limiter_free(limiter);
}

static void test_user_scope_peek_and_charge(void) {
  mxlimit_limiter* limiter = new_from_yaml(kPolicies);
  if (limiter == NULL) return;
  const char* sync = "/_matrix/client/v3/sync?since=s1";
  /* Peeking charges nothing: five peeks, then the burst of two is whole. */
  for (int i = 0; i < 5; ++i) {
    EXPECT_INT(
        peek_at(limiter, "GET", sync, "192.0.2.1", "@u:example.org", 1, 0)
            .allowed,
        1);
  }
  EXPECT_INT(
      check_at(limiter, "GET", sync, "192.0.2.1", "@u:example.org", 0).allowed,
      1);
  EXPECT_INT(
      check_at(limiter, "GET", sync, "192.0.2.2", "@u:example.org", 0).allowed,
      1);
  const mxlimit_decision denied =
      check_at(limiter, "GET", sync, "192.0.2.3", "@u:example.org", 0);
  EXPECT_INT(denied.allowed, 0);
  EXPECT_INT(denied.limited_by, MXLIMIT_SCOPE_USER);
  EXPECT_STRN(denied.policy, denied.policy_len, "sync-per-user");
  EXPECT_INT(denied.retry_after_ns, 1000000000);
  /* Peek agrees with check, and says the same after the wait. */
  const mxlimit_decision peeked =
      peek_at(limiter, "GET", sync, "192.0.2.3", "@u:example.org", 1, 0);
  EXPECT_INT(peeked.allowed, 0);
  EXPECT_INT(peeked.retry_after_ns, 1000000000);
  EXPECT_INT(
      peek_at(limiter, "GET", sync, "192.0.2.3", "@u:example.org", 1, 999999999)
          .allowed,
      0);
  EXPECT_INT(peek_at(limiter, "GET", sync, "192.0.2.3", "@u:example.org", 1,
                     1000000000)
                 .allowed,
             1);
  /* A cost above the burst: no wait helps. */
  const mxlimit_decision big =
      peek_at(limiter, "GET", sync, "192.0.2.3", "@v:example.org", 3, 0);
  EXPECT_INT(big.allowed, 0);
  EXPECT_INT(big.never, 1);
  /* Anonymous requests have no user bucket. */
  for (int i = 0; i < 5; ++i) {
    EXPECT_INT(check_at(limiter, "GET", sync, "192.0.2.3", NULL, 0).allowed, 1);
  }
  /* Charge spends the burst without asking; a negative cost refunds it. */
  charge_at(limiter, "GET", sync, "192.0.2.4", "@w:example.org", 2, 0);
  EXPECT_INT(peek_at(limiter, "GET", sync, "192.0.2.4", "@w:example.org", 1, 0)
                 .allowed,
             0);
  charge_at(limiter, "GET", sync, "192.0.2.4", "@w:example.org", -2, 0);
  EXPECT_INT(
      check_at(limiter, "GET", sync, "192.0.2.4", "@w:example.org", 0).allowed,
      1);
  mxlimit_limiter_free(limiter);
}

/* --- Reloads ----------------------------------------------------------------
 */

static const char* sync_policy(const char* name, char* buf, size_t cap) {
  snprintf(buf, cap,
           "policies:\n"
           "  - name: %s\n"
           "    match: /_matrix/client/v3/sync\n"
           "    scope: user\n"
           "    rate_limit: { unit: minute, requests_per_unit: 1 }\n",
           name);
  return buf;
}

static void test_reload_keeps_old_names_valid(void) {
  char yaml[512];
  mxlimit_limiter* limiter = new_from_yaml(sync_policy("p-one", yaml, 512));
  if (limiter == NULL) return;
  const char* sync = "/_matrix/client/v3/sync?since=s1";
  EXPECT_INT(check_at(limiter, "GET", sync, "192.0.2.1", "@a:x.org", 0).allowed,
             1);
  const mxlimit_decision old =
      check_at(limiter, "GET", sync, "192.0.2.1", "@a:x.org", 0);
  EXPECT_STRN(old.policy, old.policy_len, "p-one");

  /* A hundred reloads, each with a new name. */
  char* err = NULL;
  char name[32];
  for (int i = 0; i < 100; ++i) {
    snprintf(name, sizeof(name), "p-%d", i);
    sync_policy(name, yaml, sizeof(yaml));
    EXPECT_STATUS(mxlimit_limiter_reload_yaml(limiter, yaml, strlen(yaml),
                                              "reload.yaml", &err),
                  MXLIMIT_OK);
    EXPECT(err == NULL);
  }
  const mxlimit_decision now =
      check_at(limiter, "GET", sync, "192.0.2.1", "@b:x.org", 0);
  EXPECT_INT(now.allowed, 1);
  mxlimit_decision d =
      check_at(limiter, "GET", sync, "192.0.2.1", "@b:x.org", 0);
  EXPECT_STRN(d.policy, d.policy_len, "p-99");
  /* The decision from before the reloads still reads its policy name. */
  EXPECT_STRN(old.policy, old.policy_len, "p-one");

  /* A file with an error changes nothing. */
  const char bad[] = "policies:\n  - name: x\n";
  EXPECT_STATUS(
      mxlimit_limiter_reload_yaml(limiter, bad, strlen(bad), "bad.yaml", &err),
      MXLIMIT_EINVAL);
  EXPECT_CONTAINS(err, "bad.yaml:2:");
  mxlimit_free(err);
  d = check_at(limiter, "GET", sync, "192.0.2.1", "@b:x.org", 0);
  EXPECT_STRN(d.policy, d.policy_len, "p-99");

  /* What only a restart can change is refused, with the old policies kept. */
  const char tables[] = "tables:\n  ip: { capacity: 10 }\n";
  EXPECT_STATUS(
      mxlimit_limiter_reload_yaml(limiter, tables, strlen(tables), NULL, &err),
      MXLIMIT_EPRECONDITION);
  EXPECT_CONTAINS(err, "tables");
  mxlimit_free(err);
  d = check_at(limiter, "GET", sync, "192.0.2.1", "@b:x.org", 0);
  EXPECT_STRN(d.policy, d.policy_len, "p-99");
  mxlimit_limiter_free(limiter);
}

static void test_files(void) {
  char path[256];
  snprintf(path, sizeof(path), "%s/mxlimit.yaml", g_tmp_dir);
  char yaml[512];
  write_file(path, sync_policy("from-file", yaml, sizeof(yaml)));

  mxlimit_limiter* limiter = NULL;
  char* err = (char*)1; /* must be overwritten */
  EXPECT_STATUS(mxlimit_limiter_new_from_file(path, NULL, &limiter, &err),
                MXLIMIT_OK);
  EXPECT(err == NULL);
  EXPECT(limiter != NULL);
  if (limiter == NULL) return;
  const char* sync = "/_matrix/client/v3/sync?since=s1";
  check_at(limiter, "GET", sync, "192.0.2.1", "@a:x.org", 0);
  mxlimit_decision d =
      check_at(limiter, "GET", sync, "192.0.2.1", "@a:x.org", 0);
  EXPECT_STRN(d.policy, d.policy_len, "from-file");

  /* A new name is a new policy, with fresh buckets. */
  write_file(path, sync_policy("reloaded", yaml, sizeof(yaml)));
  EXPECT_STATUS(mxlimit_limiter_reload_file(limiter, path, &err), MXLIMIT_OK);
  EXPECT_INT(check_at(limiter, "GET", sync, "192.0.2.1", "@a:x.org", 0).allowed,
             1);
  d = check_at(limiter, "GET", sync, "192.0.2.1", "@a:x.org", 0);
  EXPECT_STRN(d.policy, d.policy_len, "reloaded");

  char missing[256];
  snprintf(missing, sizeof(missing), "%s/missing.yaml", g_tmp_dir);
  EXPECT_STATUS(mxlimit_limiter_reload_file(limiter, missing, &err),
                MXLIMIT_ENOTFOUND);
  EXPECT_CONTAINS(err, missing);
  mxlimit_free(err);
  d = check_at(limiter, "GET", sync, "192.0.2.1", "@a:x.org", 0);
  EXPECT_STRN(d.policy, d.policy_len, "reloaded");
  mxlimit_limiter_free(limiter);
  unlink(path);
}

/* --- Outcomes: settle, request bytes, the policy's error, RateLimit ------- */

/* mxlimit_check_ex / mxlimit_settle with C strings and a body length. */
static mxlimit_decision check_ex_at(mxlimit_limiter* limiter,
                                    const char* method, const char* target,
                                    const char* ip, const char* user,
                                    int64_t request_bytes, int64_t now) {
  uint8_t client[16];
  parse_ip(ip, client);
  mxlimit_request_options options = MXLIMIT_REQUEST_OPTIONS_INIT;
  options.request_bytes = request_bytes;
  mxlimit_decision d = MXLIMIT_DECISION_INIT;
  EXPECT_STATUS(
      mxlimit_check_ex(limiter, method, strlen(method), target, strlen(target),
                       client, user, user ? strlen(user) : 0, NULL, 0, NULL, 0,
                       1, 0, &options, now, &d),
      MXLIMIT_OK);
  return d;
}

static void settle_at(mxlimit_limiter* limiter, const char* method,
                      const char* target, const char* ip, const char* user,
                      int status, int64_t body_bytes, int64_t now) {
  uint8_t client[16];
  parse_ip(ip, client);
  EXPECT_STATUS(
      mxlimit_settle(limiter, method, strlen(method), target, strlen(target),
                     client, user, user ? strlen(user) : 0, NULL, 0, NULL, 0, 1,
                     0, NULL, status, body_bytes, now),
      MXLIMIT_OK);
}

/* The built-in failed-login-per-ip (burst 3, charged on 401 and 403): three
   failed logins settled from one address, then the next is denied, while
   another address (and a successful login) is untouched. */
static void test_default_config_failed_logins_settled(void) {
  mxlimit_limiter* limiter = new_from_yaml(NULL);
  if (limiter == NULL) return;
  const char* login = "/_matrix/client/v3/login";
  for (int i = 0; i < 3; ++i) {
    const mxlimit_decision d =
        check_ex_at(limiter, "POST", login, "203.0.113.50", NULL, 80, 0);
    EXPECT_INT(d.allowed, 1);
    EXPECT_INT(d.settles, 1);
    EXPECT_STRN(d.errcode, d.errcode_len, "");
    settle_at(limiter, "POST", login, "203.0.113.50", NULL, 403, 60, 0);
  }
  /* A success from another address charges nothing. */
  for (int i = 0; i < 4; ++i) {
    EXPECT_INT(check_ex_at(limiter, "POST", login, "198.51.100.9", NULL, 80, 0)
                   .allowed,
               1);
    settle_at(limiter, "POST", login, "198.51.100.9", NULL, 200, 300, 0);
  }
  const mxlimit_decision d =
      check_ex_at(limiter, "POST", login, "203.0.113.50", NULL, 80, 0);
  EXPECT_INT(d.allowed, 0);
  EXPECT_INT(d.limited_by, MXLIMIT_SCOPE_IP);
  EXPECT_STRN(d.policy, d.policy_len, "failed-login-per-ip");
  EXPECT_STRN(d.errcode, d.errcode_len, "M_LIMIT_EXCEEDED");
  EXPECT_STRN(d.info_uri, d.info_uri_len, "");
  EXPECT_INT(d.can_upgrade, MXLIMIT_CAN_UPGRADE_UNSET);
  /* 612 an hour: one every 3600/612 s. */
  EXPECT_INT(d.retry_after_ns, (int64_t)3600 * 1000000000 / 612);
  EXPECT_STRN(d.quota_policy, d.quota_policy_len, "failed-login-per-ip");
  EXPECT_INT(d.quota_unit, MXLIMIT_QUOTA_REQUESTS);
  EXPECT_INT(d.quota_burst, 3);
  EXPECT_INT(d.quota_next_ns, d.retry_after_ns);
  char body[MXLIMIT_LIMIT_BODY_MAX];
  size_t len = 0;
  EXPECT_STATUS(mxlimit_format_body(&d, body, sizeof(body), &len), MXLIMIT_OK);
  char expected[256];
  snprintf(expected, sizeof(expected),
           "{\"errcode\":\"M_LIMIT_EXCEEDED\",\"error\":\"Too many "
           "requests\",\"retry_after_ms\":%" PRId64 "}",
           ceil_div(d.retry_after_ns, 1000000));
  EXPECT(strcmp(body, expected) == 0);
  EXPECT_INT(len, strlen(expected));
  /* Denials are not charged: after the wait one more attempt fits. */
  EXPECT_INT(check_ex_at(limiter, "POST", login, "203.0.113.50", NULL, 80,
                         d.retry_after_ns)
                 .allowed,
             1);
  /* The plain call settles nothing for a request no policy charges later. */
  const mxlimit_decision sync =
      check_ex_at(limiter, "GET", "/_matrix/client/v3/sync?since=s",
                  "203.0.113.50", "@a:example.org", -1, 0);
  EXPECT_INT(sync.allowed, 1);
  EXPECT_INT(sync.settles, 0);
  mxlimit_limiter_free(limiter);
}

/* The built-ins plus an upload quota by request bytes with MSC4335's error:
   the body names it, and the RateLimit fields describe the quota. */
static const char kUploadQuota[] =
    "response_headers: ratelimit\n"
    "policies:\n"
    "  - name: upload-quota\n"
    "    match: \"/_matrix/media/v3/upload*\"\n"
    "    methods: [POST, PUT]\n"
    "    scope: user\n"
    "    layer: quota\n"
    "    cost: request_bytes\n"
    "    rate_limit: { unit: hour, requests_per_unit: 104857600, burst: "
    "104857600 }\n"
    "    errcode: M_USER_LIMIT_EXCEEDED\n"
    "    info_uri: https://example.org/fair-use\n"
    "    can_upgrade: true\n";

static void test_upload_quota_names_its_error(void) {
  mxlimit_limiter* limiter = new_from_yaml(kUploadQuota);
  if (limiter == NULL) return;
  const char* upload = "/_matrix/media/v3/upload?filename=a.bin";
  const char* user = "@uploader:example.org";
  const int64_t mib = 1048576;
  mxlimit_decision d =
      check_ex_at(limiter, "POST", upload, "192.0.2.1", user, 60 * mib, 0);
  EXPECT_INT(d.allowed, 1);
  /* Charged its bytes at the decision: its completion has nothing to add. */
  EXPECT_INT(d.settles, 0);
  EXPECT_STRN(d.errcode, d.errcode_len, "");
  /* The RateLimit fields on the allowed answer (the smallest remaining is
     the built-in media-upload count or this quota, whichever is lower in
     requests of cost 1: the quota's 40 MiB left are 41943040 bytes). */
  char policy[MXLIMIT_RATELIMIT_POLICY_MAX];
  char limit[MXLIMIT_RATELIMIT_MAX];
  size_t policy_len = 0;
  size_t limit_len = 0;
  EXPECT_STATUS(
      mxlimit_format_ratelimit_headers(&d, policy, sizeof(policy), &policy_len,
                                       limit, sizeof(limit), &limit_len),
      MXLIMIT_OK);
  EXPECT(policy_len > 0 && limit_len > 0);
  EXPECT_INT(policy_len, strlen(policy));
  EXPECT_INT(limit_len, strlen(limit));

  d = check_ex_at(limiter, "POST", upload, "192.0.2.1", user, 50 * mib, 0);
  EXPECT_INT(d.allowed, 0);
  EXPECT_INT(d.limited_by, MXLIMIT_SCOPE_USER);
  EXPECT_STRN(d.policy, d.policy_len, "upload-quota");
  EXPECT_STRN(d.errcode, d.errcode_len, "M_USER_LIMIT_EXCEEDED");
  EXPECT_STRN(d.info_uri, d.info_uri_len, "https://example.org/fair-use");
  EXPECT_INT(d.can_upgrade, MXLIMIT_CAN_UPGRADE_YES);
  EXPECT_STRN(d.quota_policy, d.quota_policy_len, "upload-quota");
  EXPECT_INT(d.quota_unit, MXLIMIT_QUOTA_CONTENT_BYTES);
  EXPECT_INT(d.quota_burst, 104857600);
  /* 10 MiB short, refilling 100 MiB an hour: 6 minutes (a byte every
     34332 ns, rounded down). */
  EXPECT_INT(d.quota_interval_ns, (int64_t)3600 * 1000000000 / 104857600);
  EXPECT_INT(d.retry_after_ns, 10 * mib * d.quota_interval_ns);
  EXPECT_INT(d.quota_next_ns, d.retry_after_ns);

  char body[MXLIMIT_LIMIT_BODY_MAX];
  size_t len = 0;
  EXPECT_STATUS(mxlimit_format_body(&d, body, sizeof(body), &len), MXLIMIT_OK);
  char expected[256];
  snprintf(expected, sizeof(expected),
           "{\"errcode\":\"M_USER_LIMIT_EXCEEDED\",\"error\":\"Too many "
           "requests\",\"retry_after_ms\":%" PRId64
           ",\"info_uri\":\"https://example.org/fair-use\",\"can_upgrade\":"
           "true}",
           ceil_div(d.retry_after_ns, 1000000));
  EXPECT(strcmp(body, expected) == 0);
  EXPECT_INT(len, strlen(body));
  /* MXLIMIT_BODY_MAX is for M_LIMIT_EXCEEDED bodies only. */
  EXPECT(len + 1 > MXLIMIT_BODY_MAX);
  char small[MXLIMIT_BODY_MAX];
  EXPECT_STATUS(mxlimit_format_body(&d, small, sizeof(small), &len),
                MXLIMIT_ERANGE);

  EXPECT_STATUS(
      mxlimit_format_ratelimit_headers(&d, policy, sizeof(policy), &policy_len,
                                       limit, sizeof(limit), &limit_len),
      MXLIMIT_OK);
  EXPECT(strcmp(policy,
                "\"upload-quota\";q=104857600;qu=\"content-bytes\";w=3600") ==
         0);
  EXPECT(strcmp(limit, "\"upload-quota\";r=0;t=360") == 0);
  /* Too small either buffer: nothing written, both lengths reported. */
  char tiny[8] = "x";
  EXPECT_STATUS(
      mxlimit_format_ratelimit_headers(&d, policy, sizeof(policy), &policy_len,
                                       tiny, sizeof(tiny), &limit_len),
      MXLIMIT_ERANGE);
  EXPECT(tiny[0] == 'x');
  EXPECT_INT(limit_len, strlen("\"upload-quota\";r=0;t=360"));
  EXPECT_STATUS(mxlimit_format_ratelimit_headers(&d, NULL, 0, &policy_len, NULL,
                                                 0, &limit_len),
                MXLIMIT_ERANGE);
  EXPECT_INT(policy_len, strlen(policy));

  /* Another user is untouched; an upload of unknown length (the calls
     without options) is charged a whole burst. */
  EXPECT_INT(check_ex_at(limiter, "POST", upload, "192.0.2.1",
                         "@other:example.org", 1, 0)
                 .allowed,
             1);
  const mxlimit_decision unknown =
      check_at(limiter, "POST", upload, "192.0.2.2", "@third:example.org", 0);
  EXPECT_INT(unknown.allowed, 1);
  d = check_ex_at(limiter, "POST", upload, "192.0.2.2", "@third:example.org", 1,
                  0);
  EXPECT_INT(d.allowed, 0);
  EXPECT_STRN(d.policy, d.policy_len, "upload-quota");

  /* Exempt: no fields to send. */
  uint8_t client[16];
  parse_ip("192.0.2.1", client);
  EXPECT_STATUS(mxlimit_check_ex(limiter, "POST", 4, upload, strlen(upload),
                                 client, user, strlen(user), NULL, 0, NULL, 0,
                                 1, MXLIMIT_EXEMPT, NULL, 0, &d),
                MXLIMIT_OK);
  EXPECT_STATUS(
      mxlimit_format_ratelimit_headers(&d, policy, sizeof(policy), &policy_len,
                                       limit, sizeof(limit), &limit_len),
      MXLIMIT_OK);
  EXPECT_INT(policy_len, 0);
  EXPECT_INT(limit_len, 0);
  EXPECT(policy[0] == '\0' && limit[0] == '\0');
  mxlimit_limiter_free(limiter);
}

/* A response_bytes policy: checked at the decision, charged by settle with
   the body's bytes, only for the listed statuses. */
static void test_settle_response_bytes(void) {
  mxlimit_limiter* limiter = new_from_yaml(
      "policies:\n"
      "  - name: thumb-bytes\n"
      "    match: /_matrix/client/v1/media/thumbnail/*\n"
      "    cost: response_bytes\n"
      "    status: [200]\n"
      "    rate_limit: { unit: second, requests_per_unit: 1000, burst: "
      "10000 }\n");
  if (limiter == NULL) return;
  const char* thumb = "/_matrix/client/v1/media/thumbnail/example.org/abc";
  mxlimit_decision d =
      check_ex_at(limiter, "GET", thumb, "192.0.2.7", NULL, -1, 0);
  EXPECT_INT(d.allowed, 1);
  EXPECT_INT(d.settles, 1);
  /* A 404 costs nothing; a 200 of 15000 bytes empties the bucket and
     leaves it 5000 bytes in debt: 15 s until a byte fits. */
  settle_at(limiter, "GET", thumb, "192.0.2.7", NULL, 404, 15000, 0);
  EXPECT_INT(
      check_ex_at(limiter, "GET", thumb, "192.0.2.7", NULL, -1, 0).allowed, 1);
  settle_at(limiter, "GET", thumb, "192.0.2.7", NULL, 200, 15000, 0);
  d = check_ex_at(limiter, "GET", thumb, "192.0.2.7", NULL, -1, 0);
  EXPECT_INT(d.allowed, 0);
  EXPECT_STRN(d.policy, d.policy_len, "thumb-bytes");
  EXPECT(d.retry_after_ns > 5000000000);
  mxlimit_limiter_free(limiter);
}

/* A caller built before the fourth version: nothing past lease_count is
   written, its leases are still its own, and its 429 body stays
   M_LIMIT_EXCEEDED's even for a policy with its own errcode. */
static void test_third_version_caller(void) {
  mxlimit_limiter* limiter = new_from_yaml(kUploadQuota);
  if (limiter == NULL) return;
  const size_t third = offsetof(mxlimit_decision, errcode);
  uint8_t client[16];
  parse_ip("192.0.2.1", client);
  const char* user = "@old:example.org";
  const char* upload = "/_matrix/media/v3/upload";
  mxlimit_decision old;
  for (int i = 0; i < 2; ++i) {
    memset(&old, 0xAA, sizeof(old));
    old.struct_size = (uint32_t)third;
    EXPECT_STATUS(mxlimit_check(limiter, "POST", 4, upload, strlen(upload),
                                client, user, strlen(user), 1, 0, 0, &old),
                  MXLIMIT_OK);
    EXPECT_INT(old.struct_size, third);
  }
  EXPECT_INT(old.allowed, 0); /* the unknown length took the whole burst */
  EXPECT_STRN(old.policy, old.policy_len, "upload-quota");
  const unsigned char* tail = (const unsigned char*)&old + third;
  for (size_t i = 0; i < sizeof(old) - third; ++i) EXPECT_INT(tail[i], 0xAA);
  char body[MXLIMIT_BODY_MAX];
  EXPECT_STATUS(mxlimit_format_body(&old, body, sizeof(body), NULL),
                MXLIMIT_OK);
  EXPECT_CONTAINS(body, "\"errcode\":\"M_LIMIT_EXCEEDED\"");
  char policy[MXLIMIT_RATELIMIT_POLICY_MAX];
  char limit[MXLIMIT_RATELIMIT_MAX];
  EXPECT_STATUS(
      mxlimit_format_ratelimit_headers(&old, policy, sizeof(policy), NULL,
                                       limit, sizeof(limit), NULL),
      MXLIMIT_EINVAL);

  /* Its leases are kept (third version: it can give them back). */
  const char* sync = "/_matrix/client/v3/sync";
  for (int i = 0; i < 2; ++i) {
    old.struct_size = (uint32_t)third;
    EXPECT_STATUS(mxlimit_check(limiter, "GET", 3, sync, strlen(sync), client,
                                user, strlen(user), 1, 0, 0, &old),
                  MXLIMIT_OK);
    EXPECT_INT(old.allowed, 1);
    EXPECT_INT(old.lease_count, 1);
  }
  old.struct_size = (uint32_t)third;
  EXPECT_STATUS(mxlimit_check(limiter, "GET", 3, sync, strlen(sync), client,
                              user, strlen(user), 1, 0, 0, &old),
                MXLIMIT_OK);
  EXPECT_INT(old.allowed, 0);
  EXPECT_STRN(old.policy, old.policy_len, "initial-sync-in-flight");
  mxlimit_limiter_free(limiter);
}

/* The quota's policy name, like the denying one's, outlives reloads. */
static void test_quota_policy_survives_reload(void) {
  char yaml[512];
  mxlimit_limiter* limiter = new_from_yaml(sync_policy("q-one", yaml, 512));
  if (limiter == NULL) return;
  const char* sync = "/_matrix/client/v3/sync?since=s1";
  const mxlimit_decision first =
      check_at(limiter, "GET", sync, "192.0.2.1", "@q:x.org", 0);
  EXPECT_INT(first.allowed, 1);
  EXPECT_STRN(first.quota_policy, first.quota_policy_len, "q-one");
  for (int i = 0; i < 20; ++i) {
    char name[32];
    snprintf(name, sizeof(name), "q-%d", i);
    sync_policy(name, yaml, sizeof(yaml));
    EXPECT_STATUS(
        mxlimit_limiter_reload_yaml(limiter, yaml, strlen(yaml), NULL, NULL),
        MXLIMIT_OK);
  }
  EXPECT_STRN(first.quota_policy, first.quota_policy_len, "q-one");
  /* One interned copy per name: the same pointer again once reloaded. */
  sync_policy("q-one", yaml, sizeof(yaml));
  EXPECT_STATUS(
      mxlimit_limiter_reload_yaml(limiter, yaml, strlen(yaml), NULL, NULL),
      MXLIMIT_OK);
  const mxlimit_decision again =
      check_at(limiter, "GET", sync, "192.0.2.1", "@r:x.org", 0);
  EXPECT(again.quota_policy == first.quota_policy);
  mxlimit_limiter_free(limiter);
}

/* --- Config errors
 * ------------------------------------------------------------ */

static void test_config_errors_list_every_problem(void) {
  char path[512];
  snprintf(path, sizeof(path), "%s/bad_config.yaml", g_data_dir);
  char* text = read_file(path);
  snprintf(path, sizeof(path), "%s/bad_config.errors", g_data_dir);
  char* expected = read_file(path);
  if (text == NULL || expected == NULL) return;
  const size_t n = strlen(expected);
  if (n > 0 && expected[n - 1] == '\n') expected[n - 1] = '\0';

  mxlimit_limiter* limiter = (mxlimit_limiter*)1; /* must be cleared */
  char* err = NULL;
  EXPECT_STATUS(
      mxlimit_limiter_new_from_yaml(text, strlen(text), "bad_config.yaml", NULL,
                                    &limiter, &err),
      MXLIMIT_EINVAL);
  EXPECT(limiter == NULL);
  /* Every error, each FILE:LINE:COL, exactly as docs/config.md shows. */
  EXPECT(err != NULL && strcmp(err, expected) == 0);
  if (err != NULL && strcmp(err, expected) != 0) {
    fprintf(stderr, "got:\n%s\nexpected:\n%s\n", err, expected);
  }
  mxlimit_free(err);

  /* From the file, the path is the file name in every line. */
  snprintf(path, sizeof(path), "%s/bad_config.yaml", g_data_dir);
  EXPECT_STATUS(mxlimit_limiter_new_from_file(path, NULL, &limiter, &err),
                MXLIMIT_EINVAL);
  char first[600];
  snprintf(first, sizeof(first), "%s:1:19: builtin_policies", path);
  EXPECT(err != NULL && strncmp(err, first, strlen(first)) == 0);
  char last[600];
  snprintf(last, sizeof(last), "\n%s:18:5: unknown key \"burts\"", path);
  EXPECT_CONTAINS(err, last);
  mxlimit_free(err);

  /* No file, and a directory. */
  EXPECT_STATUS(mxlimit_limiter_new_from_file("/nonexistent/mxlimit.yaml", NULL,
                                              &limiter, &err),
                MXLIMIT_ENOTFOUND);
  EXPECT_CONTAINS(err, "/nonexistent/mxlimit.yaml");
  mxlimit_free(err);
  EXPECT_STATUS(mxlimit_limiter_new_from_file(g_data_dir, NULL, &limiter, &err),
                MXLIMIT_EPRECONDITION);
  EXPECT_CONTAINS(err, "Is a directory");
  mxlimit_free(err);
  /* The message is optional. */
  EXPECT_STATUS(mxlimit_limiter_new_from_file("/nonexistent/mxlimit.yaml", NULL,
                                              &limiter, NULL),
                MXLIMIT_ENOTFOUND);
  EXPECT(limiter == NULL);
  free(text);
  free(expected);
}

/* --- Options -----------------------------------------------------------------
 */

static void test_options(void) {
  mxlimit_limiter* limiter = NULL;
  char* err = NULL;
  mxlimit_options options = MXLIMIT_OPTIONS_INIT;
  EXPECT_INT(options.struct_size, sizeof(mxlimit_options));
  EXPECT_INT(options.shards, 0);

  options.shards = 1;
  EXPECT_STATUS(
      mxlimit_limiter_new_from_yaml("", 0, NULL, &options, &limiter, &err),
      MXLIMIT_OK);
  mxlimit_limiter_free(limiter);

  options.shards = 3;
  EXPECT_STATUS(
      mxlimit_limiter_new_from_yaml("", 0, NULL, &options, &limiter, &err),
      MXLIMIT_EINVAL);
  EXPECT_CONTAINS(err, "shards: got 3, expected a power of two");
  EXPECT(limiter == NULL);
  mxlimit_free(err);

  options.shards = 0;
  options.struct_size = 4;
  EXPECT_STATUS(
      mxlimit_limiter_new_from_yaml("", 0, NULL, &options, &limiter, &err),
      MXLIMIT_EINVAL);
  EXPECT_CONTAINS(err, "struct_size");
  mxlimit_free(err);

  /* A caller built against a later header: its new fields must be zero. */
  struct {
    mxlimit_options known;
    uint64_t later_field;
  } later;
  memset(&later, 0, sizeof(later));
  later.known.struct_size = sizeof(later);
  later.known.shards = 2;
  EXPECT_STATUS(
      mxlimit_limiter_new_from_yaml("", 0, NULL, &later.known, &limiter, &err),
      MXLIMIT_OK);
  mxlimit_limiter_free(limiter);
  later.later_field = 1;
  EXPECT_STATUS(
      mxlimit_limiter_new_from_yaml("", 0, NULL, &later.known, &limiter, &err),
      MXLIMIT_EINVAL);
  EXPECT_CONTAINS(err, "does not know");
  mxlimit_free(err);
}

/* --- Decision sizes
 * ----------------------------------------------------------- */

static void test_decision_from_a_later_header_gets_zeroed_tail(void) {
  mxlimit_limiter* limiter = new_from_yaml(NULL);
  if (limiter == NULL) return;
  struct {
    mxlimit_decision known;
    unsigned char later_fields[24];
  } later;
  memset(&later, 0xAA, sizeof(later));
  later.known.struct_size = sizeof(later);
  uint8_t client[16];
  parse_ip("192.0.2.1", client);
  EXPECT_STATUS(mxlimit_check(limiter, "GET", 3, "/_matrix/client/v3/sync", 23,
                              client, NULL, 0, 1, 0, 0, &later.known),
                MXLIMIT_OK);
  EXPECT_INT(later.known.struct_size, sizeof(later));
  EXPECT_INT(later.known.allowed, 1);
  EXPECT_STRN(later.known.route_key, later.known.route_key_len,
              "/_matrix/client/v3/sync");
  for (size_t i = 0; i < sizeof(later.later_fields); ++i) {
    EXPECT_INT(later.later_fields[i], 0);
  }

  /* Smaller than the first version: refused, the struct left alone. */
  mxlimit_decision d = MXLIMIT_DECISION_INIT;
  d.struct_size = 8;
  d.allowed = 7;
  EXPECT_STATUS(mxlimit_check(limiter, "GET", 3, "/_matrix/client/v3/sync", 23,
                              client, NULL, 0, 1, 0, 0, &d),
                MXLIMIT_EINVAL);
  EXPECT_INT(d.allowed, 7);
  mxlimit_limiter_free(limiter);
}

/* --- Every argument error
 * ------------------------------------------------------ */

static void test_null_and_bad_arguments_are_einval(void) {
  mxlimit_limiter* limiter = new_from_yaml(NULL);
  if (limiter == NULL) return;
  mxlimit_limiter* out = NULL;
  char* err = NULL;
  uint8_t client[16];
  parse_ip("192.0.2.1", client);
  mxlimit_decision d = MXLIMIT_DECISION_INIT;
  const char* t = "/_matrix/client/v3/sync";
  const size_t tn = strlen(t);

  /* Creation and reload. */
  EXPECT_STATUS(mxlimit_limiter_new_from_file(NULL, NULL, &out, &err),
                MXLIMIT_EINVAL);
  EXPECT_CONTAINS(err, "path is NULL");
  mxlimit_free(err);
  EXPECT_STATUS(mxlimit_limiter_new_from_file("x.yaml", NULL, NULL, &err),
                MXLIMIT_EINVAL);
  EXPECT_CONTAINS(err, "out is NULL");
  mxlimit_free(err);
  EXPECT_STATUS(mxlimit_limiter_new_from_yaml(NULL, 3, NULL, NULL, &out, &err),
                MXLIMIT_EINVAL);
  EXPECT_CONTAINS(err, "text is NULL");
  mxlimit_free(err);
  EXPECT_STATUS(mxlimit_limiter_new_from_yaml("", 0, NULL, NULL, NULL, NULL),
                MXLIMIT_EINVAL);
  EXPECT_STATUS(mxlimit_limiter_reload_file(NULL, "x.yaml", &err),
                MXLIMIT_EINVAL);
  EXPECT_CONTAINS(err, "limiter is NULL");
  mxlimit_free(err);
  EXPECT_STATUS(mxlimit_limiter_reload_file(limiter, NULL, &err),
                MXLIMIT_EINVAL);
  mxlimit_free(err);
  EXPECT_STATUS(mxlimit_limiter_reload_yaml(NULL, "", 0, NULL, NULL),
                MXLIMIT_EINVAL);
  EXPECT_STATUS(mxlimit_limiter_reload_yaml(limiter, NULL, 1, NULL, NULL),
                MXLIMIT_EINVAL);
  mxlimit_limiter_free(NULL);

  /* Per request: check, peek and charge alike. */
  EXPECT_STATUS(
      mxlimit_check(NULL, "GET", 3, t, tn, client, NULL, 0, 1, 0, 0, &d),
      MXLIMIT_EINVAL);
  EXPECT_STATUS(
      mxlimit_check(limiter, "GET", 3, t, tn, NULL, NULL, 0, 1, 0, 0, &d),
      MXLIMIT_EINVAL);
  EXPECT_STATUS(
      mxlimit_check(limiter, "GET", 3, t, tn, client, NULL, 0, 1, 0, 0, NULL),
      MXLIMIT_EINVAL);
  EXPECT_STATUS(
      mxlimit_check(limiter, NULL, 3, t, tn, client, NULL, 0, 1, 0, 0, &d),
      MXLIMIT_EINVAL);
  EXPECT_STATUS(
      mxlimit_check(limiter, "GET", 3, NULL, tn, client, NULL, 0, 1, 0, 0, &d),
      MXLIMIT_EINVAL);
  EXPECT_STATUS(
      mxlimit_check(limiter, "GET", 3, t, tn, client, NULL, 4, 1, 0, 0, &d),
      MXLIMIT_EINVAL);
  EXPECT_STATUS(
      mxlimit_check(limiter, "GET", 3, t, tn, client, NULL, 0, -1, 0, 0, &d),
      MXLIMIT_EINVAL);
  EXPECT_STATUS(
      mxlimit_check(limiter, "GET", 3, t, tn, client, NULL, 0, 1, 128u, 0, &d),
      MXLIMIT_EINVAL);
  /* NULL with length 0 is an empty string: allowed everywhere. */
  EXPECT_STATUS(
      mxlimit_check(limiter, NULL, 0, NULL, 0, client, NULL, 0, 0, 0, 0, &d),
      MXLIMIT_OK);
  EXPECT_STRN(d.route_key, d.route_key_len, "<fallback>");

  EXPECT_STATUS(
      mxlimit_peek(NULL, "GET", 3, t, tn, client, NULL, 0, 1, 0, 0, &d),
      MXLIMIT_EINVAL);
  EXPECT_STATUS(
      mxlimit_peek(limiter, "GET", 3, t, tn, NULL, NULL, 0, 1, 0, 0, &d),
      MXLIMIT_EINVAL);
  EXPECT_STATUS(
      mxlimit_peek(limiter, "GET", 3, t, tn, client, NULL, 0, 1, 0, 0, NULL),
      MXLIMIT_EINVAL);
  EXPECT_STATUS(
      mxlimit_peek(limiter, "GET", 3, t, tn, client, NULL, 0, -1, 0, 0, &d),
      MXLIMIT_EINVAL);
  EXPECT_STATUS(
      mxlimit_peek(limiter, "GET", 3, t, tn, client, NULL, 0, 1, 8, 0, &d),
      MXLIMIT_EINVAL);
  EXPECT_STATUS(
      mxlimit_peek(limiter, NULL, 1, t, tn, client, NULL, 0, 1, 0, 0, &d),
      MXLIMIT_EINVAL);

  EXPECT_STATUS(mxlimit_charge(NULL, "GET", 3, t, tn, client, NULL, 0, 1, 0, 0),
                MXLIMIT_EINVAL);
  EXPECT_STATUS(
      mxlimit_charge(limiter, "GET", 3, t, tn, NULL, NULL, 0, 1, 0, 0),
      MXLIMIT_EINVAL);
  EXPECT_STATUS(
      mxlimit_charge(limiter, "GET", 3, NULL, 2, client, NULL, 0, 1, 0, 0),
      MXLIMIT_EINVAL);
  EXPECT_STATUS(
      mxlimit_charge(limiter, "GET", 3, t, tn, client, NULL, 0, 1, 128u, 0),
      MXLIMIT_EINVAL);

  /* The _ex calls and settle: the same rules, and the options' own. */
  mxlimit_request_options o = MXLIMIT_REQUEST_OPTIONS_INIT;
  EXPECT_INT(o.struct_size, sizeof(mxlimit_request_options));
  EXPECT_INT(o.request_bytes, -1);
  EXPECT_STATUS(mxlimit_check_ex(NULL, "GET", 3, t, tn, client, NULL, 0, NULL,
                                 0, NULL, 0, 1, 0, &o, 0, &d),
                MXLIMIT_EINVAL);
  EXPECT_STATUS(mxlimit_check_ex(limiter, "GET", 3, t, tn, client, NULL, 0,
                                 NULL, 3, NULL, 0, 1, 0, &o, 0, &d),
                MXLIMIT_EINVAL);
  EXPECT_STATUS(mxlimit_peek_ex(limiter, "GET", 3, t, tn, client, NULL, 0, NULL,
                                0, NULL, 0, -1, 0, &o, 0, &d),
                MXLIMIT_EINVAL);
  EXPECT_STATUS(mxlimit_charge_ex(limiter, "GET", 3, t, tn, NULL, NULL, 0, NULL,
                                  0, NULL, 0, 1, 0, &o, 0),
                MXLIMIT_EINVAL);
  EXPECT_STATUS(mxlimit_settle(NULL, "GET", 3, t, tn, client, NULL, 0, NULL, 0,
                               NULL, 0, 1, 0, &o, 200, 0, 0),
                MXLIMIT_EINVAL);
  EXPECT_STATUS(mxlimit_settle(limiter, "GET", 3, t, tn, NULL, NULL, 0, NULL, 0,
                               NULL, 0, 1, 0, &o, 200, 0, 0),
                MXLIMIT_EINVAL);
  EXPECT_STATUS(mxlimit_settle(limiter, "GET", 3, NULL, 1, client, NULL, 0,
                               NULL, 0, NULL, 0, 1, 0, &o, 200, 0, 0),
                MXLIMIT_EINVAL);
  EXPECT_STATUS(mxlimit_settle(limiter, "GET", 3, t, tn, client, NULL, 0, NULL,
                               0, NULL, 0, 1, 128u, &o, 200, 0, 0),
                MXLIMIT_EINVAL);
  /* Like charge, settle takes any cost, status and length. */
  EXPECT_STATUS(mxlimit_settle(limiter, "GET", 3, t, tn, client, NULL, 0, NULL,
                               0, NULL, 0, -5, 0, NULL, -1, -1, 0),
                MXLIMIT_OK);
  EXPECT_STATUS(mxlimit_peek_ex(limiter, "GET", 3, t, tn, client, NULL, 0, NULL,
                                0, NULL, 0, 1, 0, NULL, 0, &d),
                MXLIMIT_OK);
  o.struct_size = 4; /* smaller than the first version */
  EXPECT_STATUS(mxlimit_check_ex(limiter, "GET", 3, t, tn, client, NULL, 0,
                                 NULL, 0, NULL, 0, 1, 0, &o, 0, &d),
                MXLIMIT_EINVAL);
  EXPECT_STATUS(mxlimit_settle(limiter, "GET", 3, t, tn, client, NULL, 0, NULL,
                               0, NULL, 0, 1, 0, &o, 200, 0, 0),
                MXLIMIT_EINVAL);
  /* Options from a later header: its new fields must be zero. */
  struct {
    mxlimit_request_options known;
    uint64_t later_field;
  } later;
  memset(&later, 0, sizeof(later));
  later.known.struct_size = sizeof(later);
  later.known.request_bytes = 10;
  EXPECT_STATUS(mxlimit_check_ex(limiter, "GET", 3, t, tn, client, NULL, 0,
                                 NULL, 0, NULL, 0, 1, 0, &later.known, 0, &d),
                MXLIMIT_OK);
  later.later_field = 1;
  EXPECT_STATUS(mxlimit_check_ex(limiter, "GET", 3, t, tn, client, NULL, 0,
                                 NULL, 0, NULL, 0, 1, 0, &later.known, 0, &d),
                MXLIMIT_EINVAL);
  EXPECT_STATUS(mxlimit_charge_ex(limiter, "GET", 3, t, tn, client, NULL, 0,
                                  NULL, 0, NULL, 0, 1, 0, &later.known, 0),
                MXLIMIT_EINVAL);

  /* Addresses. */
  uint8_t ip[16];
  memset(ip, 0x11, sizeof(ip));
  EXPECT_STATUS(mxlimit_parse_ip("1.2.3", 5, ip), MXLIMIT_EINVAL);
  EXPECT_STATUS(mxlimit_parse_ip("", 0, ip), MXLIMIT_EINVAL);
  EXPECT_STATUS(mxlimit_parse_ip(NULL, 0, ip), MXLIMIT_EINVAL);
  EXPECT_STATUS(mxlimit_parse_ip("203.0.113.7:80", 14, ip), MXLIMIT_EINVAL);
  EXPECT_INT(ip[0], 0x11); /* untouched */
  EXPECT_STATUS(mxlimit_parse_ip(NULL, 3, ip), MXLIMIT_EINVAL);
  EXPECT_STATUS(mxlimit_parse_ip("1.2.3.4", 7, NULL), MXLIMIT_EINVAL);

  /* Formatting. */
  char buf[MXLIMIT_BODY_MAX];
  size_t len = 0;
  EXPECT_STATUS(mxlimit_format_body(NULL, buf, sizeof(buf), &len),
                MXLIMIT_EINVAL);
  EXPECT_STATUS(mxlimit_format_retry_after(NULL, buf, sizeof(buf), &len),
                MXLIMIT_EINVAL);
  EXPECT_STATUS(mxlimit_format_body(&d, NULL, 5, &len), MXLIMIT_EINVAL);
  EXPECT_STATUS(mxlimit_format_retry_after(&d, NULL, 5, &len), MXLIMIT_EINVAL);
  /* A Matrix error the body cannot carry, written by the caller. */
  mxlimit_decision e = MXLIMIT_DECISION_INIT;
  e.errcode = "M_\"X";
  e.errcode_len = 4;
  EXPECT_STATUS(mxlimit_format_body(&e, buf, sizeof(buf), &len),
                MXLIMIT_EINVAL);
  e.errcode = NULL;
  EXPECT_STATUS(mxlimit_format_body(&e, buf, sizeof(buf), &len),
                MXLIMIT_EINVAL);
  e.errcode_len = 0;
  e.can_upgrade = 3;
  EXPECT_STATUS(mxlimit_format_body(&e, buf, sizeof(buf), &len),
                MXLIMIT_EINVAL);
  e.can_upgrade = MXLIMIT_CAN_UPGRADE_UNSET;
  EXPECT_STATUS(mxlimit_format_body(&e, buf, sizeof(buf), &len), MXLIMIT_OK);
  char rl[MXLIMIT_RATELIMIT_MAX];
  EXPECT_STATUS(mxlimit_format_ratelimit_headers(NULL, buf, sizeof(buf), NULL,
                                                 rl, sizeof(rl), NULL),
                MXLIMIT_EINVAL);
  EXPECT_STATUS(
      mxlimit_format_ratelimit_headers(&e, NULL, 5, NULL, rl, sizeof(rl), NULL),
      MXLIMIT_EINVAL);
  EXPECT_STATUS(mxlimit_format_ratelimit_headers(&e, buf, sizeof(buf), NULL,
                                                 NULL, 5, NULL),
                MXLIMIT_EINVAL);
  e.quota_policy_len = 3;
  EXPECT_STATUS(mxlimit_format_ratelimit_headers(&e, buf, sizeof(buf), NULL, rl,
                                                 sizeof(rl), NULL),
                MXLIMIT_EINVAL);

  /* Metrics. */
  char* text = (char*)1;
  EXPECT_STATUS(mxlimit_metrics_prometheus(NULL, &text, NULL), MXLIMIT_EINVAL);
  EXPECT(text == NULL);
  EXPECT_STATUS(mxlimit_metrics_prometheus(limiter, NULL, NULL),
                MXLIMIT_EINVAL);
  mxlimit_limiter_free(limiter);
}

/* --- Helpers
 * ------------------------------------------------------------------- */

static void test_parse_ip(void) {
  uint8_t v4[16];
  uint8_t mapped[16];
  uint8_t v6[16];
  parse_ip("203.0.113.7", v4);
  parse_ip("::ffff:203.0.113.7", mapped);
  parse_ip("[2001:db8::1%eth0]", v6);
  const uint8_t want_v4[16] = {0, 0, 0,    0,    0,   0, 0,   0,
                               0, 0, 0xff, 0xff, 203, 0, 113, 7};
  const uint8_t want_v6[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0,
                               0,    0,    0,    0,    0, 0, 0, 1};
  EXPECT(memcmp(v4, want_v4, 16) == 0);
  EXPECT(memcmp(mapped, want_v4, 16) == 0);
  EXPECT(memcmp(v6, want_v6, 16) == 0);
  /* Not NUL-terminated: only `len` bytes are read. */
  EXPECT_STATUS(mxlimit_parse_ip("10.0.0.1junk", 8, v4), MXLIMIT_OK);
  EXPECT_INT(v4[15], 1);
}

static void test_format_buffer_sizes(void) {
  mxlimit_decision d = MXLIMIT_DECISION_INIT;
  d.allowed = 0;
  d.retry_after_ns = 1500000001; /* 1500.000001 ms */
  size_t len = 0;
  /* Asking for the length first. */
  EXPECT_STATUS(mxlimit_format_retry_after(&d, NULL, 0, &len), MXLIMIT_ERANGE);
  EXPECT_INT(len, 1);
  EXPECT_STATUS(mxlimit_format_body(&d, NULL, 0, &len), MXLIMIT_ERANGE);
  const char* body =
      "{\"errcode\":\"M_LIMIT_EXCEEDED\",\"error\":\"Too many requests\","
      "\"retry_after_ms\":1501}";
  EXPECT_INT(len, strlen(body));
  /* Exactly the length: no room for the NUL, nothing written. */
  char buf[MXLIMIT_BODY_MAX];
  memset(buf, 'x', sizeof(buf));
  EXPECT_STATUS(mxlimit_format_body(&d, buf, len, &len), MXLIMIT_ERANGE);
  EXPECT(buf[0] == 'x');
  EXPECT_STATUS(mxlimit_format_body(&d, buf, len + 1, &len), MXLIMIT_OK);
  EXPECT(strcmp(buf, body) == 0);
  EXPECT_STATUS(mxlimit_format_retry_after(&d, buf, 2, &len), MXLIMIT_OK);
  EXPECT(strcmp(buf, "2") == 0);
  /* The largest wait fits the documented sizes. */
  d.retry_after_ns = INT64_MAX;
  EXPECT_STATUS(mxlimit_format_body(&d, buf, sizeof(buf), &len), MXLIMIT_OK);
  char header[MXLIMIT_RETRY_AFTER_MAX];
  EXPECT_STATUS(mxlimit_format_retry_after(&d, header, sizeof(header), &len),
                MXLIMIT_OK);
  EXPECT(strcmp(header, "9223372037") == 0);
}

static void test_metrics(void) {
  mxlimit_limiter* limiter = new_from_yaml(kPolicies);
  if (limiter == NULL) return;
  check_at(limiter, "GET", "/_matrix/client/v3/publicRooms", "192.0.2.1", NULL,
           0);
  char* text = NULL;
  size_t len = 0;
  EXPECT_STATUS(mxlimit_metrics_prometheus(limiter, &text, &len), MXLIMIT_OK);
  EXPECT(text != NULL && len == strlen(text));
  EXPECT_CONTAINS(text, "mxlimit_table_size{table=\"ip\"}");
  EXPECT_CONTAINS(text,
                  "mxlimit_policy_requests_total{policy=\"blocked\",scope="
                  "\"ip\",result=\"denied\"} 1");
  mxlimit_free(text);
  mxlimit_free(NULL);
  mxlimit_limiter_free(limiter);
}

static void test_monotonic_clock(void) {
  const int64_t a = mxlimit_monotonic_now_ns();
  const int64_t b = mxlimit_monotonic_now_ns();
  EXPECT(a > 0);
  EXPECT(b >= a);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s DATA_DIR\n", argv[0]);
    return 2;
  }
  g_data_dir = argv[1];
  if (mkdtemp(g_tmp_dir) == NULL) {
    perror("mkdtemp");
    return 2;
  }
  test_version();
  test_status_names();
  test_default_config_limits_login_per_address();
  test_default_config_limits_message_send_per_user();
  test_default_config_limits_joins_per_room();
  test_subjects_and_delays();
  test_leases();
  test_never_has_no_retry_after();
  test_shadow_policy_reports_without_denying();
  test_user_scope_peek_and_charge();
  test_reload_keeps_old_names_valid();
  test_default_config_failed_logins_settled();
  test_upload_quota_names_its_error();
  test_settle_response_bytes();
  test_third_version_caller();
  test_quota_policy_survives_reload();
  test_files();
  test_config_errors_list_every_problem();
  test_options();
  test_decision_from_a_later_header_gets_zeroed_tail();
  test_null_and_bad_arguments_are_einval();
  test_parse_ip();
  test_format_buffer_sizes();
  test_metrics();
  test_monotonic_clock();
  rmdir(g_tmp_dir);
  return c_test_result("c_api_test");
}
