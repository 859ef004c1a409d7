// c_tiers.h alone, as a C++ program that includes only it sees it: compiled
// as C++11 and C++20 with -Wall -Wextra -Werror -pedantic
// (tests/c_api/CMakeLists.txt), and nothing on the include path but
// include/. It must bring in c.h itself.
#include "mxlimit/c_tiers.h"

// Its functions are noexcept too, and c.h's are declared.
static_assert(noexcept(mxlimit_set_tier(nullptr, nullptr, 0, nullptr, 0, 0,
                                        nullptr)),
              "c_tiers.h functions are noexcept");
static_assert(noexcept(mxlimit_clear_tier(nullptr, nullptr, 0, nullptr)),
              "c_tiers.h functions are noexcept");
static_assert(noexcept(mxlimit_list_tiers(nullptr, nullptr, nullptr)),
              "c_tiers.h functions are noexcept");
static_assert(noexcept(mxlimit_version()), "c.h is included");

int MxlimitHeaderCheckTiersCxx();

int MxlimitHeaderCheckTiersCxx() {
  mxlimit_decision d = MXLIMIT_DECISION_INIT;
  return static_cast<int>(d.struct_size + d.tier_len);
}
