/* c_outcomes.h alone, as a C11 program that includes only it sees it: it
 * must bring in c.h itself (tests/c_api/CMakeLists.txt compiles this with
 * -std=c11 -Wall -Wextra -Werror -pedantic and only include/ on the path). */
#include "mxlimit/c_outcomes.h"

int mxlimit_header_check_outcomes_c(void);

int mxlimit_header_check_outcomes_c(void) {
  mxlimit_request_options r = MXLIMIT_REQUEST_OPTIONS_INIT;
  mxlimit_decision d = MXLIMIT_DECISION_INIT;
  char policy[MXLIMIT_RATELIMIT_POLICY_MAX];
  char limit[MXLIMIT_RATELIMIT_MAX];
  (void)policy;
  (void)limit;
  return (int)(r.struct_size + d.struct_size);
}
