/* The tier calls of the C ABI (include/mxlimit/c_tiers.h) from C:
 * mxlimit_set_tier, mxlimit_clear_tier and mxlimit_list_tiers, expiry on the
 * steady clock, a tiered user's budget under the built-in policies, the
 * decision's `tier`, its life across reloads, a caller built before `tier`,
 * and every error. */

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mxlimit/c.h"
#include "tests/c_api/c_test.h"

/* --- Helpers ------------------------------------------------------------- */

static mxlimit_limiter* new_from_yaml(const char* yaml) {
  mxlimit_limiter* limiter = NULL;
  char* err = NULL;
  const int rc = mxlimit_limiter_new_from_yaml(
      yaml, yaml ? strlen(yaml) : 0, "tiers.yaml", NULL, &limiter, &err);
  EXPECT_STATUS(rc, MXLIMIT_OK);
  if (err != NULL) fprintf(stderr, "unexpected error: %s\n", err);
  mxlimit_free(err);
  return limiter;
}

/* mxlimit_set_tier with C strings; returns its status, and prints the
 * message of an unexpected failure. */
static int set_tier(mxlimit_limiter* limiter, const char* subject,
                    const char* tier, int64_t expires_in_ms) {
  char* err = (char*)"not cleared";
  const int rc = mxlimit_set_tier(limiter, subject, strlen(subject), tier,
                                  strlen(tier), expires_in_ms, &err);
  if (rc == MXLIMIT_OK) {
    EXPECT(err == NULL);
  } else {
    EXPECT(err != NULL);
  }
  mxlimit_free(err);
  return rc;
}

static int clear_tier(mxlimit_limiter* limiter, const char* subject) {
  return mxlimit_clear_tier(limiter, subject, strlen(subject), NULL);
}

/* The list as a malloc'd string (NULL on failure); free with mxlimit_free. */
static char* list_tiers(mxlimit_limiter* limiter) {
  char* json = NULL;
  char* err = NULL;
  EXPECT_STATUS(mxlimit_list_tiers(limiter, &json, &err), MXLIMIT_OK);
  EXPECT(err == NULL);
  mxlimit_free(err);
  return json;
}

#define EXPECT_LIST(limiter, expected)                                  \
  do {                                                                  \
    char* c_test_json = list_tiers(limiter);                            \
    if (c_test_json == NULL || strcmp(c_test_json, (expected)) != 0) {  \
      fprintf(stderr,                                                   \
              "%s:%d: list is %s\n"                                     \
              "  expected %s\n",                                        \
              __FILE__, __LINE__, c_test_json ? c_test_json : "(NULL)", \
              (expected));                                              \
      ++c_test_failures;                                                \
    }                                                                   \
    mxlimit_free(c_test_json);                                          \
  } while (0)

/* One message send by `user` from `ip` at `now`. */
static mxlimit_decision send_at(mxlimit_limiter* limiter, const char* user,
                                const char* ip, int txn, int64_t now) {
  char target[128];
  snprintf(target, sizeof(target),
           "/_matrix/client/v3/rooms/!r:example.org/send/m.room.message/"
           "txn%d",
           txn);
  uint8_t client[16];
  EXPECT_STATUS(mxlimit_parse_ip(ip, strlen(ip), client), MXLIMIT_OK);
  mxlimit_decision d = MXLIMIT_DECISION_INIT;
  EXPECT_STATUS(mxlimit_check(limiter, "PUT", 3, target, strlen(target), client,
                              user, user ? strlen(user) : 0, 1, 0, now, &d),
                MXLIMIT_OK);
  return d;
}

/* How many sends `user` gets from `ip` at the instant `now` before the
 * first denial (at most `limit`); the denial in `*denial`. */
static int sends_before_denial(mxlimit_limiter* limiter, const char* user,
                               const char* ip, int64_t now, int limit,
                               mxlimit_decision* denial) {
  for (int i = 0; i < limit; ++i) {
    const mxlimit_decision d = send_at(limiter, user, ip, i, now);
    if (!d.allowed) {
      *denial = d;
      return i;
    }
  }
  return limit;
}

static void sleep_ms(long ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&t, &t) != 0) {
  }
}

