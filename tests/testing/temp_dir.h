// A fresh scratch directory under the system's temporary directory
// ($TMPDIR, else /tmp), for tests that write files or run servers.

#ifndef MXLIMIT_TESTS_TESTING_TEMP_DIR_H_
#define MXLIMIT_TESTS_TESTING_TEMP_DIR_H_

#include <stdlib.h>

#include <filesystem>
#include <string>
#include <string_view>

namespace mxlimit::testing {

// Creates `<tmp>/<prefix>XXXXXX` (mkdtemp); "" when that fails.
inline std::string MakeTempDir(std::string_view prefix) {
  std::string pattern =
      (std::filesystem::temp_directory_path() / std::string(prefix)).string() +
      "XXXXXX";
  return mkdtemp(pattern.data()) != nullptr ? pattern : std::string();
}

}  // namespace mxlimit::testing

#endif  // MXLIMIT_TESTS_TESTING_TEMP_DIR_H_
