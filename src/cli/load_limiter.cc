#include "src/cli/load_limiter.h"

#include <cstdio>
#include <string_view>

#include "mxlimit/config.h"
#include "mxlimit/internal/absl_compat.h"

namespace mxlimit::cli {
namespace {

// Prints `message` line by line, each line prefixed with `prefix` unless
// it already starts with it (the loader's messages carry their position).
void PrintErrors(std::string_view prefix, std::string_view message) {
  while (!message.empty()) {
    const size_t nl = message.find('\n');
    const std::string_view line = message.substr(0, nl);
    const bool positioned = line.substr(0, prefix.size()) == prefix;
    std::fprintf(stderr, "%.*s%s%.*s\n",
                 positioned ? 0 : static_cast<int>(prefix.size()),
                 prefix.data(), positioned ? "" : ": ",
                 static_cast<int>(line.size()), line.data());
    if (nl == std::string_view::npos) break;
    message.remove_prefix(nl + 1);
  }
}

}  // namespace

std::unique_ptr<Limiter> LoadLimiter(const std::string& config_path,
                                     LimiterConfig* config) {
  *config = LimiterConfig();
  // A std::string: the conditional makes one anyway, and a view of that
  // temporary would dangle.
  const std::string name =
      config_path.empty() ? "built-in policies" : config_path;
  if (!config_path.empty()) {
    absl::StatusOr<LimiterConfig> loaded = LoadConfigFile(config_path);
    if (!loaded.ok()) {
      PrintErrors(name, internal::FromAbsl(loaded.status().message()));
      return nullptr;
    }
    *config = *std::move(loaded);
  }
  // The loader checks each field; creating the limiter checks the set as a
  // whole.
  absl::StatusOr<std::unique_ptr<Limiter>> limiter = Limiter::Create(*config);
  if (!limiter.ok()) {
    PrintErrors(name, internal::FromAbsl(limiter.status().message()));
    return nullptr;
  }
  return *std::move(limiter);
}

}  // namespace mxlimit::cli