static const char kBridgeYaml[] = "tiers: { bridge: { scale: 10 } }\n";

/* --- A tier's budget, with the built-in policies ------------------------- */

static void test_runtime_tier_scales_the_builtin_budget(void) {
  mxlimit_limiter* limiter = new_from_yaml(kBridgeYaml);
  if (limiter == NULL) return;
  const int64_t now = mxlimit_monotonic_now_ns();
  mxlimit_decision denial = MXLIMIT_DECISION_INIT;

  /* A plain user: the built-in message-send, burst 10 then 12 a minute. */
  EXPECT_INT(sends_before_denial(limiter, "@alice:example.org", "192.0.2.1",
                                 now, 1000, &denial),
             10);
  EXPECT_STRN(denial.policy, denial.policy_len, "message-send");
  EXPECT_STRN(denial.tier, denial.tier_len, "");
  EXPECT(denial.tier != NULL);
  EXPECT_INT(denial.retry_after_ns, 5000000000); /* a minute / 12 */

  /* The bridge, put in `bridge` at runtime: ten times the burst and the
   * rate, at the same instant. */
  EXPECT_STATUS(set_tier(limiter, "@bridge:example.org", "bridge", 0),
                MXLIMIT_OK);
  const mxlimit_decision first =
      send_at(limiter, "@bridge:example.org", "192.0.2.2", 1000, now);
  EXPECT_INT(first.allowed, 1);
  EXPECT_STRN(first.tier, first.tier_len, "bridge");
  EXPECT_INT(first.remaining, 99);
  EXPECT_INT(sends_before_denial(limiter, "@bridge:example.org", "192.0.2.2",
                                 now, 1000, &denial),
             99);
  EXPECT_INT(denial.allowed, 0);
  EXPECT_INT(denial.limited_by, MXLIMIT_SCOPE_USER);
  EXPECT_STRN(denial.policy, denial.policy_len, "message-send");
  EXPECT_STRN(denial.tier, denial.tier_len, "bridge");
  EXPECT_INT(denial.retry_after_ns, 500000000); /* a minute / 120 */
  EXPECT_INT(denial.quota_burst, 100);

  /* Cleared: back to the plain rates, with the bucket kept (no fresh
   * burst): still denied at that instant, and after 5 s one more send. */
  EXPECT_STATUS(clear_tier(limiter, "@bridge:example.org"), MXLIMIT_OK);
  denial = send_at(limiter, "@bridge:example.org", "192.0.2.2", 2000, now);
  EXPECT_INT(denial.allowed, 0);
  EXPECT_STRN(denial.tier, denial.tier_len, "");
  EXPECT_INT(denial.retry_after_ns, 5000000000);
  EXPECT_INT(send_at(limiter, "@bridge:example.org", "192.0.2.2", 2001,
                     now + 5000000000)
                 .allowed,
             1);
  mxlimit_limiter_free(limiter);
}

static void test_network_tier_and_precedence(void) {
  mxlimit_limiter* limiter = new_from_yaml(
      "tiers:\n"
      "  bridge: { scale: 10 }\n"
      "  suspect: { scale: 0.1 }\n"
      "  staff: { exempt: true }\n");
  if (limiter == NULL) return;
  const int64_t now = mxlimit_monotonic_now_ns();
  EXPECT_STATUS(set_tier(limiter, "192.0.2.0/24", "suspect", 0), MXLIMIT_OK);
  /* Anyone from the network: burst 1 (10 * 0.1). */
  mxlimit_decision denial = MXLIMIT_DECISION_INIT;
  EXPECT_INT(sends_before_denial(limiter, "@carol:example.org", "192.0.2.77",
                                 now, 100, &denial),
             1);
  EXPECT_STRN(denial.tier, denial.tier_len, "suspect");
  /* A user's assignment beats the network's. */
  EXPECT_STATUS(set_tier(limiter, "@dave:example.org", "bridge", 0),
                MXLIMIT_OK);
  const mxlimit_decision d =
      send_at(limiter, "@dave:example.org", "192.0.2.78", 0, now);
  EXPECT_STRN(d.tier, d.tier_len, "bridge");
  /* Outside the network: no tier. */
  const mxlimit_decision outside =
      send_at(limiter, "@erin:example.org", "198.51.100.1", 0, now);
  EXPECT_STRN(outside.tier, outside.tier_len, "");
  /* An exempt tier: neither checked nor charged, and named. */
  EXPECT_STATUS(set_tier(limiter, "@admin:example.org", "staff", 0),
                MXLIMIT_OK);
  for (int i = 0; i < 50; ++i) {
    const mxlimit_decision s =
        send_at(limiter, "@admin:example.org", "198.51.100.2", i, now);
    EXPECT_INT(s.allowed, 1);
    EXPECT_INT(s.exempt, 1);
    if (i == 0) EXPECT_STRN(s.tier, s.tier_len, "staff");
  }
  /* The network is cleared whichever way it is written. */
  EXPECT_STATUS(clear_tier(limiter, "192.0.2.9/24"), MXLIMIT_OK);
  EXPECT_STATUS(clear_tier(limiter, "192.0.2.0/24"), MXLIMIT_ENOTFOUND);
  mxlimit_limiter_free(limiter);
}

