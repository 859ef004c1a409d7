// c.h alone, as a C++ program sees it: compiled as C++11 and C++20 with
// -Wall -Wextra -Werror -pedantic (tests/c_api/CMakeLists.txt), and nothing on
// the include path but include/.
#include "mxlimit/c.h"

// C++ callers see every function as noexcept.
static_assert(noexcept(mxlimit_version()), "c.h functions are noexcept");
static_assert(noexcept(mxlimit_check(nullptr, nullptr, 0, nullptr, 0, nullptr,
                                     nullptr, 0, 0, 0, 0, nullptr)),
              "c.h functions are noexcept");

int MxlimitHeaderCheckCxx();

int MxlimitHeaderCheckCxx() {
  mxlimit_decision d = MXLIMIT_DECISION_INIT;
  mxlimit_options o = MXLIMIT_OPTIONS_INIT;
  mxlimit_request_options r = MXLIMIT_REQUEST_OPTIONS_INIT;
  return static_cast<int>(d.struct_size + o.struct_size + r.struct_size +
                          MXLIMIT_VERSION_NUMBER);
}
