/* Proves that the C ABI's request path allocates nothing: this program
 * replaces malloc and its relatives (glibc supports that for a whole process:
 * "Replacing malloc" in its manual), so every allocation anywhere in the
 * process, the library's C++ `operator new` included, passes through the
 * counters below. It then runs check, peek, charge, the _ex calls, settle
 * (the built-in failed-login-per-ip and a request-bytes quota with its own
 * errcode), the 429 body and the RateLimit fields over a workload that fills
 * the tables and evicts, with some users and a network in tiers, and expects
 * zero.
 *
 * Not built under sanitizers, whose runtimes replace malloc themselves. */

#include "mxlimit/c.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/c_api/c_test.h"

/* --- The replacement allocator: glibc's own, counted. --------------------- */

// glibc's own allocator, under the names it exports for this purpose; the
// replacements below count, then forward to it.
// NOLINTBEGIN(bugprone-reserved-identifier)
extern void* __libc_malloc(size_t size);
extern void* __libc_calloc(size_t n, size_t size);
extern void* __libc_realloc(void* p, size_t size);
extern void* __libc_memalign(size_t align, size_t size);
extern void __libc_free(void* p);
// NOLINTEND(bugprone-reserved-identifier)

static atomic_long g_allocations;

void* malloc(size_t size) {
  atomic_fetch_add_explicit(&g_allocations, 1, memory_order_relaxed);
  return __libc_malloc(size);
}
void* calloc(size_t n, size_t size) {
  atomic_fetch_add_explicit(&g_allocations, 1, memory_order_relaxed);
  return __libc_calloc(n, size);
}
void* realloc(void* p, size_t size) {
  atomic_fetch_add_explicit(&g_allocations, 1, memory_order_relaxed);
  return __libc_realloc(p, size);
}
void* memalign(size_t align, size_t size) {
  atomic_fetch_add_explicit(&g_allocations, 1, memory_order_relaxed);
  return __libc_memalign(align, size);
}
void* aligned_alloc(size_t align, size_t size) { return memalign(align, size); }
int posix_memalign(void** out, size_t align, size_t size) {
  void* p = memalign(align, size);
  if (p == NULL) return 12; /* ENOMEM */
  *out = p;
  return 0;
}
void free(void* p) { __libc_free(p); }

static long allocations(void) {
  return atomic_load_explicit(&g_allocations, memory_order_relaxed);
}

/* --- The workload ------------------------------------------------------------
 */

enum { kClients = 300, kRequests = 4000 };

static const char* const kTargets[] = {
    "/_matrix/client/v3/sync?since=s1&timeout=30000",
    "/_matrix/client/r0/rooms/!abc%3Aexample.org/send/m.room.message/t1",
    "/_matrix/client/v3/keys/claim",
    "/_matrix/client/v3/login",
    "/_matrix/client/v3/keys/not-a-route",
    "/wp-admin/../../etc/passwd",
    "/_matrix/client/%72%30/keys/%63laim",
    "/_matrix/client/unstable/rooms/%21a%3aexample.org/send/x/%2F%2f",
};
enum { kTargetCount = sizeof(kTargets) / sizeof(kTargets[0]) };