/* --- Expiry ----------------------------------------------------------------
 */

static void test_expiry(void) {
  mxlimit_limiter* limiter = new_from_yaml(kBridgeYaml);
  if (limiter == NULL) return;
  const int64_t now = mxlimit_monotonic_now_ns();
  EXPECT_STATUS(set_tier(limiter, "@temp:example.org", "bridge", 1000),
                MXLIMIT_OK);
  /* In force now, on the clock of mxlimit_monotonic_now_ns... */
  mxlimit_decision d = send_at(limiter, "@temp:example.org", "192.0.2.1", 0,
                               mxlimit_monotonic_now_ns());
  EXPECT_STRN(d.tier, d.tier_len, "bridge");
  /* ...and over once the second has passed on it. */
  d = send_at(limiter, "@temp:example.org", "192.0.2.1", 1,
              now + 1000000000 + 50000000);
  EXPECT_INT(d.allowed, 1);
  EXPECT_STRN(d.tier, d.tier_len, "");

  /* The list counts down, rounded up, and drops it once it is over. */
  EXPECT_STATUS(set_tier(limiter, "@hour:example.org", "bridge", 3600000),
                MXLIMIT_OK);
  char* json = list_tiers(limiter);
  EXPECT_CONTAINS(json,
                  "{\"kind\":\"user\",\"subject\":\"@hour:example.org\","
                  "\"tier\":\"bridge\",\"runtime\":true,\"expires_in_ms\":");
  const char* ms = json ? strstr(json, "\"expires_in_ms\":") : NULL;
  EXPECT(ms != NULL);
  if (ms != NULL) {
    /* @hour sorts before @temp: the first expiry is its. */
    const long long left = strtoll(ms + strlen("\"expires_in_ms\":"), NULL, 10);
    EXPECT(left > 3590000 && left <= 3600000);
  }
  mxlimit_free(json);
  EXPECT_STATUS(clear_tier(limiter, "@hour:example.org"), MXLIMIT_OK);

  EXPECT_STATUS(set_tier(limiter, "@brief:example.org", "bridge", 20),
                MXLIMIT_OK);
  json = list_tiers(limiter);
  EXPECT_CONTAINS(json, "\"subject\":\"@brief:example.org\"");
  mxlimit_free(json);
  sleep_ms(1100); /* past @temp's second too */
  EXPECT_LIST(limiter, "[]");
  /* Clearing an expired assignment is harmless (the library may still hold
   * it until a prune, and then clears it without error); after that,
   * there is nothing to clear. */
  const int rc = clear_tier(limiter, "@brief:example.org");
  EXPECT(rc == MXLIMIT_OK || rc == MXLIMIT_ENOTFOUND);
  EXPECT_STATUS(clear_tier(limiter, "@brief:example.org"), MXLIMIT_ENOTFOUND);

  /* No expiry (0), and an expiry beyond the clock's range: never over. */
  EXPECT_STATUS(set_tier(limiter, "@forever:example.org", "bridge", 0),
                MXLIMIT_OK);
  EXPECT_STATUS(set_tier(limiter, "@ages:example.org", "bridge", INT64_MAX),
                MXLIMIT_OK);
  d = send_at(limiter, "@ages:example.org", "192.0.2.1", 0, INT64_MAX - 1);
  EXPECT_STRN(d.tier, d.tier_len, "bridge");
  /* Setting again replaces the expiry. */
  EXPECT_STATUS(set_tier(limiter, "@forever:example.org", "bridge", 1000),
                MXLIMIT_OK);
  d = send_at(limiter, "@forever:example.org", "192.0.2.1", 0,
              mxlimit_monotonic_now_ns() + 2000000000);
  EXPECT_STRN(d.tier, d.tier_len, "");
  mxlimit_limiter_free(limiter);
}

