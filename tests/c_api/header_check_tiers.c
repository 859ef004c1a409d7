/* c_tiers.h alone, as a C11 program that includes only it sees it: it must
 * bring in c.h itself (tests/c_api/CMakeLists.txt compiles this with
 * -std=c11 -Wall -Wextra -Werror -pedantic and only include/ on the path). */
#include "mxlimit/c_tiers.h"

int mxlimit_header_check_tiers_c(void);

int mxlimit_header_check_tiers_c(void) {
  mxlimit_decision d = MXLIMIT_DECISION_INIT;
  int (*set)(mxlimit_limiter*, const char*, size_t, const char*, size_t,
             int64_t, char**) = mxlimit_set_tier;
  int (*clear)(mxlimit_limiter*, const char*, size_t, char**) =
      mxlimit_clear_tier;
  int (*list)(mxlimit_limiter*, char**, char**) = mxlimit_list_tiers;
  (void)set;
  (void)clear;
  (void)list;
  return (int)(d.struct_size + d.tier_len);
}
