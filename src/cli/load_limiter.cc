#include "src/cli/load_limiter.h"

#include <string_view>

#include "absl/strings/str_cat.h"
#include "mxlimit/config.h"
#include "mxlimit/internal/absl_compat.h"
#include "src/cli/output.h"

namespace mxlimit::cli {
namespace {

using internal::ToAbsl;

// Prints `message` line by line as `command`'s errors, each line starting
// with the file `name` unless it already does (the loader's messages carry
// their position).
void PrintErrors(std::string_view command, std::string_view name,
                 std::string_view message) {
  std::string text;
  while (!message.empty()) {
    const size_t nl = message.find('\n');
    const std::string_view line = message.substr(0, nl);
    if (line.substr(0, name.size()) == name) {
      absl::StrAppend(&text, ToAbsl(line), "\n");
    } else {
      absl::StrAppend(&text, ToAbsl(name), ": ", ToAbsl(line), "\n");
    }
    if (nl == std::string_view::npos) break;
    message.remove_prefix(nl + 1);
  }
  PrintError(command, text);
}

}  // namespace

std::unique_ptr<Limiter> LoadLimiter(std::string_view command,
                                     const std::string& config_path,
                                     LimiterConfig* config) {
  *config = LimiterConfig();
  // A std::string: the conditional makes one anyway, and a view of that
  // temporary would dangle.
  const std::string name =
      config_path.empty() ? "built-in policies" : config_path;
  if (!config_path.empty()) {
    absl::StatusOr<LimiterConfig> loaded = LoadConfigFile(config_path);
    if (!loaded.ok()) {
      PrintErrors(command, name, internal::FromAbsl(loaded.status().message()));
      return nullptr;
    }
    *config = *std::move(loaded);
  }
  // The loader checks each field; creating the limiter checks the set as a
  // whole.
  absl::StatusOr<std::unique_ptr<Limiter>> limiter = Limiter::Create(*config);
  if (!limiter.ok()) {
    PrintErrors(command, name, internal::FromAbsl(limiter.status().message()));
    return nullptr;
  }
  return *std::move(limiter);
}

}  // namespace mxlimit::cli