/* --- The list ------------------------------------------------------------- */

static void test_list(void) {
  /* No tiers at all. */
  mxlimit_limiter* plain = new_from_yaml(NULL);
  if (plain != NULL) EXPECT_LIST(plain, "[]");
  mxlimit_limiter_free(plain);

  mxlimit_limiter* limiter = new_from_yaml(
      "tiers:\n"
      "  bridge: { scale: 10 }\n"
      "  suspect: { scale: 0.1 }\n"
      "  assign:\n"
      "    users: { \"@file:example.org\": bridge }\n"
      "    networks: { \"198.51.100.0/24\": suspect }\n");
  if (limiter == NULL) return;
  EXPECT_LIST(limiter,
              "[{\"kind\":\"user\",\"subject\":\"@file:example.org\","
              "\"tier\":\"bridge\",\"runtime\":false},"
              "{\"kind\":\"network\",\"subject\":\"198.51.100.0/24\","
              "\"tier\":\"suspect\",\"runtime\":false}]");
  /* Runtime ones beside the file's, the same subject twice; a user ID with
   * a quote and a backslash (printable ASCII is allowed) escaped; an
   * address as its /128. */
  EXPECT_STATUS(set_tier(limiter, "@file:example.org", "suspect", 0),
                MXLIMIT_OK);
  EXPECT_STATUS(set_tier(limiter, "@q\"uo\\te:example.org", "bridge", 0),
                MXLIMIT_OK);
  EXPECT_STATUS(set_tier(limiter, "2001:db8:bad::1", "suspect", 0), MXLIMIT_OK);
  EXPECT_LIST(limiter,
              "[{\"kind\":\"user\",\"subject\":\"@file:example.org\","
              "\"tier\":\"bridge\",\"runtime\":false},"
              "{\"kind\":\"user\",\"subject\":\"@file:example.org\","
              "\"tier\":\"suspect\",\"runtime\":true},"
              "{\"kind\":\"user\",\"subject\":\"@q\\\"uo\\\\te:example.org\","
              "\"tier\":\"bridge\",\"runtime\":true},"
              "{\"kind\":\"network\",\"subject\":\"198.51.100.0/24\","
              "\"tier\":\"suspect\",\"runtime\":false},"
              "{\"kind\":\"network\",\"subject\":\"2001:db8:bad::1/128\","
              "\"tier\":\"suspect\",\"runtime\":true}]");
  /* The runtime one goes first for its subject. */
  const mxlimit_decision d = send_at(limiter, "@file:example.org", "192.0.2.1",
                                     0, mxlimit_monotonic_now_ns());
  EXPECT_STRN(d.tier, d.tier_len, "suspect");
  /* Clearing it leaves the file's; that one cannot be cleared. */
  EXPECT_STATUS(clear_tier(limiter, "@file:example.org"), MXLIMIT_OK);
  EXPECT_STATUS(clear_tier(limiter, "@file:example.org"), MXLIMIT_ENOTFOUND);
  EXPECT_STATUS(clear_tier(limiter, "@q\"uo\\te:example.org"), MXLIMIT_OK);
  EXPECT_STATUS(clear_tier(limiter, "2001:db8:bad::1/128"), MXLIMIT_OK);
  EXPECT_LIST(limiter,
              "[{\"kind\":\"user\",\"subject\":\"@file:example.org\","
              "\"tier\":\"bridge\",\"runtime\":false},"
              "{\"kind\":\"network\",\"subject\":\"198.51.100.0/24\","
              "\"tier\":\"suspect\",\"runtime\":false}]");
  mxlimit_limiter_free(limiter);
}

