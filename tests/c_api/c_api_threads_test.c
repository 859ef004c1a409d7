/* The C ABI under concurrent use of one handle, as a homeserver's request
 * threads would: several threads check the same users at once while another
 * reloads the policies, another reads the metrics and another puts those
 * users in a tier and takes them out again. Exactly the burst of
 * each user's bucket is allowed, however the threads interleave (no lost or
 * doubled update), and the policy names in decisions stay readable across
 * reloads. Run under ASan+UBSan by the asan preset too. */

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "mxlimit/c.h"
#include "tests/c_api/c_test.h"

enum {
  kWorkers = 4,
  kUsers = 16,
  kBurst = 50,
  /* Every worker sends at least this many per user, together far over the
   * burst, and goes on until the reloads and metrics reads below have
   * happened during the run. */
  kAttemptsPerWorker = 40,
  kReloadsDuringRun = 20,
  kMetricsReadsDuringRun = 20,
  kTierRoundsDuringRun = 20,
};

/* The enforcing policy stays the same in both files, so every reload keeps
 * its buckets; the other policy's name changes every time. The tier has
 * the plain rates (scale 1), so the users' counts do not depend on when
 * they are in it; every file defines it, so reloads keep its members. */
static const char kConfig[] =
    "tiers: { audit: { scale: 1 } }\n"
    "policies:\n"
    "  - name: sync-per-user\n"
    "    match: /_matrix/client/v3/sync\n"
    "    scope: user\n"
    "    rate_limit: { unit: hour, requests_per_unit: 1, burst: 50 }\n"
    "  - name: %s\n"
    "    match: /_matrix/client/v3/keys/query\n"
    "    rate_limit: { unit: minute, requests_per_unit: 5 }\n";

static mxlimit_limiter* g_limiter;
static atomic_int g_allowed[kUsers];
static atomic_int g_workers_done;
static atomic_int g_bad_policy_names;
static atomic_int g_errors;
static atomic_int g_reloads;
static atomic_int g_metrics_reads;
static atomic_int g_tier_rounds;
static pthread_barrier_t g_start;

static void* worker(void* arg) {
  const int id = *(const int*)arg;
  char user[64];
  uint8_t client[16] = {0x20, 0x01, 0x0d, 0xb8, 0, (uint8_t)id};
  const char* target = "/_matrix/client/v3/sync?since=s1";
  pthread_barrier_wait(&g_start);
  for (int round = 0; round < kAttemptsPerWorker ||
                      atomic_load(&g_reloads) < kReloadsDuringRun ||
                      atomic_load(&g_metrics_reads) < kMetricsReadsDuringRun ||
                      atomic_load(&g_tier_rounds) < kTierRoundsDuringRun;
       ++round) {
    for (int u = 0; u < kUsers; ++u) {
      snprintf(user, sizeof(user), "@user%d:example.org", u);
      client[15] = (uint8_t)u;
      mxlimit_decision d = MXLIMIT_DECISION_INIT;
      /* All at one instant: nothing refills while the threads race. */
      if (mxlimit_check(g_limiter, "GET", 3, target, strlen(target), client,
                        user, strlen(user), 1, 0, 0, &d) != MXLIMIT_OK) {
        atomic_fetch_add(&g_errors, 1);
        continue;
      }
      if (d.allowed) {
        atomic_fetch_add(&g_allowed[u], 1);
      } else if (d.policy_len != 13 ||
                 memcmp(d.policy, "sync-per-user", 13) != 0) {
        atomic_fetch_add(&g_bad_policy_names, 1);
      }
    }
  }
  atomic_fetch_add(&g_workers_done, 1);
  return NULL;
}

static void* reloader(void* arg) {
  (void)arg;
  char yaml[512];
  char name[32];
  int reloads = 0;
  pthread_barrier_wait(&g_start);
  while (atomic_load(&g_workers_done) < kWorkers) {
    snprintf(name, sizeof(name), "keys-%d", reloads);
    snprintf(yaml, sizeof(yaml), kConfig, name);
    char* err = NULL;
    if (mxlimit_limiter_reload_yaml(g_limiter, yaml, strlen(yaml),
                                    "reload.yaml", &err) != MXLIMIT_OK) {
      fprintf(stderr, "reload failed: %s\n", err ? err : "?");
      atomic_fetch_add(&g_errors, 1);
    }
    mxlimit_free(err);
    atomic_store(&g_reloads, ++reloads);
  }
  printf("reloads during the run: %d\n", reloads);
  return NULL;
}

