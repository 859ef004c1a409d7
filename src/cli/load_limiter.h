// -----------------------------------------------------------------------------
// File: cli/load_limiter.h
// -----------------------------------------------------------------------------
//
// How every subcommand that takes `--config F` builds its Limiter, so they
// all report a bad file the same way: every error on stderr, one per line,
// each `mxlimit <subcommand>: ` then the file name (`F:LINE:COL: message`
// from the loader, `F: message` for the few checks that only the policy set
// as a whole can make, such as the total number of policies).
//
// Example:
//   LimiterConfig config;
//   std::unique_ptr<Limiter> limiter =
//       LoadLimiter("replay", opts.config_path, &config);
//   if (limiter == nullptr) return kExitFinding;

#ifndef MXLIMIT_CLI_LOAD_LIMITER_H_
#define MXLIMIT_CLI_LOAD_LIMITER_H_

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "mxlimit/limiter.h"
#include "mxlimit/options.h"

namespace mxlimit::cli {

// Loads `config_path` (empty: the defaults, i.e. the built-in policies) into
// `*config` and creates a Limiter from it. On failure prints the errors to
// stderr, as `command`'s, and returns nullptr. With `warnings`, also returns
// the loader's warnings, checked against `shards` (0: mxlimitd's default).
std::unique_ptr<Limiter> LoadLimiter(
    std::string_view command, const std::string& config_path,
    LimiterConfig* config, std::vector<std::string>* warnings = nullptr,
    size_t shards = 0);

// Prints `message` line by line as `command`'s errors, each line starting
// with the file `name` unless it already does.
void PrintErrors(std::string_view command, std::string_view name,
                 std::string_view message);

}  // namespace mxlimit::cli

#endif  // MXLIMIT_CLI_LOAD_LIMITER_H_