/* --- Reloads and older callers ---------------------------------------------
 */

static void test_reload_keeps_or_drops_and_names_stay_valid(void) {
  mxlimit_limiter* limiter = new_from_yaml(
      "tiers: { bridge: { scale: 10 }, suspect: { scale: 0.1 } }\n");
  if (limiter == NULL) return;
  EXPECT_STATUS(set_tier(limiter, "@b:example.org", "bridge", 0), MXLIMIT_OK);
  EXPECT_STATUS(set_tier(limiter, "@s:example.org", "suspect", 0), MXLIMIT_OK);
  const int64_t now = mxlimit_monotonic_now_ns();
  const mxlimit_decision before =
      send_at(limiter, "@s:example.org", "192.0.2.1", 0, now);
  EXPECT_STRN(before.tier, before.tier_len, "suspect");
  /* The new file drops `suspect`: its assignment goes, `bridge`'s stays. */
  const char* next = "tiers: { bridge: { scale: 5 } }\n";
  char* err = NULL;
  EXPECT_STATUS(
      mxlimit_limiter_reload_yaml(limiter, next, strlen(next), NULL, &err),
      MXLIMIT_OK);
  mxlimit_free(err);
  EXPECT_LIST(limiter,
              "[{\"kind\":\"user\",\"subject\":\"@b:example.org\","
              "\"tier\":\"bridge\",\"runtime\":true}]");
  /* The earlier decision's name is still readable. */
  EXPECT_STRN(before.tier, before.tier_len, "suspect");
  const mxlimit_decision after =
      send_at(limiter, "@s:example.org", "192.0.2.1", 1, now);
  EXPECT_STRN(after.tier, after.tier_len, "");
  EXPECT_STATUS(set_tier(limiter, "@s:example.org", "suspect", 0),
                MXLIMIT_ENOTFOUND);
  mxlimit_limiter_free(limiter);
}

/* A caller built before `tier` (the fourth version) never sees it: nothing
 * is written past its struct. */
static void test_fourth_version_caller(void) {
  mxlimit_limiter* limiter = new_from_yaml(kBridgeYaml);
  if (limiter == NULL) return;
  EXPECT_STATUS(set_tier(limiter, "@old:example.org", "bridge", 0), MXLIMIT_OK);
  const size_t fourth = offsetof(mxlimit_decision, tier);
  mxlimit_decision old;
  memset(&old, 0xAA, sizeof(old));
  old.struct_size = (uint32_t)fourth;
  uint8_t client[16];
  EXPECT_STATUS(mxlimit_parse_ip("192.0.2.1", 9, client), MXLIMIT_OK);
  const char* t =
      "/_matrix/client/v3/rooms/!r:example.org/send/m.room.message/1";
  EXPECT_STATUS(
      mxlimit_check(limiter, "PUT", 3, t, strlen(t), client, "@old:example.org",
                    16, 1, 0, mxlimit_monotonic_now_ns(), &old),
      MXLIMIT_OK);
  EXPECT_INT(old.struct_size, fourth);
  EXPECT_INT(old.allowed, 1);
  EXPECT_INT(old.remaining, 99); /* the tier applies all the same */
  const unsigned char* tail = (const unsigned char*)&old + fourth;
  for (size_t i = 0; i < sizeof(old) - fourth; ++i) EXPECT_INT(tail[i], 0xAA);
  mxlimit_limiter_free(limiter);
}

/* --- Errors ----------------------------------------------------------------
 */