static void* metrics_reader(void* arg) {
  (void)arg;
  int reads = 0;
  pthread_barrier_wait(&g_start);
  while (atomic_load(&g_workers_done) < kWorkers) {
    char* text = NULL;
    if (mxlimit_metrics_prometheus(g_limiter, &text, NULL) != MXLIMIT_OK ||
        strstr(text, "sync-per-user") == NULL) {
      atomic_fetch_add(&g_errors, 1);
    }
    mxlimit_free(text);
    atomic_store(&g_metrics_reads, ++reads);
  }
  printf("metrics reads during the run: %d\n", reads);
  return NULL;
}

/* Puts every user in the tier and takes each out again, and lists them. */
static void* tier_setter(void* arg) {
  (void)arg;
  char user[64];
  int rounds = 0;
  pthread_barrier_wait(&g_start);
  while (atomic_load(&g_workers_done) < kWorkers) {
    for (int u = 0; u < kUsers; ++u) {
      snprintf(user, sizeof(user), "@user%d:example.org", u);
      char* err = NULL;
      if (mxlimit_set_tier(g_limiter, user, strlen(user), "audit", 5,
                           u % 2 ? 60000 : 0, &err) != MXLIMIT_OK) {
        fprintf(stderr, "set_tier failed: %s\n", err ? err : "?");
        atomic_fetch_add(&g_errors, 1);
      }
      mxlimit_free(err);
    }
    char* json = NULL;
    if (mxlimit_list_tiers(g_limiter, &json, NULL) != MXLIMIT_OK ||
        strstr(json, "\"tier\":\"audit\"") == NULL) {
      atomic_fetch_add(&g_errors, 1);
    }
    mxlimit_free(json);
    for (int u = 0; u < kUsers; ++u) {
      snprintf(user, sizeof(user), "@user%d:example.org", u);
      if (mxlimit_clear_tier(g_limiter, user, strlen(user), NULL) !=
          MXLIMIT_OK) {
        atomic_fetch_add(&g_errors, 1);
      }
    }
    atomic_store(&g_tier_rounds, ++rounds);
  }
  printf("tier rounds during the run: %d\n", rounds);
  return NULL;
}

int main(void) {
  char yaml[512];
  snprintf(yaml, sizeof(yaml), kConfig, "keys-start");
  mxlimit_options options = MXLIMIT_OPTIONS_INIT;
  options.shards = 4;
  char* err = NULL;
  EXPECT_STATUS(mxlimit_limiter_new_from_yaml(yaml, strlen(yaml), "start.yaml",
                                              &options, &g_limiter, &err),
                MXLIMIT_OK);
  if (g_limiter == NULL) {
    fprintf(stderr, "%s\n", err ? err : "?");
    return 1;
  }

  /* A decision naming a policy that the reloads below replace. */
  uint8_t client[16] = {0x20, 0x01, 0x0d, 0xb8, 0xff};
  mxlimit_decision before = MXLIMIT_DECISION_INIT;
  for (int i = 0; i < 6; ++i) {
    EXPECT_STATUS(
        mxlimit_check(g_limiter, "POST", 4, "/_matrix/client/v3/keys/query", 29,
                      client, NULL, 0, 1, 0, 0, &before),
        MXLIMIT_OK);
  }
  EXPECT_INT(before.allowed, 0);
  EXPECT_STRN(before.policy, before.policy_len, "keys-start");

  pthread_t threads[kWorkers + 3];
  pthread_barrier_init(&g_start, NULL, kWorkers + 3);
  static int ids[kWorkers];
  for (int i = 0; i < kWorkers; ++i) {
    ids[i] = i;
    EXPECT_INT(pthread_create(&threads[i], NULL, worker, &ids[i]), 0);
  }
  EXPECT_INT(pthread_create(&threads[kWorkers], NULL, reloader, NULL), 0);
  EXPECT_INT(pthread_create(&threads[kWorkers + 1], NULL, metrics_reader, NULL),
             0);
  EXPECT_INT(pthread_create(&threads[kWorkers + 2], NULL, tier_setter, NULL),
             0);
  for (int i = 0; i < kWorkers + 3; ++i) pthread_join(threads[i], NULL);
  pthread_barrier_destroy(&g_start);

  EXPECT_INT(atomic_load(&g_errors), 0);
  EXPECT_INT(atomic_load(&g_bad_policy_names), 0);
  for (int u = 0; u < kUsers; ++u) {
    /* Hundreds of attempts at one instant: exactly kBurst pass. */
    EXPECT_INT(atomic_load(&g_allowed[u]), kBurst);
  }
  /* Still readable after every reload replaced it. */
  EXPECT_STRN(before.policy, before.policy_len, "keys-start");
  mxlimit_limiter_free(g_limiter);
  return c_test_result("c_api_threads_test");
}
