// `mxlimit check-config F`: load a policy file the way the limiter would.
// On success: exit 0 and one summary line. On failure: every error as
// `F:LINE:COL: message` on stderr, exit 1.

#include <cstdio>
#include <memory>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "mxlimit/limiter.h"
#include "mxlimit/policy.h"
#include "src/cli/commands.h"
#include "src/cli/load_limiter.h"
#include "src/util/quote.h"

namespace mxlimit::cli {

struct CheckConfigOptions {
  std::string path;
};

namespace {

int RunCheckConfig(const CheckConfigOptions& opts) {
  LimiterConfig config;
  const std::unique_ptr<Limiter> limiter = LoadLimiter(opts.path, &config);
  if (limiter == nullptr) return kExitFinding;
  const TableOptions& t = config.tables;
  const size_t total = limiter->policies().size();
  std::string line = absl::StrCat(
      opts.path, ": OK: ", config.policies.size(), " operator policies, ",
      "built-ins ", config.builtin_policies ? "on" : "off", " (", total,
      " policies in force); tables ip ", t.ip_capacity, " (IPv4 /",
      t.ipv4_prefix, ", IPv6 /", t.ipv6_prefix, "), user ", t.user_capacity,
      "; exempt ", config.exempt.ips.size(), " networks, ",
      config.exempt.users.size(), " users\n");
  // A pattern that is not canonical is accepted in its canonical meaning;
  // say so, since it may not be what its author meant (an r0-only pattern).
  for (const Policy& p : config.policies) {
    for (const std::string& m : p.match) {
      std::string note = PatternCanonicalNote(m);
      if (note.empty()) continue;
      absl::StrAppend(&line, opts.path, ":", p.source_line,
                      ": warning: policy ", internal::QuoteForError(p.name),
                      ": match ", internal::QuoteForError(m), " ", note, "\n");
    }
  }
  std::fwrite(line.data(), 1, line.size(), stdout);
  return kExitOk;
}

}  // namespace

void RegisterCheckConfig(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<CheckConfigOptions>();
  CLI::App* cmd =
      app.add_subcommand("check-config", "Validate a YAML policy file");
  cmd->add_option("file", opts->path, "YAML policy file")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->callback([opts, &exit_code] { exit_code = RunCheckConfig(*opts); });
}

}  // namespace mxlimit::cli