static void test_errors(void) {
  mxlimit_limiter* limiter = new_from_yaml(kBridgeYaml);
  if (limiter == NULL) return;
  char* err = NULL;

  /* A subject that is neither a user ID nor a network. */
  EXPECT_STATUS(mxlimit_set_tier(limiter, "bridge", 6, "bridge", 6, 0, &err),
                MXLIMIT_EINVAL);
  EXPECT_CONTAINS(err, "subject");
  mxlimit_free(err);
  EXPECT_STATUS(
      mxlimit_set_tier(limiter, "@no-server", 10, "bridge", 6, 0, &err),
      MXLIMIT_EINVAL);
  EXPECT_CONTAINS(err, "no ':server' part");
  mxlimit_free(err);
  EXPECT_STATUS(
      mxlimit_set_tier(limiter, "10.0.0.0/33", 11, "bridge", 6, 0, &err),
      MXLIMIT_EINVAL);
  EXPECT(err != NULL);
  mxlimit_free(err);
  EXPECT_STATUS(mxlimit_set_tier(limiter, NULL, 0, "bridge", 6, 0, &err),
                MXLIMIT_EINVAL);
  mxlimit_free(err);
  EXPECT_STATUS(mxlimit_clear_tier(limiter, "nobody", 6, &err), MXLIMIT_EINVAL);
  EXPECT_CONTAINS(err, "subject");
  mxlimit_free(err);

  /* An unknown tier: the message lists the defined ones. */
  EXPECT_STATUS(
      mxlimit_set_tier(limiter, "@a:example.org", 14, "bridges", 7, 0, &err),
      MXLIMIT_ENOTFOUND);
  EXPECT_CONTAINS(err, "no tier is named \"bridges\"");
  EXPECT_CONTAINS(err, "bridge");
  mxlimit_free(err);
  EXPECT_STATUS(
      mxlimit_set_tier(limiter, "@a:example.org", 14, NULL, 0, 0, &err),
      MXLIMIT_ENOTFOUND);
  mxlimit_free(err);

  /* A negative expiry. */
  EXPECT_STATUS(
      mxlimit_set_tier(limiter, "@a:example.org", 14, "bridge", 6, -1, &err),
      MXLIMIT_EINVAL);
  EXPECT_CONTAINS(err, "expires_in_ms");
  mxlimit_free(err);

  /* Nothing to clear. */
  EXPECT_STATUS(mxlimit_clear_tier(limiter, "@a:example.org", 14, &err),
                MXLIMIT_ENOTFOUND);
  EXPECT(err != NULL);
  mxlimit_free(err);

  /* NULL arguments; `errmsg` may always be NULL. */
  EXPECT_STATUS(
      mxlimit_set_tier(NULL, "@a:example.org", 14, "bridge", 6, 0, &err),
      MXLIMIT_EINVAL);
  EXPECT_CONTAINS(err, "limiter is NULL");
  mxlimit_free(err);
  EXPECT_STATUS(mxlimit_set_tier(limiter, NULL, 3, "bridge", 6, 0, NULL),
                MXLIMIT_EINVAL);
  EXPECT_STATUS(
      mxlimit_set_tier(limiter, "@a:example.org", 14, NULL, 6, 0, NULL),
      MXLIMIT_EINVAL);
  EXPECT_STATUS(mxlimit_clear_tier(NULL, "@a:example.org", 14, NULL),
                MXLIMIT_EINVAL);
  EXPECT_STATUS(mxlimit_clear_tier(limiter, NULL, 1, NULL), MXLIMIT_EINVAL);
  char* json = (char*)"not cleared";
  EXPECT_STATUS(mxlimit_list_tiers(NULL, &json, &err), MXLIMIT_EINVAL);
  EXPECT(json == NULL);
  EXPECT_CONTAINS(err, "limiter is NULL");
  mxlimit_free(err);
  EXPECT_STATUS(mxlimit_list_tiers(limiter, NULL, NULL), MXLIMIT_EINVAL);

  /* None of that assigned anything. */
  EXPECT_LIST(limiter, "[]");

  /* A file without tiers: nothing to assign. */
  mxlimit_limiter* plain = new_from_yaml(NULL);
  if (plain != NULL) {
    EXPECT_STATUS(
        mxlimit_set_tier(plain, "@a:example.org", 14, "bridge", 6, 0, &err),
        MXLIMIT_ENOTFOUND);
    EXPECT_CONTAINS(err, "defines none");
    mxlimit_free(err);
  }
  mxlimit_limiter_free(plain);
  mxlimit_limiter_free(limiter);
}

int main(void) {
  test_runtime_tier_scales_the_builtin_budget();
  test_network_tier_and_precedence();
  test_expiry();
  test_list();
  test_reload_keeps_or_drops_and_names_stay_valid();
  test_fourth_version_caller();
  test_errors();
  return c_test_result("c_api_tiers_test");
}
