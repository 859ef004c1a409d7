// -----------------------------------------------------------------------------
// File: config.h
// -----------------------------------------------------------------------------
//
// The YAML policy file. `ParseConfig` turns the text of one file into a
// complete `LimiterConfig` (options.h) or into an error that lists every
// problem in the file at once, one per line, each as
//
//   FILE:LINE:COLUMN: FIELD: got VALUE, expected WHAT
//
// with 1-based line and column of the offending node, so an operator fixes the
// whole file in one pass. A file is applied completely or not at all: there is
// no partial result to fall back on.
//
// The file format, every key with its type and default, and the exact error
// format are documented in docs/config.md; examples/mxlimit.yaml is a complete
// commented file.
//
// This header is all an embedder sees of the loader: it links
// `mxlimit::config`, which uses yaml-cpp internally. Neither this header nor
// the core library includes yaml-cpp, and no yaml-cpp exception escapes.
//
// Example:
//   #include <iostream>
//
//   int main() {
//     absl::StatusOr<mxlimit::LimiterConfig> config =
//         mxlimit::LoadConfigFile("/etc/matrix/mxlimit.yaml");
//     if (!config.ok()) {
//       std::cerr << config.status().message() << "\n";  // one error a line
//       return 1;
//     }
//     // config->policies, ->tables, ->exempt, ->builtin_policies: pass *config
//     // to Limiter::Create (limiter.h).
//   }

#ifndef MXLIMIT_CONFIG_H_
#define MXLIMIT_CONFIG_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "mxlimit/options.h"

namespace mxlimit {

// Largest accepted config text. Real files are a few KiB. The cap exists
// because yaml-cpp's document tree costs up to ~250 bytes of memory per byte of
// pathological input (e.g. "[1,1,1,...]"), so a 1 MiB file already bounds the
// parse at a few hundred MiB at worst; larger inputs (a log file passed by
// mistake, say) are refused before parsing.
inline constexpr size_t kMaxConfigBytes = size_t{1} << 20;

// At most this many errors are listed; a last line says how many more there
// were, so a file of garbage cannot produce an unbounded message.
inline constexpr size_t kMaxConfigErrorsReported = 100;

// Parses a whole config. On failure (`InvalidArgument`) the status message
// holds EVERY error, one per line, sorted by position, each
// "FILE_NAME:LINE:COL: message" naming the field, the value and what was
// expected. Never half-applies: returns a complete `LimiterConfig` or nothing.
//
// An empty file, or one holding only comments, is valid and gives the
// defaults: built-in policies on, default tables, no exemptions, no operator
// policies.
absl::StatusOr<LimiterConfig> ParseConfig(std::string_view yaml_text,
                                          std::string_view file_name);

// What a file is checked against besides its own contents.
struct ConfigCheckOptions {
  // The shard count the config will run with, for the warning about a table
  // capacity below it (which a ShardedLimiter refuses). 0: the default count,
  // which mxlimitd uses; it adapts to the capacities
  // (`ShardedLimiter::DefaultShardCount`), so no capacity is below it.
  size_t shards = 0;
};

// A valid config and what the loader found questionable in it.
struct CheckedConfig {
  LimiterConfig config;
  // Each "FILE_NAME:LINE:COL: warning: message", sorted by position, at most
  // `kMaxConfigErrorsReported` of them (then a count of the rest). A warning
  // never rejects a file: a pattern not in canonical form, a `{placeholder}`
  // no route uses, a trailing '/' no route has, a policy that can never
  // apply (same match, methods, scope and layer as an earlier one, or
  // outranked on every request it may match), a policy outranked on every
  // request of a route it was written for (`PolicySet::Outranked`: this one
  // compiles the policy set, which `ParseConfig` skips), an `exempt.ips`
  // entry covering loopback or private addresses, a table capacity below
  // the shard count. docs/config.md, "Warnings", has them all.
  std::vector<std::string> warnings;
};

// `ParseConfig`, plus the warnings about a valid file.
absl::StatusOr<CheckedConfig> ParseConfigWithWarnings(
    std::string_view yaml_text, std::string_view file_name,
    const ConfigCheckOptions& options = {});

// Reads `path` (at most `kMaxConfigBytes`) and parses it with `path` as the
// file name in messages. Errors reading the file come as "PATH: message" with
// the errno-derived code (`NotFound`, `PermissionDenied`, ...); a file that is
// too large is `InvalidArgument`.
absl::StatusOr<LimiterConfig> LoadConfigFile(const std::string& path);

// `LoadConfigFile`, plus the warnings about a valid file.
absl::StatusOr<CheckedConfig> LoadConfigFileWithWarnings(
    const std::string& path, const ConfigCheckOptions& options = {});

}  // namespace mxlimit

#endif  // MXLIMIT_CONFIG_H_
