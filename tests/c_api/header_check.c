/* c.h alone, as a C11 program sees it: compiled with -std=c11 -Wall -Wextra
 * -Werror -pedantic (tests/c_api/CMakeLists.txt), and nothing on the include
 * path but include/. Included twice: the guard must hold. */
#include "mxlimit/c.h"

int mxlimit_header_check_c(void);

int mxlimit_header_check_c(void) {
  mxlimit_decision d = MXLIMIT_DECISION_INIT;
  mxlimit_options o = MXLIMIT_OPTIONS_INIT;
  mxlimit_request_options r = MXLIMIT_REQUEST_OPTIONS_INIT;
  return (int)(d.struct_size + o.struct_size + r.struct_size +
               MXLIMIT_VERSION_NUMBER);
}