int main(void) {
  /* The built-in policies, plus small tables so that admissions evict. */
  const char yaml[] =
      "tables:\n"
      "  ip: { capacity: 64 }\n"
      "  user: { capacity: 64 }\n"
      "policies:\n"
      "  - name: blocked\n"
      "    match: /_matrix/client/v3/keys/claim\n"
      "    rate_limit: { unit: minute, requests_per_unit: 0 }\n"
      "  - name: keys-trial\n"
      "    match: /_matrix/client/v3/keys/*\n"
      "    scope: user\n"
      "    shadow_mode: true\n"
      "    rate_limit: { unit: minute, requests_per_unit: 1 }\n"
      "  - name: upload-quota\n"
      "    match: /_matrix/client/r0/rooms/*\n"
      "    scope: user\n"
      "    layer: quota\n"
      "    cost: request_bytes\n"
      "    rate_limit: { unit: minute, requests_per_unit: 4096, burst: 8192 }\n"
      "    errcode: M_USER_LIMIT_EXCEEDED\n"
      "    info_uri: https://example.org/quota\n"
      "    can_upgrade: false\n"
      "tiers:\n"
      "  bridge: { scale: 10 }\n"
      "  suspect: { scale: 0.1 }\n";
  mxlimit_limiter* limiter = NULL;
  EXPECT_STATUS(mxlimit_limiter_new_from_yaml(yaml, strlen(yaml), "alloc.yaml",
                                              NULL, &limiter, NULL),
                MXLIMIT_OK);
  if (limiter == NULL) return 1;

  /* Inputs built before counting: a homeserver has them in its buffers. */
  static char users[kClients][48];
  static uint8_t clients[kClients][16];
  for (int c = 0; c < kClients; ++c) {
    snprintf(users[c], sizeof(users[c]), "@user%d:example.org", c);
    char ip[48];
    snprintf(ip, sizeof(ip), "2001:db8:%x::1", c);
    EXPECT_STATUS(mxlimit_parse_ip(ip, strlen(ip), clients[c]), MXLIMIT_OK);
  }
  /* Tier assignments (they allocate; a homeserver makes them on an admin
   * request): every tenth user, one with an expiry, and one network. */
  for (int c = 3; c < kClients; c += 10) {
    EXPECT_STATUS(mxlimit_set_tier(limiter, users[c], strlen(users[c]),
                                   "bridge", 6, c == 3 ? 3600000 : 0, NULL),
                  MXLIMIT_OK);
  }
  EXPECT_STATUS(
      mxlimit_set_tier(limiter, "2001:db8:7::/48", 15, "suspect", 7, 0, NULL),
      MXLIMIT_OK);
  static char long_target[70000];
  memset(long_target, 'a', sizeof(long_target) - 1);
  long_target[0] = '/';

  /* The hook sees the library's allocations (its C++ ones too): the metrics
   * text is built in a std::string, then copied with malloc. */
  long before = allocations();
  char* text = NULL;
  EXPECT_STATUS(mxlimit_metrics_prometheus(limiter, &text, NULL), MXLIMIT_OK);
  EXPECT(allocations() - before >= 2);
  mxlimit_free(text);

  before = allocations();
  int64_t now = 0;
  long allowed = 0;
  long tiered = 0;
  for (int i = 0; i < kRequests; ++i) {
    const int c = (i * 7) % kClients;
    const char* target = i % 97 == 0 ? long_target : kTargets[i % kTargetCount];
    const char* user = i % 5 == 0 ? NULL : users[c];
    const size_t user_len = user ? strlen(user) : 0;
    const char* method = i % 2 ? "PUT" : "POST";
    mxlimit_decision d = MXLIMIT_DECISION_INIT;
    mxlimit_check(limiter, method, strlen(method), target, strlen(target),
                  clients[c], user, user_len, 1, 0, now, &d);
    allowed += d.allowed;
    tiered += d.tier_len > 0;
    mxlimit_peek(limiter, method, strlen(method), target, strlen(target),
                 clients[c], user, user_len, 1, 0, now, &d);
    if (i % 3 == 0) {
      mxlimit_charge(limiter, method, strlen(method), target, strlen(target),
                     clients[c], user, user_len, i % 2 ? 2 : -1, 0, now);
    }
    /* With a body length, and settled as a completion would be. */
    mxlimit_request_options options = MXLIMIT_REQUEST_OPTIONS_INIT;
    options.request_bytes = i % 11 == 0 ? -1 : (int64_t)(i % 4096);
    mxlimit_check_ex(limiter, method, strlen(method), target, strlen(target),
                     clients[c], user, user_len, NULL, 0, NULL, 0, 1, 0,
                     &options, now, &d);
    if (d.allowed && d.settles) {
      mxlimit_settle(limiter, method, strlen(method), target, strlen(target),
                     clients[c], user, user_len, NULL, 0, NULL, 0, 1, 0,
                     &options, i % 2 ? 403 : 200, i % 9000, now);
    }
    char body[MXLIMIT_LIMIT_BODY_MAX];
    char header[MXLIMIT_RETRY_AFTER_MAX];
    char policy[MXLIMIT_RATELIMIT_POLICY_MAX];
    char limit[MXLIMIT_RATELIMIT_MAX];
    mxlimit_format_body(&d, body, sizeof(body), NULL);
    mxlimit_format_retry_after(&d, header, sizeof(header), NULL);
    mxlimit_format_ratelimit_headers(&d, policy, sizeof(policy), NULL, limit,
                                     sizeof(limit), NULL);
    uint8_t parsed[16];
    mxlimit_parse_ip("2001:db8::7", 11, parsed);
    now += 1000000 + mxlimit_monotonic_now_ns() % 2;
  }
  const long during = allocations() - before;
  printf("%d requests (%ld allowed, %ld in a tier): %ld allocations\n",
         kRequests, allowed, tiered, during);
  EXPECT_INT(during, 0);
  /* Both outcomes were exercised. */
  EXPECT(allowed > 0 && allowed < kRequests);
  EXPECT(tiered > 0 && tiered < kRequests);
  mxlimit_limiter_free(limiter);
  return c_test_result("c_api_alloc_test");
}
