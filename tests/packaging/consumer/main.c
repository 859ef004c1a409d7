/* Built against an installed mxlimit: proves c.h, libmxlimit_c (shared or
 * static) and the way it was found (find_package, or pkg-config's flags)
 * work outside the source tree. argv[1] names the variant in the output. */
#include <stdio.h>
#include <string.h>

#include "mxlimit/c.h"

int main(int argc, char** argv) {
  const char yaml[] =
      "policies:\n"
      "  - name: login\n"
      "    match: /_matrix/client/v3/login\n"
      "    rate_limit: { unit: minute, requests_per_unit: 2 }\n";
  mxlimit_limiter* limiter = NULL;
  char* err = NULL;
  if (mxlimit_limiter_new_from_yaml(yaml, strlen(yaml), "consumer.yaml", NULL,
                                    &limiter, &err) != MXLIMIT_OK) {
    fprintf(stderr, "%s\n", err ? err : "no message");
    mxlimit_free(err);
    return 1;
  }
  uint8_t client[16];
  if (mxlimit_parse_ip("192.0.2.1", 9, client) != MXLIMIT_OK) return 1;
  const char* target = "/_matrix/client/r0/login";
  mxlimit_decision d[3];
  for (int i = 0; i < 3; ++i) {
    const mxlimit_decision init = MXLIMIT_DECISION_INIT;
    d[i] = init;
    if (mxlimit_check(limiter, "POST", 4, target, strlen(target), client, NULL,
                      0, 1, 0, 0, &d[i]) != MXLIMIT_OK) {
      return 1;
    }
  }
  const int ok = d[0].allowed && d[1].allowed && !d[2].allowed &&
                 d[2].policy_len == 5 && memcmp(d[2].policy, "login", 5) == 0;
  char body[MXLIMIT_BODY_MAX];
  if (!ok || mxlimit_format_body(&d[2], body, sizeof(body), NULL) != 0 ||
      mxlimit_version() != MXLIMIT_VERSION_NUMBER) {
    return 1;
  }
  mxlimit_limiter_free(limiter);
  printf("c consumer OK (%s), mxlimit %u.%u.%u: %s\n", argc > 1 ? argv[1] : "?",
         mxlimit_version() >> 16, (mxlimit_version() >> 8) & 0xFF,
         mxlimit_version() & 0xFF, body);
  return 0;
}
