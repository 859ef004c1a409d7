#include "src/cli/load_limiter.h"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "mxlimit/config.h"
#include "mxlimit/internal/absl_compat.h"
#include "src/cli/output.h"

namespace mxlimit::cli {

using internal::ToAbsl;

// The loader's messages carry their position; others get the file name.
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

std::unique_ptr<Limiter> LoadLimiter(std::string_view command,
                                     const std::string& config_path,
                                     LimiterConfig* config,
                                     std::vector<std::string>* warnings,
                                     size_t shards) {
  *config = LimiterConfig();
  // A std::string: the conditional makes one anyway, and a view of that
  // temporary would dangle.
  const std::string name =
      config_path.empty() ? "built-in policies" : config_path;
  if (!config_path.empty()) {
    absl::StatusOr<CheckedConfig> loaded =
        LoadConfigFileWithWarnings(config_path, ConfigCheckOptions{shards});
    if (!loaded.ok()) {
      PrintErrors(command, name, internal::FromAbsl(loaded.status().message()));
      return nullptr;
    }
    *config = std::move(loaded->config);
    if (warnings != nullptr) *warnings = std::move(loaded->warnings);
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
