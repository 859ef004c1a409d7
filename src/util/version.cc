#include "mxlimit/version.h"

namespace mxlimit {

std::string_view LinkedVersion() { return kVersion; }

}  // namespace mxlimit
