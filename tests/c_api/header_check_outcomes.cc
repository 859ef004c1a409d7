// c_outcomes.h alone, as a C++ program that includes only it sees
// it: compiled as C++11 and C++20 with -Wall -Wextra -Werror -pedantic
// (tests/c_api/CMakeLists.txt), and nothing on the include path but
// include/. It must bring in c.h itself.
#include "mxlimit/c_outcomes.h"

// Its functions are noexcept too, and c.h's are declared.
static_assert(noexcept(mxlimit_settle(nullptr, nullptr, 0, nullptr, 0, nullptr,
                                      nullptr, 0, nullptr, 0, nullptr, 0, 0, 0,
                                      nullptr, 0, 0, 0)),
              "c_outcomes.h functions are noexcept");
static_assert(noexcept(mxlimit_version()), "c.h is included");

int MxlimitHeaderCheckOutcomesCxx();

int MxlimitHeaderCheckOutcomesCxx() {
  mxlimit_request_options r = MXLIMIT_REQUEST_OPTIONS_INIT;
  return static_cast<int>(r.struct_size + MXLIMIT_RATELIMIT_MAX);
}
